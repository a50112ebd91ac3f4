"""The throwaway courses and audit.toml texts the audit's tests share (tests/audit/):
a week of one function with one weak test, and a week of two tasks where a task-2 test also
runs task 1's code."""

from __future__ import annotations

from pathlib import Path

from autograder.course import Course
from tests.helpers import throwaway_course

# --- a throwaway course: one function, one weak test -------------------------------------------

NOTEBOOK_CELLS = [
    ("markdown", "# Week 8: Audit drill (10 points)"),
    ("markdown", "## Task 1 (10 points): add one\n\nWrite `add_one(x)`: x plus one."),
    # code outside the markers (SCALE, the def line) is the handout: never mutated
    ("code", "SCALE = 2\n\n\ndef add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"),
]
# kills x - 1 and x + 0, but not x + 2: the survivor the audit must report
WEAK_TEST = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(10)
def test_add_one_is_positive_on_zero(student):
    """add_one(0) is positive"""
    assert student.add_one(0) > 0, "add_one(0) should be positive"


@pytest.mark.task(1)
@pytest.mark.points(0)
def test_add_one_returns_a_number(student):
    """add_one returns a number"""
    assert isinstance(student.add_one(1), (int, float)), "add_one should return a number"
'''
ENTRY = '''[[equivalent]]
task = 1
operator = "constant"
line = "return x + 1"
mutant = "return x + 2"
reason = "a drill: the test only asks for a positive number"
'''
STALE = '''
[[equivalent]]
task = 1
operator = "drop"
line = "x = x * 3"
mutant = "pass"
reason = "a line the notebook no longer has"

[[equivalent]]
task = 1
operator = "arithmetic"
line = "return x + 1"
mutant = "return x - 1"
reason = "wrongly judged equivalent: the test kills it"
'''


BUILDS_ON = '[[builds_on]]\ntask = 2\nuses = 1\nreason = "task 2 doubles what task 1 adds (the instructions say so)"\n'


# --- a throwaway course of two tasks, where a task-2 test also runs task 1's code --------------

LONG = "return 2 * x  # twice x: this comment makes the line longer than a terminal's eighty columns"
CHAIN_CELLS = [
    ("markdown", "# Week 9: Blame drill (20 points)"),
    ("markdown", "## Task 1 (10 points): add one\n\nWrite `add_one(x)`: x plus one."),
    ("code", "def add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"),
    ("markdown", "## Task 2 (10 points): double\n\nWrite `double(x)`: twice x."),
    ("code", f"def double(x):\n    ### BEGIN SOLUTION\n    {LONG}\n    ### END SOLUTION"),
]
# add_one(2) >= 3 through double: x - 1 and x + 0 lose task 2's points, x + 2 does not;
# double(3) > 3 lets 3 * x survive (a long line: its entry must paste as printed)
CHAIN_TESTS = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(10)
def test_add_one(student):
    """add_one(0) is 1"""
    assert student.add_one(0) == 1, "add_one(0) should be 1"


@pytest.mark.task(2)
@pytest.mark.points(5)
def test_double_grows(student):
    """double(3) is more than 3"""
    assert student.double(3) > 3, "double(3) should be more than 3"


@pytest.mark.task(2)
@pytest.mark.points(5)
def test_double_of_add_one(student):
    """double(add_one(2)) is at least 6"""
    assert student.double(student.add_one(2)) >= 6, "double(add_one(2)) should be at least 6"
'''
CHAIN_TOML = f'''{BUILDS_ON}
[[builds_on]]
task = 1
uses = 2
reason = "declared, but no mutant of task 2 costs task 1 a point"

[[equivalent]]
task = 2
operator = "constant"
line = "{LONG}"
mutant = "{LONG.replace("2 * x", "3 * x")}"
reason = "a drill: the test only asks for more than x"
'''



def drill_course(root: Path) -> Course:
    """The one-function week under ``root``: week08, ``NOTEBOOK_CELLS`` and ``WEAK_TEST``."""
    return throwaway_course(root, "week08", NOTEBOOK_CELLS, "test_week08.py", WEAK_TEST)
