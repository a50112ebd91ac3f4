"""A week whose hidden suite is one test grades every submission of a batch, not only the first.

The grading loop keeps module- and session-scoped fixtures up between submissions by naming
the next item to pytest's teardown; with a single item that next item is the item itself,
which kept its function-scoped fixtures (``student``) up, and every later submission failed
with a KeyError when pytest set the same item up again.
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

SUITE = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(10)
def test_add_one(student):
    """add_one(1) is 2"""
    assert student.add_one(1) == 2, "add_one(1) should be 2"
'''


def _notebook(body: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Week 9: One test (10 points)"),
                nbformat.v4.new_markdown_cell("## Task 1 (10 points): add one"),
                nbformat.v4.new_code_cell(f"def add_one(x):\n    ### BEGIN SOLUTION\n    {body}\n    ### END SOLUTION")]
    return nbformat.writes(nb).encode()


@pytest.fixture
def one_test_course(tmp_path: Path) -> Course:
    week = tmp_path / "source" / "week09"
    (week / "tests").mkdir(parents=True)
    (week / "week09.ipynb").write_bytes(_notebook("return x + 1"))
    (week / "tests" / "test_week09_one.py").write_text(SUITE)
    return Course(tmp_path)


def test_every_submission_of_a_batch_is_graded_when_the_suite_is_one_test(one_test_course: Course) -> None:
    bodies = {"right-1": "return x + 1", "wrong": "return x - 1", "right-2": "return 1 + x"}
    subs = [Submission(origin=k, key=k, content=_notebook(b), seed=1) for k, b in bodies.items()]
    results = {r.key: r for r in grade(one_test_course.week("week09"), subs, isolation=Sandboxed())}
    assert {k: r.score for k, r in results.items()} == {"right-1": 10.0, "wrong": 0.0, "right-2": 10.0}, \
        {k: r.messages[:2] for k, r in results.items()}
