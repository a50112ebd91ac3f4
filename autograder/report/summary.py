"""A JSON-safe summary of a batch, for the CLI to print and the report to show."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autograder.results import Status, SubmissionResult


def summarize(results: Sequence[SubmissionResult]) -> dict[str, Any]:
    """Counts per status (every status present, zeros included) and score statistics.

    Score statistics cover submissions with status ``graded`` only: the others scored
    nothing the autograder could measure, and would drag the mean towards zero. A graded
    submission's hand-marked points not marked yet count as 0 in them (its score so far);
    ``graded_pending`` counts those submissions, so the report can say so.
    """
    graded = [r.score for r in results if r.status is Status.GRADED]
    return {
        "submissions": len(results),
        "status": {s.value: sum(r.status is s for r in results) for s in Status},
        "max_score": max((r.max_score for r in results), default=0.0),
        "mean_score": round(statistics.fmean(graded), 4) if graded else None,
        "median_score": round(statistics.median(graded), 4) if graded else None,
        "graded_pending": sum(bool(r.pending_points) for r in results if r.status is Status.GRADED),
        # calls that ran past their limit, and the submissions with any (notebook timeouts included)
        "timed_out_tests": sum(t.timed_out for r in results for t in r.tests),
        "timed_out_submissions": sum(r.status is Status.TIMEOUT or any(t.timed_out for t in r.tests) for r in results),
        "pending_marking": sum(bool(r.pending_points) for r in results if r.status is not Status.NOT_SUBMITTED),
        "stale_marks": sum(t.stale for r in results for t in r.tasks),
    }


@dataclass(frozen=True)
class TestBreakdown:
    """One hidden test across the batch: how many passed, and the commonest failure messages."""

    name: str
    task: int
    passed: int
    ran: int
    timeouts: int
    failures: list[tuple[str, int]]  # (feedback text, how many submissions got it), commonest first

    @property
    def percent(self) -> float:
        """The pass rate, 0 to 100."""
        return 100 * self.passed / self.ran if self.ran else 0.0


def test_breakdown(results: Sequence[SubmissionResult], *, top: int = 3) -> list[TestBreakdown]:
    """Per hidden test, in task order: pass rate and the ``top`` commonest failure messages."""
    runs: dict[str, list[Any]] = {}
    for result in results:
        for test in result.tests:
            runs.setdefault(test.name, []).append(test)
    out = []
    for name, tests in sorted(runs.items(), key=lambda item: (item[1][0].task, item[0])):
        failed = Counter(t.output or "failed" for t in tests if not t.passed)
        out.append(TestBreakdown(name, tests[0].task, sum(t.passed for t in tests), len(tests),
                                 sum(t.timed_out for t in tests), failed.most_common(top)))
    return out
