"""A JSON-safe summary of a batch, for the CLI to print and the report to show."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from autograder.results import Status, SubmissionResult


def summarize(results: Sequence[SubmissionResult]) -> dict[str, Any]:
    """Counts per status (every status present, zeros included) and score statistics.

    Score statistics cover submissions with status ``graded`` only: the others scored
    nothing the autograder could measure, and would drag the mean towards zero.
    """
    graded = [r.score for r in results if r.status is Status.GRADED]
    return {
        "submissions": len(results),
        "status": {s.value: sum(r.status is s for r in results) for s in Status},
        "max_score": max((r.max_score for r in results), default=0.0),
        "mean_score": round(statistics.fmean(graded), 4) if graded else None,
        "median_score": round(statistics.median(graded), 4) if graded else None,
    }
