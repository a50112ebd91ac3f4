"""The in-process channel: student-facing code run right here, for trusted notebooks only.

Three callers: ``pytest source/weekNN/tests`` runs the reference notebook in this process
(``LocalRun``, through the plugin's ``InProcessReference``), grading with the
``InProcess`` isolation runs each notebook so (``autograder.execution.isolation``), and an
nbgrader or otter kernel lets a hidden test look into its own namespace
(``LocalChannel.onto``, see ``autograder.interop.kernel``). Replies make the same JSON
round trip as the sandboxed worker's, so a hidden test sees exactly the same values
either way. There is no isolation and no time limit.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from autograder.execution.cells import CellReport
from autograder.execution.heard import Heard
from autograder.worker.codec import dumps_message, loads_message
from autograder.worker.core import WorkerCore, make_shell


class _Namespace:
    """What ``WorkerCore`` needs of a shell when it only looks names up: ``user_ns``."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.user_ns = namespace

    def run_cell(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("running cells is not available when the notebook's own kernel is the student")


class LocalChannel:
    """The ``student`` channel onto a ``WorkerCore`` in this process."""

    generation = 0  # never restarted: remote objects never go stale

    def __init__(self, core: WorkerCore) -> None:
        self.core = core

    @classmethod
    def onto(cls, namespace: dict[str, Any]) -> LocalChannel:
        """A channel onto a live namespace (a Jupyter kernel's globals); cells cannot be run."""
        return cls(WorkerCore(_Namespace(namespace)))  # type: ignore[arg-type]

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Answer as the worker would, through the same codec both ways."""
        return loads_message(dumps_message(self.core.handle(loads_message(dumps_message(message)))))


class LocalRun(CellReport, LocalChannel):
    """A trusted notebook run in this process's IPython shell: ``SubmissionRun``'s in-process
    counterpart (the same ``execute``, ``messages`` and ``heard``; never times out)."""

    def __init__(self, cells: list[str], *, folder: Path | None = None) -> None:
        CellReport.__init__(self, cells)
        shell = make_shell()  # a singleton: one run at a time, each in a fresh namespace
        shell.reset(new_session=False)
        LocalChannel.__init__(self, WorkerCore(shell))
        self.folder = folder  # where the cells run: a notebook runs beside its data/
        self.heard = Heard()

    def execute(self) -> None:
        """Run the cells in order; a cell's error is reported as the sandbox reports it."""
        with contextlib.chdir(self.folder) if self.folder is not None else contextlib.nullcontext():
            for index, source in enumerate(self.cells, start=1):
                error = self.core.run_cell(source, index).get("error")
                if isinstance(error, dict):
                    self.raised(index, error)

    def start_test(self) -> None:
        """A new hidden test starts: nothing heard yet."""
        self.heard.clear()

    def worker_time_left(self) -> float:
        """Trusted code has no call budget: nothing to add to a test's own."""
        return 0.0

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Answer as the worker would; remember what the current test sent."""
        self.heard.note(message)
        return super().request(message, timeout=timeout)

    def close(self) -> None:
        """Nothing to hand back: the shell is reset by the next run."""

    def __enter__(self) -> LocalRun:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
