"""The batch's summary (autograder/report/summary.py): statuses counted, graded scores
averaged, timeouts, pending and stale marks counted, and each test's commonest failures."""

from __future__ import annotations

import json

import pytest

from autograder import results as r
from autograder.report.summary import summarize
from tests.report.samples import seven_results


@pytest.fixture
def batch() -> list[r.SubmissionResult]:
    return seven_results()


def test_summary_counts_statuses_and_means_graded_scores(batch: list[r.SubmissionResult]) -> None:
    summary = summarize(batch)
    assert json.loads(json.dumps(summary)) == summary
    assert summary["submissions"] == 7
    assert summary["status"] == {"graded": 3, "not_attempted": 1, "error": 1, "timeout": 1, "not_submitted": 1,
                                 "wrong_week": 0}
    graded = [b.score for b in batch if b.status is r.Status.GRADED]
    assert summary["mean_score"] == round(sum(graded) / 3, 4) and summary["max_score"] == 20.0
    assert summarize([])["mean_score"] is None


def test_summary_counts_timeouts_pending_and_stale_marks(batch: list[r.SubmissionResult]) -> None:
    from autograder.exceptions import StudentTimeout
    from autograder.grading.judge import describe_failure

    assert describe_failure(StudentTimeout(10)).timed_out and not describe_failure(AssertionError("x")).timed_out
    batch[0].tests[0].timed_out = batch[0].tests[1].timed_out = True  # one submission, two tests hit the limit
    batch[2].task(3).stale, batch[2].task(3).marked = True, False
    summary = summarize(batch)
    assert summary["timed_out_tests"] == 2
    assert summary["timed_out_submissions"] == 2  # 101's calls and 106's notebook
    assert summary["stale_marks"] == 1
    assert summary["pending_marking"] == 5  # all but 101 (marked) and 107 (nothing handed in); 103's is stale


def test_per_test_breakdown_names_the_commonest_failures(batch: list[r.SubmissionResult]) -> None:
    from autograder.report.summary import test_breakdown

    by_name = {b.name: b for b in test_breakdown(batch)}
    errors = by_name["test_errors"]
    assert (errors.task, errors.passed, errors.ran) == (1, 1, 4)
    assert errors.failures == [("errors_ has one entry per epoch\nerrors_ is shorter than n_iter", 3)]
    assert by_name["test_fit"].failures == []
