"""The grading API: a week and some submissions in, one result per submission out.

The CLI and the Dask tasks call ``grade``; it owns one pytest session (hidden tests are
collected once per batch) and one warm zygote.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterable

import pytest

from autograder.course import Week
from autograder.exceptions import CourseError
from autograder.execution.run import ZygoteSlot
from autograder.execution.sandbox import Limits
from autograder.grading.loop import GradingLoop, OnResult
from autograder.results import SubmissionResult
from autograder.submission import Submission
from autograder.testing.hidden import pytest_args, read_afresh

log = logging.getLogger(__name__)


_reported: set[tuple[str, ...]] = set()


def report_missing_layers(missing: tuple[str, ...]) -> None:
    """Say once per process which sandbox layers this machine lacks: never silently less."""
    if missing and missing not in _reported:
        _reported.add(missing)
        log.warning("the sandbox runs without these layers on this machine:\n  - %s", "\n  - ".join(missing))


def grade(
    week: Week,
    submissions: Iterable[Submission],
    *,
    limits: Limits | None = None,
    on_result: OnResult | None = None,
    slot: ZygoteSlot | None = None,
) -> list[SubmissionResult]:
    """Grade ``submissions`` in order; ``on_result`` sees each result as soon as it exists."""
    limits = limits or Limits()
    results: list[SubmissionResult] = []

    def collect(result: SubmissionResult) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    captured = io.StringIO()
    with contextlib.ExitStack() as cleanup:
        if slot is None:
            slot = cleanup.enter_context(ZygoteSlot(limits, data=week.data_dir))
        else:
            slot.start()
            cleanup.callback(slot.settle)  # the caller's zygote is idle and clean when this returns
        report_missing_layers(slot.missing)
        loop = GradingLoop(week, submissions, collect, limits, slot)
        with read_afresh(week.tests_dir), contextlib.redirect_stdout(captured):
            code = pytest.main(pytest_args(week.tests_dir), plugins=[loop])
    if loop.error is not None:
        raise loop.error
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise CourseError(f"grading {week.name} stopped (pytest exit code {int(code)}): {captured.getvalue()[-2000:]}")
    return results
