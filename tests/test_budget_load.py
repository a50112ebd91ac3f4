"""The same score whatever the machine's load (issue 37): budgets count the worker's CPU time.

A week-2 notebook whose Pocket is correct but slow (pure Python per sample, E_in recomputed
after every update: ~1.5 s of CPU time a fit, once in the notebook and once in the task-3
accuracies test) is graded idle and beside CPU hogs (two spinning processes per core),
with one grader process and with two. The limits are just above what the notebook costs
(a call 2.5 s, a cell 3 s), so that on wall-clock limits the hogs push it over them: a
dropped cell, then "does not define `accuracies`" and a task-3 test lost, as the issue
saw at a deadline rush. On CPU time every grading gives full marks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution import Limits
from autograder.grading.parallel import grade_parallel
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission
from tests.helpers import cpu_hogs

pytestmark = pytest.mark.sandbox

SLOW = Path(__file__).parent / "fixtures" / "week02" / "slow_pure_python_pocket.ipynb"
LIMITS = Limits(cell_timeout_s=3, call_timeout_s=2.5, submission_timeout_s=20, tests_timeout_s=20)


def scores(results: list[SubmissionResult]) -> list[list[tuple[str, float, str]]]:
    return [[(t.name, t.score, t.output) for t in result.tests] for result in results]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_slow_but_correct_notebook_scores_the_same_idle_and_beside_cpu_hogs(course: Course, jobs: int) -> None:
    week = course.week("week02")
    batch = [Submission(origin=f"slow-{i}", key=f"slow-{i}", content=SLOW.read_bytes(), seed=1) for i in range(2)]
    idle = grade_parallel(week, batch, jobs=jobs, limits=LIMITS)
    with cpu_hogs():
        busy = grade_parallel(week, batch, jobs=jobs, limits=LIMITS)
    for result in idle + busy:
        assert result.status is Status.GRADED and result.messages == [], (result.key, result.messages)
        assert all(t.score == t.max_score for t in result.tests), [t.output for t in result.tests if t.score < t.max_score]
    assert scores(busy) == scores(idle)
