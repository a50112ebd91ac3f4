"""The grader's side of execution: where and how a submission's code runs.

The rest of the package imports from here only. Grading chooses an isolation (``Sandboxed``
for what students hand in, ``InProcess`` for trusted notebooks) and passes it to ``grade``;
``Limits`` are the resource limits of one submission; ``ZygoteSlot`` is a warm zygote a
long-lived grader keeps; ``SubmissionRun`` and ``LocalRun`` are one notebook run sandboxed
or in-process (both a ``Run``; ``Runs`` makes them), and ``LocalChannel`` a channel onto
a live namespace (nbgrader, otter).

Loaded lazily (PEP 562): ``Limits`` is all most modules want, and the in-process classes
import IPython, which a grader that only sandboxes never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autograder.execution.isolation import InProcess, Isolation, Run, Runs, Sandboxed
    from autograder.execution.local import LocalChannel, LocalRun
    from autograder.execution.run import SubmissionRun
    from autograder.execution.sandbox import Limits
    from autograder.execution.slot import ZygoteSlot

_WHERE = {
    "InProcess": "isolation", "Isolation": "isolation", "Run": "isolation", "Runs": "isolation",
    "Sandboxed": "isolation", "LocalChannel": "local", "LocalRun": "local", "SubmissionRun": "run",
    "Limits": "sandbox", "ZygoteSlot": "slot",
}
__all__ = ["InProcess", "Isolation", "Limits", "LocalChannel", "LocalRun", "Run", "Runs", "Sandboxed", "SubmissionRun",
           "ZygoteSlot"]


def __getattr__(name: str) -> Any:
    """Import the one module that defines ``name`` when it is first asked for."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
