"""A crash in the student's code tells the student where: the code cell, the line number
and that line's text from the grader's own copy of the notebook, never the exception's
message (which could repeat a hidden test's inputs). The worker only names a position;
one the grader's copy does not have is not shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course import Course
from autograder.exceptions import StudentCodeError
from autograder.execution import Sandboxed, ZygoteSlot
from autograder.grading.grader import grade
from autograder.grading.judge import describe_failure
from autograder.notebook import MAX_LINE_CHARS, cell_line
from autograder.submission import Submission
from autograder.testing.student import check_reply
from tests.helpers import notebook_bytes, throwaway_course

SECRET = [7.25, -3.5, 1.125]  # the hidden test's inputs: never in the feedback
TESTS = f'''import pytest


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_normalise_sums_to_one(student):
    """normalise returns weights that sum to one"""
    assert abs(sum(student.normalise({SECRET!r})) - 1) < 1e-9, "the weights should sum to one"


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_invert_inverts(student):
    """invert returns the inverse"""
    assert student.invert([[2.0, 0.0], [0.0, 4.0]]) == [[0.5, 0.0], [0.0, 0.25]], "not the inverse"
'''
# the student's notebook: the message of normalise's error would carry the hidden inputs;
# invert's error is raised inside numpy, called from the student's line 4 of cell 3
STUDENT = [
    "import numpy as np",
    "\n\ndef normalise(weights):\n    total = sum(weights)\n    raise ValueError(f'cannot normalise {weights}')",
    "def invert(matrix):\n    m = np.asarray(matrix)\n    m = m - m  # a slip: the zero matrix\n"
    "    return np.linalg.inv(m).tolist()",
    "normalise([0.5, 0.5])",
]


@pytest.fixture
def week(tmp_path: Path) -> Course:
    cells = [("markdown", "# Week 8: Crashes (10 points)"),
             ("markdown", "## Task 1 (10 points): weights\n\nWrite `normalise` and `invert`."),
             ("code", "def normalise(w):\n    ### BEGIN SOLUTION\n    return [x / sum(w) for x in w]\n    ### END SOLUTION")]
    return throwaway_course(tmp_path, "week08", cells, "test_week08_crashes.py", TESTS)


def test_a_crash_is_shown_where_it_happened_never_with_its_message(week: Course, slot: ZygoteSlot) -> None:
    [result] = grade(week.week("week08"), [Submission(origin="s.ipynb", key="s", content=notebook_bytes(*STUDENT))],
                     isolation=Sandboxed(slot=slot))
    outputs = {t.name: t.output for t in result.tests}
    assert outputs["test_normalise_sums_to_one"].endswith(
        "failed (your code raised ValueError at code cell 2, line 3: "
        "`raise ValueError(f'cannot normalise {weights}')`)"), outputs  # leading blank lines are not counted
    # raised inside numpy: the innermost frame in the student's cells is named, not the library's
    assert outputs["test_invert_inverts"].endswith(
        "failed (your code raised an exception at code cell 3, line 4: `return np.linalg.inv(m).tolist()`)"), outputs
    # the cell that raised while the notebook ran: its own message (no hidden data then) and where
    assert result.messages == ["code cell 4 (`normalise([0.5, 0.5])`) raised ValueError: cannot normalise "
                               "[0.5, 0.5] at code cell 2, line 3: `raise ValueError(f'cannot normalise {weights}')`"]
    text = "\n".join([*outputs.values(), *result.messages])
    assert "7.25" not in text and "Singular matrix" not in text


CELLS = ["x = 1", "\n \ndef f(a):\n    return a / 0\n", "y = '" + "z" * 200 + "'"]


@pytest.mark.parametrize(("where", "expected"), [
    ([2, 2], (2, 2, "return a / 0")),  # counted as IPython counts: the two blank lines first are dropped
    ([1, 1], (1, 1, "x = 1")),
    ([3, 1], (3, 1, "y = '" + "z" * (MAX_LINE_CHARS - 8) + "...")),
    ([0, 1], None), ([4, 1], None), ([2, 0], None), ([2, 3], None), ([1, -1], None),
    ([True, 1], None), ([1.0, 1], None), ([1, 1, 1], None), ((1, 1), None), ("1,1", None), (None, None),
])
def test_only_a_line_the_graders_copy_has_is_quoted(where: object, expected: tuple[int, int, str] | None) -> None:
    assert cell_line(CELLS, where) == expected
    if expected is not None:
        assert len(expected[2]) <= MAX_LINE_CHARS


def test_a_forged_position_shows_no_location_and_never_the_message() -> None:
    for where in ([9, 1], [2, 99], "cell 2", [2, "1"]):
        checked = check_reply({"op": "call", "obj": 1}, {"ok": False, "kind": "exception", "ename": "ValueError",
                                                         "evalue": "X=[7.25]", "where": where})
        error = StudentCodeError(checked["ename"], checked["evalue"], checked["builtin"], where=checked["where"])
        assert describe_failure(error, cells=CELLS).reason == "your code raised ValueError"
    located = StudentCodeError("ValueError", "X=[7.25]", where=[2, 2])
    assert describe_failure(located, cells=CELLS).reason == \
        "your code raised ValueError at code cell 2, line 2: `return a / 0`"
