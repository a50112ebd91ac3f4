"""The grading API: a week and some submissions in, one result per submission out.

The CLI and the Dask tasks call ``grade``; it owns one pytest session (hidden tests are
collected once per batch). Where the submissions' code runs is the caller's explicit
choice: ``Sandboxed`` (one warm zygote for the session) or, for trusted notebooks only,
``InProcess`` (see ``autograder.execution.isolation``).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable

import pytest

from autograder.course import Week
from autograder.exceptions import CourseError
from autograder.execution import Isolation
from autograder.grading.loop import GradingLoop, OnResult
from autograder.grading.watch import Watch
from autograder.results import SubmissionResult
from autograder.submission import Submission
from autograder.testing.hidden import pytest_args, read_afresh


def grade(
    week: Week,
    submissions: Iterable[Submission],
    *,
    isolation: Isolation,
    on_result: OnResult | None = None,
    watch: Watch | None = None,
) -> list[SubmissionResult]:
    """Grade ``submissions`` in order, their code run as ``isolation`` says; ``on_result``
    sees each result as soon as it exists. ``watch`` is told each step (the notebook's run,
    each test) with its budget: a grader process passes one its parent enforces
    (``autograder.grading.pool``); called here without one, the grader's own work in a
    test is bounded only by the reply cap and this process's memory limit."""
    results: list[SubmissionResult] = []

    def collect(result: SubmissionResult) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    captured = io.StringIO()
    helpers = tuple((relative, week.source_dir / relative) for relative in week.files.helpers)
    with isolation.session(week.data_dir, helpers=helpers, preload=week.grading.preload) as runs:
        loop = GradingLoop(week, submissions, collect, runs, watch)
        with read_afresh(week.tests_dir), contextlib.redirect_stdout(captured):
            # pytest's capture would spool a test's output to a file, then read it all into
            # memory: the loop sends it to /dev/null instead (``hidden.silenced``)
            code = pytest.main(pytest_args(week.tests_dir, capture=False), plugins=[loop])
    if loop.error is not None:
        raise loop.error
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise CourseError(f"grading {week.name} stopped (pytest exit code {int(code)}): {captured.getvalue()[-2000:]}")
    return results
