"""Where a submission's code runs: a choice the caller of ``grade`` makes, never inferred.

``Sandboxed`` is for everything a student hands in: each submission in a fresh worker
forked from a warm zygote inside the sandbox, within ``Limits``. ``InProcess`` is for
trusted notebooks only (the reference solutions, notebooks we wrote): they run in this
process, with no isolation and no time limit. ``pytest source/weekNN/tests`` and the
nbgrader/otter kernels pick their in-process channel the same explicit way, through the
plugin passed to pytest (see ``autograder.testing.plugin``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from autograder.execution.heard import Heard
from autograder.execution.run import SubmissionRun
from autograder.execution.sandbox import Helpers, Limits
from autograder.execution.slot import ZygoteSlot

log = logging.getLogger(__name__)


class Run(Protocol):
    """One submission's notebook, run; the channel behind the ``student`` fixture."""

    cells: list[str]  # the notebook's code cells as the grader holds them (feedback quotes these)
    messages: list[str]  # what the student is told about running the notebook
    timed_out: bool  # the notebook ran out of time: no test is run
    stub_cells: int  # cells that still raise NotImplementedError
    dropped: dict[int, str]  # cells left out of the run (1-based) -> what stopped them, in the student's words
    heard: Heard  # what the code said to the current test

    @property
    def generation(self) -> int:
        """Bumped whenever the code restarts: handles into an earlier run are stale."""

    def execute(self) -> None:
        """Run the notebook's cells."""

    def start_test(self) -> None:
        """A new hidden test starts: forget what the code said to the last one."""

    def worker_time_left(self) -> float:
        """Seconds the code may still be waited for in all (notebook runs and calls)."""

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """One request from a hidden test, answered as the worker answers it."""

    def __enter__(self) -> Run: ...

    def __exit__(self, *_: object) -> None: ...


Runs = Callable[[list[str]], Run]  # a notebook's code cells -> its run, not yet executed


class Isolation(Protocol):
    """How submissions run while one ``grade`` call lasts."""

    def session(self, data: Path, *, helpers: Helpers = (),
                preload: tuple[str, ...] = ()) -> contextlib.AbstractContextManager[Runs]:
        """Ready to run notebooks of a week whose data folder is ``data`` and helper modules
        ``helpers``, with the course's ``preload`` modules imported, until the block ends."""


@dataclass(frozen=True)
class Sandboxed:
    """Untrusted notebooks: each in a fresh sandboxed worker, within ``limits``.

    ``slot``: a warm zygote the caller keeps across calls (a grader process, the tests);
    left idle and clean when the session ends. Without one, a zygote is started for the
    session and stopped after it."""

    limits: Limits = field(default_factory=Limits)
    slot: ZygoteSlot | None = None

    @contextlib.contextmanager
    def session(self, data: Path, *, helpers: Helpers = (), preload: tuple[str, ...] = ()) -> Iterator[Runs]:
        """A warm zygote for the session; each run forks its workers from it."""
        with contextlib.ExitStack() as cleanup:
            slot = self.slot
            if slot is None:
                slot = cleanup.enter_context(ZygoteSlot(self.limits, data=data, helpers=helpers, preload=preload))
            else:
                slot.start()
                cleanup.callback(slot.settle)  # the caller's zygote is idle and clean when this returns
            report_missing_layers(slot.missing)
            ready: ZygoteSlot = slot
            yield lambda cells: SubmissionRun(ready, cells, self.limits)


@dataclass(frozen=True)
class InProcess:
    """Trusted notebooks only: run in this process, beside the week's data folder."""

    @contextlib.contextmanager
    def session(self, data: Path, *, helpers: Helpers = (), preload: tuple[str, ...] = ()) -> Iterator[Runs]:
        """Nothing to start: each run resets this process's IPython shell, beside the week's
        data (its helper modules import from the week's folder: ``testing.hidden.read_afresh``)."""
        from autograder.execution.local import LocalRun  # IPython: only for in-process runs

        yield lambda cells: LocalRun(cells, folder=data.parent)


_reported: set[tuple[str, ...]] = set()


def report_missing_layers(missing: tuple[str, ...]) -> None:
    """Say once per process which sandbox layers this machine lacks: never silently less."""
    if missing and missing not in _reported:
        _reported.add(missing)
        log.warning("the sandbox runs without these layers on this machine:\n  - %s", "\n  - ".join(missing))
