"""Running one submission in a sandboxed worker, and serving the hidden tests' requests.

A cell that hangs or kills the worker is skipped and the notebook re-run without it in a
fresh worker, so one bad cell costs only what that cell defines. A test whose call hangs
or crashes fails; the next test gets a fresh worker. All of it within the wall-time
budgets of ``Limits``; every limit hit is reported in student-safe words.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from autograder.exceptions import (
    ProtocolError,
    SandboxError,
    StudentTimeout,
    WorkerCrashed,
    WorkerDied,
    WorkerTimeout,
)
from autograder.execution.sandbox import Limits
from autograder.execution.zygote import Worker, Zygote
from autograder.grading.heard import Heard

log = logging.getLogger(__name__)


def _snippet(source: str) -> str:
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return first if len(first) <= 60 else first[:57] + "..."


def _cell_error(error: dict[str, Any]) -> str:
    """A cell's error as the student sees it: ``ValueError: message``.

    Shown only from the notebook's first run, before any hidden test has called into the
    worker: whatever the worker says then is the student's own output (their code, their
    exception), it cannot hold hidden data. Errors of later re-runs (after a test crashed
    the worker) are never shown. The type must be an identifier and the text is cut to 200
    characters, lone surrogates replaced so the gradebook and JSON can store it.
    """
    ename, evalue = error.get("ename"), error.get("evalue")
    if type(ename) is not str or not ename.isidentifier() or len(ename) > 80:
        ename = "an exception"
    text = evalue[:200] if type(evalue) is str else ""
    return _printable(f"{ename}: {text}" if text else ename)


def _printable(text: str) -> str:
    """``text`` with lone surrogates (which no UTF-8 file can hold) replaced by ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


class ZygoteSlot:
    """One warm zygote, replaced when it breaks; hands out one worker at a time."""

    def __init__(self, limits: Limits, *, data: Path | None = None) -> None:
        self.limits = limits
        self.data = data  # a week's data folder, read-only in every worker as ./data
        self.zygote: Zygote | None = None
        self.layers: tuple[str, ...] = ()
        self.missing: tuple[str, ...] = ()

    def start(self) -> ZygoteSlot:
        """Have a live zygote, starting (or restarting) one if needed."""
        if self.zygote is None or not self.zygote.alive:
            if self.zygote is not None:
                self.zygote.close()
            self.zygote = Zygote(self.limits, data=self.data).start()
            assert self.zygote.plan is not None
            self.layers, self.missing = self.zygote.plan.layers, self.zygote.plan.missing
        return self

    def spawn(self, limits: Limits | None = None) -> Worker:
        """A fresh worker; a zygote that fails to fork is replaced once before giving up."""
        for attempt in (1, 2):
            self.start()
            assert self.zygote is not None
            try:
                return self.zygote.spawn(limits or self.limits)
            except (SandboxError, ProtocolError, OSError) as exc:
                log.warning("zygote failed to fork (%s); replacing it", exc)
                self.replace()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def release(self, *, kill: bool) -> None:
        """Let the zygote clean up after its worker (``kill``: end it first); replace a zygote that cannot."""
        if self.zygote is None:
            return
        try:
            self.zygote.finish(kill=kill)
        except (SandboxError, ProtocolError, OSError) as exc:
            log.warning("zygote did not clean up after a submission (%s); replacing it", exc)
            self.replace()

    def settle(self) -> None:
        """Wait until the zygote has cleaned up after the last submission."""
        if self.zygote is not None:
            try:
                self.zygote.settle()
            except (SandboxError, ProtocolError, OSError) as exc:
                log.warning("zygote did not clean up after a submission (%s); replacing it", exc)
                self.replace()

    def replace(self) -> None:
        """Stop the zygote, logging what it said; the next ``start`` makes a new one."""
        if self.zygote is not None:
            detail = self.zygote.stderr_tail()
            if detail.strip():
                log.warning("the replaced zygote said:\n%s", detail)
            self.zygote.close()
        self.zygote = None

    def close(self) -> None:
        """Stop the zygote (and any worker it still holds)."""
        self.replace()

    def __enter__(self) -> ZygoteSlot:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()


class SubmissionRun:
    """One submission's notebook, executed in a worker; the channel behind ``student``."""

    def __init__(self, slot: ZygoteSlot, cells: list[str], limits: Limits) -> None:
        self.slot = slot
        self.cells = cells
        self.limits = limits
        self.generation = 0
        self.worker: Worker | None = None
        self.bad_cells: set[int] = set()
        self.messages: list[str] = []
        self.timed_out = False
        self.restarts = 0
        self.stub_cells = 0  # cells that still raise NotImplementedError
        self._notebook_seconds = 0.0
        self._tests_deadline: float | None = None
        self.heard = Heard()  # strings the worker sent to the current hidden test
        self._last_timeout: float | None = None  # the limit a call last ran past, if that lost the worker

    # -- the notebook -------------------------------------------------------------------
    def execute(self) -> None:
        """Run the notebook; afterwards ``timed_out`` and ``messages`` tell how it went."""
        self._boot(report_errors=True)
        self._tests_deadline = time.monotonic() + self.limits.tests_timeout_s

    def _boot(self, *, report_errors: bool) -> None:
        while True:
            self.generation += 1
            self.worker = self.slot.spawn(self.limits)
            failed_at = self._run_cells(report_errors)
            if failed_at is None or self.timed_out:
                return
            report_errors = False  # cell errors were reported on the first pass
            self.restarts += 1
            if self.restarts > self.limits.restarts:
                self.messages.append("too many cells ended or hung the worker: stopped running the notebook")
                return

    def _run_cells(self, report_errors: bool) -> int | None:
        """Run every cell not known to be bad; return the index of a cell that killed or
        hung the worker (after recording it), or None when the notebook ran through."""
        assert self.worker is not None
        for index, source in enumerate(self.cells, start=1):
            if index in self.bad_cells:
                continue
            remaining = self.limits.submission_timeout_s - self._notebook_seconds
            if remaining <= 0:
                self._hit_notebook_deadline()
                return None
            timeout = min(self.limits.cell_timeout_s, remaining)
            started = time.monotonic()
            try:
                reply = self.worker.request({"op": "cell", "src": source}, timeout)
            except WorkerTimeout:
                self._notebook_seconds += time.monotonic() - started
                self._end_worker(kill=True)
                if timeout < self.limits.cell_timeout_s:
                    self._hit_notebook_deadline()
                    return None
                self.bad_cells.add(index)
                self.messages.append(
                    f"code cell {index} (`{_snippet(source)}`) did not finish within {timeout:g} s; "
                    "it was skipped and the notebook run again without it")
                return index
            except (WorkerDied, ProtocolError):
                self._notebook_seconds += time.monotonic() - started
                self._end_worker(kill=True)
                self.bad_cells.add(index)
                self.messages.append(
                    f"code cell {index} (`{_snippet(source)}`) ended the process running it (a crash, "
                    "sys/os exit, or the memory limit); it was skipped and the notebook run again without it")
                return index
            self._notebook_seconds += time.monotonic() - started
            error = reply.get("error")
            if report_errors and isinstance(error, dict):
                self.stub_cells += error.get("ename") == "NotImplementedError"
                self.messages.append(f"code cell {index} (`{_snippet(source)}`) raised {_cell_error(error)}")
        return None

    def _hit_notebook_deadline(self) -> None:
        self.timed_out = True
        self.messages.append(f"the notebook did not finish within {self.limits.submission_timeout_s:g} s")
        self._end_worker(kill=True)

    # -- the channel --------------------------------------------------------------------
    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Forward one request from a hidden test, within the call and test budgets."""
        if self.worker is not None and self.worker.dead:
            self._end_worker(kill=True)  # the zygote must be rid of it before forking again
        if self.worker is None:
            if self.restarts >= self.limits.restarts or self.timed_out:
                if self._last_timeout is not None:  # the worker went to a hang: say so, not "ended the process"
                    raise StudentTimeout(self._last_timeout)
                raise WorkerCrashed("no more fresh workers for this submission")
            self.restarts += 1
            self._boot(report_errors=False)
            if self.worker is None:
                raise WorkerCrashed("the notebook could not be run again")
        limit = timeout or self.limits.call_timeout_s
        if self._tests_deadline is not None:
            limit = min(limit, self._tests_deadline - time.monotonic())
        if limit <= 0:
            raise StudentTimeout(self.limits.tests_timeout_s)
        assert self.worker is not None
        try:
            reply = self.worker.request(message, limit)
            self.heard.note(reply)
            return reply
        except WorkerTimeout:
            self._end_worker(kill=True)
            self._last_timeout = round(limit, 1)
            raise StudentTimeout(self._last_timeout) from None
        except (WorkerDied, ProtocolError) as exc:
            self._end_worker(kill=True)
            self._last_timeout = None
            raise WorkerCrashed(str(exc)) from None

    def _end_worker(self, *, kill: bool) -> None:
        if self.worker is not None:
            self.slot.release(kill=kill)
            self.worker = None

    def close(self) -> None:
        """Hand the worker back to the zygote, which cleans up after it."""
        self._end_worker(kill=False)

    def __enter__(self) -> SubmissionRun:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
