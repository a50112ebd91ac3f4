"""One submission run in the sandbox: the channel behind the ``student`` fixture.

``SubmissionRun`` puts three pieces together, each with one job: ``NotebookRunner``
(``cells.py``) runs the notebook's cells in a worker, ``RestartPolicy`` (``restarts.py``)
says when a fresh worker may replace a lost one, and ``Budget`` (``budget.py``) counts the
CPU time of cells and calls (and their wall-clock backstops). A cell that runs out of time
or kills the worker is skipped and the notebook re-run without it; a test whose call runs
out of time or crashes fails, and the next test gets a fresh worker. Every limit hit is
reported in student-safe words, naming the limit.
"""

from __future__ import annotations

from typing import Any

from autograder.exceptions import ProtocolError, TooMuchData, WorkerCrashed, WorkerDied, WorkerTimeout
from autograder.execution.budget import Budget
from autograder.execution.cells import NotebookRunner
from autograder.execution.heard import Heard
from autograder.execution.restarts import RestartPolicy
from autograder.execution.sandbox import Limits
from autograder.execution.slot import ZygoteSlot


class SubmissionRun(NotebookRunner):
    """One submission's notebook, executed in a worker; the channel behind ``student``."""

    def __init__(self, slot: ZygoteSlot, cells: list[str], limits: Limits) -> None:
        super().__init__(slot, cells, RestartPolicy(limits.restarts), Budget(limits))
        self.heard = Heard()  # words the current hidden test sent to the worker
        self.replies_cap = limits.test_replies_mb << 20
        self.replies = 0  # bytes of replies the current hidden test has read

    def start_test(self) -> None:
        """A new hidden test starts: nothing heard, nothing read yet."""
        self.heard.clear()
        self.replies = 0

    def worker_time_left(self) -> float:
        """Seconds the worker may still be waited for (notebook runs and calls) in all."""
        return self.budget.worker_time_left()

    @property
    def bad_cells(self) -> set[int]:
        """The cells (1-based) the notebook now runs without."""
        return self.policy.bad_cells

    def execute(self) -> None:
        """Run the notebook; afterwards ``timed_out`` and ``messages`` tell how it went."""
        self.boot(report_errors=True)
        self.budget.start_tests()

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Forward one request from a hidden test, within the call and test budgets."""
        if self.worker is not None and self.worker.dead:
            self.end_worker(kill=True)  # the zygote must be rid of it before forking again
        if self.worker is None:
            if self.timed_out or not self.policy.take_restart():
                raise self.policy.out_of_workers()
            self.boot(report_errors=False)
            if self.worker is None:
                raise WorkerCrashed("the notebook could not be run again")
        if self.replies > self.replies_cap:
            raise TooMuchData(self.replies_cap >> 20)
        allowance = self.budget.call_allowance(timeout)
        worker = self.worker
        assert worker is not None
        self.heard.note(message)
        before = worker.received
        try:
            reply = worker.request(message, allowance.cpu_s, wall=allowance.wall_s)
        except WorkerTimeout as stop:
            self.end_worker(kill=True)
            raise self.policy.call_hung(stop.seconds, wall=stop.wall) from None
        except (WorkerDied, ProtocolError) as exc:
            self.end_worker(kill=True)
            raise self.policy.call_crashed(str(exc)) from None
        finally:
            self.budget.charge_call(worker.cpu_used, worker.wall_used)
            if self.worker is not None:
                self.replies += self.worker.received - before
        if self.replies > self.replies_cap:
            raise TooMuchData(self.replies_cap >> 20)
        return reply

    def close(self) -> None:
        """Hand the worker back to the zygote, which cleans up after it."""
        self.end_worker(kill=False)

    def __enter__(self) -> SubmissionRun:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
