"""The in-process channel: the reference solution (or a trusted fixture) run right here.

Replies make the same JSON round trip as the sandboxed worker's, so a hidden test sees
exactly the same values either way. Only for trusted notebooks: there is no isolation.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from autograder.worker.codec import dumps_message, loads_message
from autograder.worker.core import WorkerCore, make_shell


class LocalChannel:
    """Runs a notebook's code cells in this process's IPython shell."""

    generation = 0

    def __init__(self, cells: list[str], *, folder: Path | None = None) -> None:
        """``folder``: where the cells run, as a student's notebook runs beside its
        ``data/`` (the sandbox gives every worker the week's data as ``./data``)."""
        shell = make_shell()
        shell.reset(new_session=False)
        self.core = WorkerCore(shell)
        with contextlib.chdir(folder) if folder is not None else contextlib.nullcontext():
            for source in cells:
                self.core.run_cell(source)

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        return loads_message(dumps_message(self.core.handle(loads_message(dumps_message(message)))))
