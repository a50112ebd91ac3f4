"""The student and solution pipelines (autograder/generate/pipeline.py): a solution region
becomes a stub in the student notebook and plain code in the solution."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from autograder.generate import solution_notebook, student_notebook
from tests.helpers import numbered_notebook

STUB = "# your code here\nraise NotImplementedError()"


def code_cell_source(cell_source: str, *, solution: bool = False) -> str:
    nb = numbered_notebook(new_code_cell(cell_source))
    build = solution_notebook if solution else student_notebook
    return build(nb, path=Path("w.ipynb")).cells[0].source


@pytest.mark.parametrize(
    ("source", "student", "solution"),
    [
        pytest.param("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", STUB, "x = 1", id="whole-cell"),
        pytest.param(
            "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",
            "def f(x):\n    # your code here\n    raise NotImplementedError()",
            "def f(x):\n    return x",
            id="indented",
        ),
        pytest.param(
            "if True:\n\t### BEGIN SOLUTION\n\ty = 2\n\t### END SOLUTION\nz = 3",
            "if True:\n\t# your code here\n\traise NotImplementedError()\nz = 3",
            "if True:\n\ty = 2\nz = 3",
            id="tab-indented",
        ),
        pytest.param(
            "a = 0\n### BEGIN SOLUTION\nb = 1\n### END SOLUTION\nc = 2\n  ### BEGIN SOLUTION\n  d = 3\n  ### END SOLUTION",
            f"a = 0\n{STUB}\nc = 2\n  # your code here\n  raise NotImplementedError()",
            "a = 0\nb = 1\nc = 2\n  d = 3",
            id="two-regions",
        ),
        pytest.param("### BEGIN SOLUTION\n### END SOLUTION", STUB, "", id="empty-region"),
        pytest.param("print('no regions')", "print('no regions')", "print('no regions')", id="no-region"),
    ],
)
def test_regions_become_stubs_in_the_student_notebook_and_plain_code_in_the_solution(
    source: str, student: str, solution: str
) -> None:
    assert code_cell_source(source) == student
    assert code_cell_source(source, solution=True) == solution

