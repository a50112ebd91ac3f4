"""When a submission gets a fresh worker, and which of its cells are left out.

One bad cell must cost only what that cell defines, and one bad call only its test: a cell
that runs out of time or ends the worker is dropped and the notebook run again without it in a fresh
worker; a call that hangs or ends the worker fails its test, and the next test gets a fresh
worker (the notebook re-run). ``Limits.restarts`` bounds the fresh workers, so a notebook
that breaks every worker it gets cannot hold the batch up.
"""

from __future__ import annotations

from autograder.exceptions import StudentTimeout, WorkerCrashed


class RestartPolicy:
    """The fresh workers one submission has used, and the cells it runs without."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed  # fresh workers after the first
        self.restarts = 0
        self.bad_cells: set[int] = set()  # 1-based indices of the cells the notebook runs without
        self.last_timeout: float | None = None  # the limit a call last ran past, if that lost the worker
        self.last_timeout_wall = False  # that limit was the wall-clock backstop, not CPU time

    def skips(self, index: int) -> bool:
        """Whether cell ``index`` (1-based) is left out of every later run."""
        return index in self.bad_cells

    def drop_cell(self, index: int) -> None:
        """Cell ``index`` hung or ended its worker: run the notebook without it from now on."""
        self.bad_cells.add(index)

    def take_restart(self) -> bool:
        """Use up one fresh worker, if any is left; False once they are all used."""
        if self.restarts >= self.allowed:
            return False
        self.restarts += 1
        return True

    def call_hung(self, limit: float, *, wall: bool = False) -> StudentTimeout:
        """The error a test gets when its call ran past ``limit`` seconds of CPU time (of
        wall-clock time with ``wall``: the backstop); its worker is lost."""
        self.last_timeout, self.last_timeout_wall = round(limit, 1), wall
        return StudentTimeout(self.last_timeout, wall=wall)

    def call_crashed(self, detail: str) -> WorkerCrashed:
        """The error a test gets when its call ended the worker."""
        self.last_timeout = None
        return WorkerCrashed(detail)

    def out_of_workers(self) -> StudentTimeout | WorkerCrashed:
        """The error every later test gets once no fresh worker is left: if the last worker
        went to a hang, say so (as its own test was told), not "ended the process"."""
        if self.last_timeout is not None:
            return StudentTimeout(self.last_timeout, wall=self.last_timeout_wall)
        return WorkerCrashed("no more fresh workers for this submission")
