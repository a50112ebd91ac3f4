"""The issue-21 attack notebooks kept as fixtures of weeks 4 and 6, graded through the real
sandboxed pipeline: what their score cannot show.

A forged answer of many dimensions must not have its shape repeated in the feedback (a
shape of 31 dimensions is a hundred bytes of the worker's choosing per failing check), and
a lazily generated tree of huge leaves must fail the building tests quickly, on the
grader's bound, without the grader widening what the worker sent.
"""

from __future__ import annotations

import resource
from pathlib import Path

from autograder.course import Course
from autograder.execution import Sandboxed, ZygoteSlot
from autograder.grading.grader import grade
from autograder.submission import Submission

FIXTURES = Path(__file__).parent / "fixtures"


def graded_alone(course: Course, slot: ZygoteSlot, week: str, name: str):
    content = (FIXTURES / week / name).read_bytes()
    [result] = grade(course.week(week), [Submission(origin=name, key=Path(name).stem, content=content, seed=0)],
                     isolation=Sandboxed(slot=slot))
    return result


def test_a_forged_shape_is_never_repeated_in_feedback(course: Course, slot: ZygoteSlot):
    result = graded_alone(course, slot, "week06", "attack_hinge_many_dimensions.ipynb")
    hinge = next(t for t in result.tests if t.name == "test_hinge_loss_elementwise")
    assert hinge.score == 0 and "(2, 4)" in hinge.output, hinge.output  # the shape expected is said
    feedback = "\n".join([*(t.output for t in result.tests), *result.messages])
    assert "1, 1, 1" not in feedback  # the shape returned is not


def test_a_lazy_tree_of_huge_leaves_costs_the_grader_nothing(course: Course, slot: ZygoteSlot):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = graded_alone(course, slot, "week04", "attack_lazy_tree_huge_leaves.ipynb")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    task2 = next(t for t in result.tasks if t.task == 2)
    assert task2.score == 0
    rules = next(t for t in result.tests if t.name == "test_building_rules")
    assert "more indices in all than X has rows" in rules.output, rules.output
    # each of the 64 leaves answers 2 M items; widened and joined they took ~3 GB
    assert grown_mb < 500, grown_mb
