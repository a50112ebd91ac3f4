"""Running a submission's code cells in a sandboxed worker, and saying how it went.

``NotebookRunner`` runs the cells in order in a worker from the zygote slot. Which cells
it leaves out and whether it may start again is asked of ``RestartPolicy``; how much CPU
time each cell may use, and its wall-clock backstop, of ``Budget``. What it tells the
student is in student-safe words: a cell's own error only from the first run (see
``cell_error``), a cell that ran out of time or ended the worker by its number and first
line, and which limit stopped it (``dropped``, so a test missing a name that cell defines
can say why).
"""

from __future__ import annotations

from typing import Any

from autograder.exceptions import ProtocolError, WorkerDied, WorkerTimeout
from autograder.execution.budget import Budget
from autograder.execution.restarts import RestartPolicy
from autograder.execution.slot import ZygoteSlot
from autograder.execution.zygote import Worker
from autograder.i18n.runtime import _
from autograder.notebook import cell_line


def snippet(source: str) -> str:
    """A cell's first non-blank line, cut to 60 characters: how the student finds the cell."""
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return first if len(first) <= 60 else first[:57] + "..."


def cell_error(error: dict[str, Any]) -> str:
    """A cell's error as the student sees it: ``ValueError: message``.

    Shown only from the notebook's first run, before any hidden test has called into the
    worker: whatever the worker says then is the student's own output (their code, their
    exception), it cannot hold hidden data. Errors of later re-runs (after a test crashed
    the worker) are never shown. The type must be an identifier and the text is cut to 200
    characters, lone surrogates replaced so the gradebook and JSON can store it.
    """
    ename, evalue = error.get("ename"), error.get("evalue")
    if type(ename) is not str or not ename.isidentifier() or len(ename) > 80:
        ename = _("an exception")
    text = evalue[:200] if type(evalue) is str else ""
    return _printable(f"{ename}: {text}" if text else ename)


def _printable(text: str) -> str:
    """``text`` with lone surrogates (which no UTF-8 file can hold) replaced by ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


class CellReport:
    """What running a notebook told the student, and whether cells were stubs or timed out."""

    def __init__(self, cells: list[str]) -> None:
        self.cells = cells  # the notebook's code cells: the grader's copy, what messages quote
        self.messages: list[str] = []
        self.stub_cells = 0  # cells that still raise NotImplementedError
        self.timed_out = False  # the notebook's own budget ran out
        # cells (1-based) left out of later runs -> what stopped them, in the student's words
        # ("code cell 7 was stopped after 30 s of CPU time")
        self.dropped: dict[int, str] = {}

    def raised(self, index: int, error: dict[str, Any]) -> None:
        """Cell ``index`` (1-based) raised ``error`` (the worker's or the in-process shell's
        reply); where, when the position the worker named is a line of the grader's copy."""
        self.stub_cells += error.get("ename") == "NotImplementedError"
        code, text = snippet(self.cells[index - 1]), cell_error(error)
        site = cell_line(self.cells, error.get("where"))
        self.messages.append(
            _("code cell {index} (`{code}`) raised {error}").format(index=index, code=code, error=text) if site is None
            else _("code cell {index} (`{code}`) raised {error} at code cell {cell}, line {line}: `{text}`").format(
                index=index, code=code, error=text, cell=site[0], line=site[1], text=site[2]))


class NotebookRunner(CellReport):
    """Runs one submission's cells in a fresh worker, again without a cell that broke one."""

    def __init__(self, slot: ZygoteSlot, cells: list[str], policy: RestartPolicy, budget: Budget) -> None:
        super().__init__(cells)
        self.slot = slot
        self.policy = policy
        self.budget = budget
        self.generation = 0  # bumped per worker: handles into an earlier worker are stale
        self.worker: Worker | None = None

    def boot(self, *, report_errors: bool) -> None:
        """Run the notebook in a fresh worker; afterwards ``worker`` is None when no run got
        through (out of time or of fresh workers). ``report_errors``: the first run only."""
        while True:
            self.generation += 1
            self.worker = self.slot.spawn(self.budget.limits)
            if not self._run_cells(report_errors) or self.timed_out:
                return
            report_errors = False  # cell errors were reported on the first pass
            if not self.policy.take_restart():
                self.messages.append(_("too many cells ended or hung the worker: stopped running the notebook"))
                return

    def _run_cells(self, report_errors: bool) -> bool:
        """Run every cell the policy keeps; True when one hung or ended the worker (it is
        dropped and the notebook is to run again), False when the notebook ran through or
        ran out of time."""
        assert self.worker is not None
        for index, source in enumerate(self.cells, start=1):
            if self.policy.skips(index):
                continue
            allowance = self.budget.cell_allowance()
            if allowance is None:
                self._out_of_time()
                return False
            try:
                reply = self.worker.request({"op": "cell", "src": source, "cell": index}, allowance.cpu_s,
                                            wall=allowance.wall_s)
            except WorkerTimeout as stop:
                self.budget.charge_cell(self.worker.cpu_used, self.worker.wall_used)
                self.end_worker(kill=True)
                if self.budget.cut_short(allowance):
                    self._out_of_time()
                    return False
                code, seconds = snippet(source), f"{stop.seconds:g}"
                self._drop(index, _("code cell {index} (`{code}`) was stopped after {seconds} s of wall-clock time (a "
                                    "backstop for code that waits instead of computing)").format(
                    index=index, code=code, seconds=seconds) if stop.wall else
                    _("code cell {index} (`{code}`) was stopped after {seconds} s of CPU time").format(
                    index=index, code=code, seconds=seconds))
                return True
            except (WorkerDied, ProtocolError):
                self.budget.charge_cell(self.worker.cpu_used, self.worker.wall_used)
                self.end_worker(kill=True)
                self._drop(index, _("code cell {index} (`{code}`) ended the process running it (a crash, sys/os exit, "
                                    "or the memory limit)").format(index=index, code=snippet(source)))
                return True
            self.budget.charge_cell(self.worker.cpu_used, self.worker.wall_used)
            error = reply.get("error")
            if report_errors and isinstance(error, dict):
                self.raised(index, error)
        return False

    def _drop(self, index: int, cause: str) -> None:
        """Leave cell ``index`` out from now on; ``cause`` says what stopped it."""
        self.policy.drop_cell(index)
        self.dropped[index] = cause
        self.messages.append(_("{cause}; it was skipped and the notebook run again without it").format(cause=cause))

    def _out_of_time(self) -> None:
        self.timed_out = True
        limits = self.budget.limits
        if self.budget.notebook_cpu >= limits.submission_timeout_s:
            self.messages.append(_("the notebook used more than {seconds} s of CPU time").format(
                seconds=f"{limits.submission_timeout_s:g}"))
        else:
            self.messages.append(_("the notebook did not finish within {seconds} s of wall-clock time (a backstop "
                                   "for code that waits instead of computing)").format(
                seconds=f"{limits.submission_timeout_s * limits.wall_backstop:g}"))
        self.end_worker(kill=True)

    def end_worker(self, *, kill: bool) -> None:
        """Hand the worker back to the zygote (``kill``: end it first)."""
        if self.worker is not None:
            self.slot.release(kill=kill)
            self.worker = None
