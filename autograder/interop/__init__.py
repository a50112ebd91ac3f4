"""Interop with nbgrader and otter-grader: import their notebooks, export weeks to them,
and write grades in their spreadsheet formats. Neither tool is needed to grade."""

from autograder.interop.grades import to_nbgrader_grades_csv, to_otter_final_grades_csv
from autograder.interop.nbgrader_export import export_nbgrader
from autograder.interop.nbgrader_import import import_nbgrader
from autograder.interop.otter_export import export_otter
from autograder.interop.otter_import import import_otter

__all__ = [
    "export_nbgrader",
    "export_otter",
    "import_nbgrader",
    "import_otter",
    "to_nbgrader_grades_csv",
    "to_otter_final_grades_csv",
]
