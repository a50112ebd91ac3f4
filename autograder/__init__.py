"""ml-autograder: turn reference notebooks into assignments and grade what students hand in.

Data flows one way: parse (sources, moodle), generate (generate), execute (execution,
worker), judge (testing + grading), report (formats, report, moodle_ws). Imports run down
the floors of pyproject.toml's [tool.importlinter] (docs/ARCHITECTURE.md).
"""

__version__ = "0.1.0"
