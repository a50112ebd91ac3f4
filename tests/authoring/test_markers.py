"""Solution markers (autograder/authoring/markers.py): a malformed, unclosed or nested
marker is refused with its file, cell and line, by the student and the solution build alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.exceptions import MarkerError
from autograder.generate import solution_notebook, student_notebook
from tests.helpers import numbered_notebook


@pytest.mark.parametrize(
    ("source", "line", "says"),
    [
        pytest.param("x = 1\n### BEGIN SOLUTION\ny = 2", 2, "never closed", id="unclosed"),
        pytest.param("x = 1\n### END SOLUTION", 2, "without a ### BEGIN SOLUTION", id="end-without-begin"),
        pytest.param(
            "### BEGIN SOLUTION\nx = 1\n### BEGIN SOLUTION\ny = 2\n### END SOLUTION\n### END SOLUTION",
            3,
            "may not nest",
            id="nested",
        ),
        pytest.param("# BEGIN SOLUTION\nx = 1\n# END SOLUTION", 1, "malformed", id="one-hash"),
        pytest.param("### BEGIN SOLUTION\nx = 1\n## END SOLUTION", 3, "malformed", id="two-hashes"),
        pytest.param("#### BEGIN SOLUTION\nx = 1", 1, "malformed", id="four-hashes"),
        pytest.param("### begin solution\nx = 1\n### end solution", 1, "malformed", id="lower-case"),
        pytest.param("### BEGIN SOLUTIONS\nx = 1\n### END SOLUTIONS", 1, "malformed", id="plural"),
        pytest.param("###BEGIN SOLUTION\nx = 1\n###END SOLUTION", 1, "malformed", id="no-space"),
        pytest.param("### BEGIN_SOLUTION\nx = 1", 1, "malformed", id="underscore"),
        pytest.param("### BEGIN SOLUTION\nx = 1\n### END SOLUTON", 3, "malformed", id="misspelt-end"),
        pytest.param("    # Begin Soltuion\nx = 1", 1, "malformed", id="misspelt-begin"),
        pytest.param("x = 1  ### BEGIN SOLUTION\ny = 2\n### END SOLUTION", 1, "malformed", id="code-before"),
        pytest.param("### BEGIN SOLUTION\ny = 2\n### END SOLUTION  # done", 3, "malformed", id="comment-after"),
        pytest.param("BEGIN SOLUTION\nx = 1\nEND SOLUTION", 1, "malformed", id="capitals-without-hash"),
        pytest.param("x = 1\n# Begin Solution here", 2, "malformed", id="comment"),
        pytest.param(
            "def f():\n    ### BEGIN SOLUTION\n    return 1\n### END SOLUTION", 4, "indented differently", id="indent"
        ),
    ],
)
def test_bad_markers_are_refused_with_file_cell_and_line(source: str, line: int, says: str) -> None:
    nb = numbered_notebook(new_markdown_cell("## Task 1"), new_code_cell(source))
    for build in (student_notebook, solution_notebook):
        with pytest.raises(MarkerError, match=rf"^src/w\.ipynb: cell 2, line {line}: .*{says}"):
            build(nb, path=Path("src/w.ipynb"))


def test_words_that_merely_resemble_markers_are_not_refused() -> None:
    source = ("the_end_solution = 1\nprint('we begin, solution follows')  # fine\nprint('the end solution')\n"
              "# end of the solving loop\n# begin solving")
    assert student_notebook(numbered_notebook(new_code_cell(source)), path=Path("w.ipynb")).cells[0].source == source


def test_marker_text_outside_code_cells_is_refused() -> None:
    nb = numbered_notebook(new_code_cell("x = 1"), new_markdown_cell("Answer:\n### BEGIN SOLUTION\n42\n### END SOLUTION"))
    with pytest.raises(MarkerError, match=r"cell 2, line 2: solution markers work only in code cells"):
        student_notebook(nb, path=Path("w.ipynb"))

