"""The in-process channel: student-facing code run right here, for trusted notebooks only.

Two callers: ``pytest source/weekNN/tests`` runs the reference notebook in this process
(``LocalChannel.run_notebook``), and an nbgrader or otter kernel lets a hidden test look
into its own namespace (``LocalChannel.onto``, see ``autograder.interop.kernel``).
Replies make the same JSON round trip as the sandboxed worker's, so a hidden test sees
exactly the same values either way. There is no isolation and no time limit.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

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
    def run_notebook(cls, cells: list[str], *, folder: Path | None = None) -> LocalChannel:
        """Run a notebook's code cells in this process's IPython shell. ``folder``: where the
        cells run, as a student's notebook runs beside its ``data/`` (the sandbox gives
        every worker the week's data as ``./data``)."""
        shell = make_shell()
        shell.reset(new_session=False)
        core = WorkerCore(shell)
        with contextlib.chdir(folder) if folder is not None else contextlib.nullcontext():
            for source in cells:
                core.run_cell(source)
        return cls(core)

    @classmethod
    def onto(cls, namespace: dict[str, Any]) -> LocalChannel:
        """A channel onto a live namespace (a Jupyter kernel's globals); cells cannot be run."""
        return cls(WorkerCore(_Namespace(namespace)))  # type: ignore[arg-type]

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Answer as the worker would, through the same codec both ways."""
        return loads_message(dumps_message(self.core.handle(loads_message(dumps_message(message)))))
