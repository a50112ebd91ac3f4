"""A result's tests follow the week's tasks, whatever files the tests are written in.

Test files are collected in name order: here task 2's checks live in ``test_a_fit.py`` and
task 1's in ``test_b_basics.py``, so file order would list task 2 first.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Sandboxed
from autograder.grading.grader import grade
from autograder.submission import Submission

pytestmark = pytest.mark.sandbox

TEST = '''

@pytest.mark.task({task})
@pytest.mark.points(5)
def test_{name}(student):
    """{name} works"""
    assert student.{name}(1) == {expected}
'''


def test_a_results_tests_are_in_task_order_not_file_order(tmp_path: Path) -> None:
    week = tmp_path / "source" / "week09"
    (week / "tests").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Week 9: Order (20 points)"),
                nbformat.v4.new_markdown_cell("## Task 1 (10 points): basics"),
                nbformat.v4.new_code_cell("def one(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\n\n"
                                          "def two(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
                nbformat.v4.new_markdown_cell("## Task 2 (10 points): fit"),
                nbformat.v4.new_code_cell("def three(x):\n    ### BEGIN SOLUTION\n    return 3 * x\n    ### END SOLUTION\n"
                                          "\n\ndef four(x):\n    ### BEGIN SOLUTION\n    return 4 * x\n"
                                          "    ### END SOLUTION")]
    content = nbformat.writes(nb).encode()
    (week / "week09.ipynb").write_bytes(content)
    (week / "tests" / "test_a_fit.py").write_text("import pytest\n" + TEST.format(task=2, name="three", expected=3)
                                                  + TEST.format(task=2, name="four", expected=4))
    (week / "tests" / "test_b_basics.py").write_text("import pytest\n" + TEST.format(task=1, name="one", expected=1)
                                                     + TEST.format(task=1, name="two", expected=2))
    [result] = grade(Course(tmp_path).week("week09"), [Submission(origin="r", key="r", content=content, seed=1)],
                     isolation=Sandboxed())
    assert result.score == 20, result.messages
    assert [(t.task, t.name) for t in result.tests] == [(1, "test_one"), (1, "test_two"), (2, "test_three"),
                                                        (2, "test_four")]
