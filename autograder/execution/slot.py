"""One warm zygote for a stream of submissions, replaced when it breaks.

A grader keeps one ``ZygoteSlot`` for a whole batch (a grader process for its whole life):
a zygote imports the grading libraries once, and every worker forked from it starts warm.
"""

from __future__ import annotations

import logging
from pathlib import Path

from autograder.exceptions import ProtocolError, SandboxError
from autograder.execution.sandbox import Helpers, Limits
from autograder.execution.zygote import SandboxedZygote, Worker

log = logging.getLogger(__name__)


class ZygoteSlot:
    """One warm zygote, replaced when it breaks; hands out one worker at a time."""

    def __init__(self, limits: Limits, *, data: Path | None = None, helpers: Helpers = (),
                 preload: tuple[str, ...] = ()) -> None:
        self.limits = limits
        self.data = data  # a week's data folder, read-only in every worker as ./data
        self.helpers = helpers  # a week's helper modules, read-only and importable in every worker
        self.preload = preload  # the modules the zygote imports before its first fork (course.toml [grading])
        self.zygote: SandboxedZygote | None = None
        self.layers: tuple[str, ...] = ()
        self.missing: tuple[str, ...] = ()

    def start(self) -> ZygoteSlot:
        """Have a live zygote, starting (or restarting) one if needed."""
        if self.zygote is None or not self.zygote.alive:
            if self.zygote is not None:
                self.zygote.close()
            self.zygote = SandboxedZygote(self.limits, data=self.data, helpers=self.helpers,
                                          preload=self.preload).start()
            assert self.zygote.plan is not None
            self.layers, self.missing = self.zygote.plan.layers, self.zygote.plan.missing
        return self

    def spawn(self, limits: Limits | None = None) -> Worker:
        """A fresh worker; a zygote that fails to fork is replaced once before giving up.

        The first failure is logged at debug level only: under load a zygote may not answer
        in time, and the replacement is the whole remedy, with nothing for anyone to act
        on. A second failure is real: it is logged as a warning, with both reasons, and raised."""
        first: Exception | None = None
        for _attempt in (1, 2):
            self.start()
            assert self.zygote is not None
            try:
                return self.zygote.spawn(limits or self.limits)
            except (SandboxError, ProtocolError, OSError) as exc:
                if first is None:
                    log.debug("zygote failed to fork (%s); replacing it", exc)
                    self.replace(level=logging.DEBUG)
                    first = exc
                else:
                    log.warning("zygote failed to fork (%s), and its replacement too (%s)", first, exc)
                    self.replace()
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

    def replace(self, *, level: int = logging.WARNING) -> None:
        """Stop the zygote, logging what it said at ``level``; the next ``start`` makes a new one."""
        if self.zygote is not None:
            detail = self.zygote.stderr_tail()
            if detail.strip():
                log.log(level, "the replaced zygote said:\n%s", detail)
            self.zygote.close()
        self.zygote = None

    def close(self) -> None:
        """Stop the zygote (and any worker it still holds)."""
        self.replace()

    def __enter__(self) -> ZygoteSlot:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()
