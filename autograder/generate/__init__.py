"""``autograder generate``: source notebooks -> student and solution notebooks.

The command line calls ``generate_course``; everything else is reachable for tests and
for other tools (``student_notebook``/``solution_notebook`` are pure transforms).
"""

from autograder.generate.pipeline import SOLUTION_STEPS, STUDENT_STEPS, solution_notebook, student_notebook
from autograder.generate.week import Difference, generate_course, generate_week, generate_weeks

__all__ = [
    "SOLUTION_STEPS",
    "STUDENT_STEPS",
    "Difference",
    "generate_course",
    "generate_week",
    "generate_weeks",
    "solution_notebook",
    "student_notebook",
]
