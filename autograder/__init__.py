"""ml-autograder: turn reference notebooks into assignments and grade what students hand in.

Data flows one way: parse (sources), generate (generate), execute (worker), judge
(testing + grading), report (formats, moodle, report).
"""

__version__ = "0.1.0"
