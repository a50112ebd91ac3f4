"""The wall-time budgets of one submission: what each cell and each call may still spend.

``Limits`` names four budgets: a cell runs for ``cell_timeout_s`` at most, the whole
notebook (every run of it, re-runs included) for ``submission_timeout_s``, one call from a
hidden test for ``call_timeout_s`` (or its test's ``call_timeout`` marker), and all the
tests' calls together end ``tests_timeout_s`` after the notebook first ran through. This
module only counts; what happens when a budget runs out is ``SubmissionRun``'s business.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from autograder.exceptions import StudentTimeout
from autograder.execution.sandbox import Limits


class Budget:
    """Seconds spent and left for one submission. ``clock`` is ``time.monotonic`` but in
    the budget's own tests, which step it by hand instead of sleeping."""

    def __init__(self, limits: Limits, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.notebook_spent = 0.0  # wall seconds of every cell run so far, re-runs included
        self.tests_deadline: float | None = None  # set once the notebook has first run through

    def cell_timeout(self) -> float | None:
        """How long the next cell may run: the cell limit, cut to what the notebook has left;
        None when the notebook's budget is spent."""
        remaining = self.limits.submission_timeout_s - self.notebook_spent
        return min(self.limits.cell_timeout_s, remaining) if remaining > 0 else None

    def cut_short(self, timeout: float) -> bool:
        """Whether a cell given ``timeout`` had less than a cell's full time: running past it
        means the notebook ran out of time, not that the cell is bad."""
        return timeout < self.limits.cell_timeout_s

    @contextmanager
    def running_cell(self) -> Iterator[None]:
        """Charge the block's wall time to the notebook's budget, however the block ends."""
        started = self.clock()
        try:
            yield
        finally:
            self.notebook_spent += self.clock() - started

    def start_tests(self) -> None:
        """The notebook has run: the tests' shared budget starts now."""
        self.tests_deadline = self.clock() + self.limits.tests_timeout_s

    def worker_time_left(self) -> float:
        """Seconds the worker may still be waited for in all: what the notebook's runs (a
        re-run after a crash included) and the tests' calls have left."""
        notebook = max(0.0, self.limits.submission_timeout_s - self.notebook_spent)
        if self.tests_deadline is None:
            return notebook + self.limits.tests_timeout_s
        return notebook + max(0.0, self.tests_deadline - self.clock())

    def call_timeout(self, asked: float | None = None) -> float:
        """How long the next call may run: ``asked`` (the test's marker) or the call limit,
        cut to what the tests have left. StudentTimeout when they have nothing left."""
        limit = asked or self.limits.call_timeout_s
        if self.tests_deadline is not None:
            limit = min(limit, self.tests_deadline - self.clock())
        if limit <= 0:
            raise StudentTimeout(self.limits.tests_timeout_s)
        return limit
