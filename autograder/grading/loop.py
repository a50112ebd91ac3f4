"""Grading as a pytest plugin: collect the hidden tests once, run them per submission.

``GradingLoop`` replaces pytest's run loop. For each submission it runs the notebook as
the caller's isolation says (a sandboxed worker for anything a student handed in), points
the ``student`` fixture at it, runs every collected test through pytest's own runtest
protocol (fixtures, markers, reports), and hands the result to a callback. Module- and
session-scoped data fixtures are kept across submissions.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

import pytest

from autograder.course import Week
from autograder.exceptions import CourseError, GradingError, SandboxError, SubmissionError
from autograder.execution import Run, Runs
from autograder.grading.judge import CheckOutcome, base_result, build_result, describe_failure, empty_result
from autograder.grading.watch import Unwatched, Watch
from autograder.i18n.languages import translations
from autograder.i18n.runtime import _, speaking
from autograder.notebook import code_cells, declared_language, declared_week
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission
from autograder.testing.hidden import HiddenTest, hidden_tests, silenced
from autograder.testing.plugin import CHANNEL_SOURCE
from autograder.testing.student import Channel

log = logging.getLogger(__name__)

OnResult = Callable[[SubmissionResult], None]


def _flag_wrong_week(result: SubmissionResult, submission: Submission, week: str) -> SubmissionResult:
    """Say so when the notebook's metadata names another week: its low score is most
    likely the wrong file handed in, not this week's work."""
    declared = declared_week(submission.content or b"")
    if declared is not None and declared != week:
        result.status = Status.WRONG_WEEK
        result.messages.insert(0, _("This notebook is {declared}'s (its metadata says so), not {week}'s: it was "
                                    "graded against {week}'s tests. Hand in {week}.ipynb.").format(
                                        declared=declared, week=week))
    return result


class GradingLoop:
    """The pytest plugin object that grades a stream of submissions in one session."""

    def __init__(self, week: Week, submissions: Iterable[Submission], on_result: OnResult, runs: Runs,
                 watch: Watch | None = None) -> None:
        self.week = week
        self.watch = watch or Unwatched()  # told each step, so a budget can be enforced from outside
        self.submissions = submissions
        self.on_result = on_result
        self.runs = runs  # a notebook's cells -> its run, sandboxed or in-process (grade's isolation)
        self.run: Run | None = None
        self.outcomes: dict[str, CheckOutcome] = {}
        self.error: BaseException | None = None
        self.seed = 0

    def current_seed(self) -> int:
        """The seed of the submission being graded."""
        return self.seed

    # -- the channel source the `student` fixture asks -----------------------------------
    def current_channel(self, item: pytest.Item) -> Channel:
        """The run of the submission being graded, whichever test asks."""
        assert self.run is not None
        return self.run

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """Put this loop behind the ``student`` fixture: tests talk to the submission's run."""
        config.stash[CHANNEL_SOURCE] = self

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> pytest.TestReport:
        """Record the outcome and build a bare report. pytest's own report would format a
        traceback (parsing the test file's source, ~40 ms a failure) that nobody reads:
        the student sees ``describe_failure``, the instructor the same."""
        excinfo = call.excinfo
        outcome: Literal["passed", "failed", "skipped"]
        if excinfo is None:
            outcome, longrepr = "passed", None
            if call.when == "call":
                self.outcomes.setdefault(item.nodeid, CheckOutcome(True))
        else:
            skipped = isinstance(excinfo.value, pytest.skip.Exception)
            outcome = "skipped" if skipped else "failed"
            longrepr = (str(item.path), item.location[1] or 0, "skipped") if skipped else f"{excinfo.typename}"
            failure = (CheckOutcome(False, "the check was skipped") if skipped else describe_failure(
                excinfo.value, stubs_left=bool(self.run and self.run.stub_cells),
                heard=self.run.heard if self.run else None, cells=self.run.cells if self.run else None,
                dropped=self.run.dropped if self.run else None))
            previous = self.outcomes.get(item.nodeid)
            if previous is None or previous.passed:
                self.outcomes[item.nodeid] = failure
        assert call.when != "collect"  # a test item's phases: setup, call, teardown
        return pytest.TestReport(item.nodeid, item.location, {}, outcome, longrepr, call.when,
                                 duration=call.duration, start=call.start, stop=call.stop)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        """Grade every submission with the tests collected once; refuse a suite that does not collect."""
        if session.testsfailed:
            raise CourseError(f"{self.week.name}: the hidden tests do not collect; run "
                              f"`pytest {self.week.tests_dir}` to see why")
        items = list(session.items)
        try:
            tests = hidden_tests(self.week, items)
        except CourseError as exc:
            self.error = exc  # raised by ``grade`` once pytest has shut down cleanly
            return True
        # No look-ahead: a submission is graded as soon as it arrives, so ``submissions``
        # may be a queue fed while grading (autograder.grading.pool, .distributed).
        for submission in self.submissions:
            self.on_result(self._grade(submission, items, tests))
        return True

    def _grade(self, submission: Submission, items: list[pytest.Item], tests: list[HiddenTest]) -> SubmissionResult:
        """This submission's result, whatever it holds: the error boundary of one submission.

        A failure of the grading machinery itself (the course, the sandbox, the grader
        processes) stops the batch; anything else a submission makes happen here ends as
        that submission's ``error`` result, and the batch goes on."""
        started = time.monotonic()
        log.debug("grading %s", submission.key)
        base = base_result(self.week, submission)
        base.language = self.week.languages.pick(declared_language(submission.content or b""))
        with speaking(translations(self.week, base.language)):  # feedback in the notebook's language
            try:
                return self._grade_into(base, submission, items, tests)
            except (CourseError, SandboxError, GradingError):
                raise
            except Exception as exc:  # the boundary: one submission never stops the batch
                log.warning("grading %s failed (%s); it gets an error result", submission.key, type(exc).__name__,
                            exc_info=True)
                base.status, base.tests = Status.ERROR, []
                base.messages.append(_("the grader could not grade this notebook ({name}); it was not graded: "
                                       "tell your instructor").format(name=type(exc).__name__))
                return empty_result(self.week, base)
            finally:
                base.duration_s = time.monotonic() - started

    def _grade_into(self, base: SubmissionResult, submission: Submission, items: list[pytest.Item],
                    tests: list[HiddenTest]) -> SubmissionResult:
        if submission.content is None or submission.status is not None:
            base.status = submission.status or Status.ERROR
            base.messages.append(submission.message or _("no notebook was found in this submission"))
            return empty_result(self.week, base)
        try:
            cells = code_cells(submission.content)
        except SubmissionError as exc:
            base.messages.append(str(exc))
            return empty_result(self.week, base)
        self.seed = base.seed = submission.seed if submission.seed is not None else secrets.randbits(63)
        self.outcomes = {}
        described = {test.nodeid: _(test.description) for test in tests}
        with self.runs(cells) as run:
            self.run = run
            try:
                self.watch.begin(_("running the notebook"), run.worker_time_left())
                run.execute()
                base.messages.extend(run.messages)
                if run.timed_out:
                    return build_result(week=self.week, tests=tests, outcomes={}, base=base, timed_out=True)
                for index, item in enumerate(items):
                    # Session- and module-scoped data fixtures stay up for the next
                    # submission; pytest_sessionfinish tears them down after the last.
                    # (pytest's teardown reads only the next node's chain, so a collector will do)
                    nextitem: pytest.Item | pytest.Collector | None = items[(index + 1) % len(items)]
                    if nextitem is item:  # a one-test suite: tear the test's own fixtures down, keep the module's
                        nextitem = item.parent
                    run.start_test()  # what the worker said to this test only
                    self.watch.begin(described.get(item.nodeid, item.name), run.worker_time_left())
                    with silenced():  # a test's own output (a fit's verbose log) goes nowhere
                        item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                base.messages.extend(m for m in run.messages if m not in base.messages)
                result = build_result(week=self.week, tests=tests, outcomes=self.outcomes, base=base, timed_out=False)
                return _flag_wrong_week(result, submission, self.week.name)
            finally:
                self.run = None
