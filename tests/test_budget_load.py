"""The same score whatever the machine's load (issue 37): budgets count the worker's CPU time.

Two slow-but-correct kinds of notebook are each graded ten times idle and ten times beside
CPU hogs (two spinning processes per core), with one grader process and with two: one batch
of ten copies (ten students, the same seed) per condition, so the ten share one pool start.

* ``week02/slow_pure_python_pocket.ipynb``: a correct Pocket in pure Python per sample that
  recomputes E_in after every update (~0.75 s of CPU a fit, once in the notebook and once in
  the task-3 accuracies test).
* ``week03/slow_unvectorised_gradient_descent.ipynb``: a correct logistic regression whose
  gradient walks the samples and features one by one in plain Python, so every step of
  gradient descent is unvectorised (0.065 s of CPU a 1000-step call on the tests' 50
  samples, 0.25 s the notebook's one-vs-all cell).

Each kind's limits are about twice what its costliest cell and call need, so that on
wall-clock limits the hogs push them over: with the worker's meter counting wall time
instead (a local patch, benchmarks/README.md), every loaded grading had a cell stopped and
skipped and lost points (the Pocket's skipped cell defines `accuracies`: a task-3 test
lost), as the issue saw at a deadline rush. On CPU time every grading gives full marks and
the same feedback, line for line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution import Limits
from autograder.grading.parallel import grade_parallel
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission
from tests.helpers import cpu_hogs

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).parent / "fixtures"
COPIES = 10


@dataclass(frozen=True)
class SlowKind:
    """A slow-but-correct notebook, its week, and limits just above what it needs."""

    week: str
    notebook: Path
    limits: Limits

    def batch(self) -> list[Submission]:
        """Ten students handing in this notebook, all graded on the same hidden data (seed 1)."""
        content = self.notebook.read_bytes()
        return [Submission(origin=f"{self.notebook.stem}-{i}", key=f"{self.notebook.stem}-{i}", content=content, seed=1)
                for i in range(COPIES)]


KINDS = {
    "pure_python_pocket": SlowKind(
        "week02", FIXTURES / "week02" / "slow_pure_python_pocket.ipynb",
        Limits(cell_timeout_s=1.5, call_timeout_s=1.25, submission_timeout_s=20, tests_timeout_s=20)),
    "unvectorised_gradient_descent": SlowKind(
        "week03", FIXTURES / "week03" / "slow_unvectorised_gradient_descent.ipynb",
        Limits(cell_timeout_s=0.5, call_timeout_s=0.12, submission_timeout_s=20, tests_timeout_s=20)),
}


def feedback(result: SubmissionResult) -> list[tuple[str, float, str]]:
    """What a student reads of each hidden test: its name, score and message."""
    return [(t.name, t.score, t.output) for t in result.tests]


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_slow_but_correct_notebook_scores_the_same_idle_and_beside_cpu_hogs(course: Course, kind: str, jobs: int) -> None:
    slow = KINDS[kind]
    week = course.week(slow.week)
    idle = grade_parallel(week, slow.batch(), jobs=jobs, limits=slow.limits)
    with cpu_hogs():
        busy = grade_parallel(week, slow.batch(), jobs=jobs, limits=slow.limits)
    for result in idle + busy:
        assert result.status is Status.GRADED and result.messages == [], (result.key, result.messages)
        assert all(t.score == t.max_score for t in result.tests), (result.key, [t.output for t in result.tests if t.score < t.max_score])
    assert len(idle) == len(busy) == COPIES
    assert all(feedback(result) == feedback(idle[0]) for result in idle + busy)
