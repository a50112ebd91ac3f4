"""The CPU-time budgets of one submission, and their wall-clock backstops.

``Limits`` names four budgets, all in CPU seconds of the worker (``cputime.py``), so a
notebook scores the same whether the machine is idle or every core is busy: a cell may
use ``cell_timeout_s``, the whole notebook (every run of it, re-runs included)
``submission_timeout_s``, one call from a hidden test ``call_timeout_s`` (or its test's
``call_timeout`` marker), and all the tests' calls together ``tests_timeout_s``. Each has
a wall-clock backstop ``Limits.wall_backstop`` times as long, counting only the wall time
the worker did not spend waiting for a CPU, so that only code that waits instead of
computing (a sleep, a blocking read) reaches it, whatever the machine's load. This module
only counts; what happens when a budget runs out is ``SubmissionRun``'s business.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.exceptions import StudentTimeout
from autograder.execution.sandbox import Limits


@dataclass(frozen=True)
class Allowance:
    """What one cell or call may spend: CPU seconds, and wall seconds (the backstop)."""

    cpu_s: float
    wall_s: float


class Budget:
    """CPU and backstop seconds spent and left for one submission. The backstop's seconds
    are wall seconds the worker did not spend waiting for a CPU (``Worker.wall_used``)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.factor = limits.wall_backstop
        self.notebook_cpu = 0.0  # CPU seconds of every cell run so far, re-runs included
        self.notebook_wall = 0.0  # their backstop seconds
        self.tests_cpu = 0.0  # CPU seconds of the tests' calls so far
        self.tests_wall = 0.0  # their backstop seconds
        self.tests_started = False

    def cell_allowance(self) -> Allowance | None:
        """What the next cell may spend: the cell limit, cut to what the notebook has left;
        None when the notebook's budget (or its backstop) is spent."""
        cpu = self.limits.submission_timeout_s - self.notebook_cpu
        wall = self.limits.submission_timeout_s * self.factor - self.notebook_wall
        if cpu <= 0 or wall <= 0:
            return None
        return Allowance(min(self.limits.cell_timeout_s, cpu), min(self.limits.cell_timeout_s * self.factor, wall))

    def cut_short(self, allowance: Allowance) -> bool:
        """Whether a cell given ``allowance`` had less than a cell's full time: running past
        it means the notebook ran out of time, not that the cell is bad."""
        return (allowance.cpu_s < self.limits.cell_timeout_s
                or allowance.wall_s < self.limits.cell_timeout_s * self.factor)

    def charge_cell(self, cpu_s: float, wall_s: float) -> None:
        """A cell (finished or stopped) spent this much of the notebook's budget and backstop."""
        self.notebook_cpu += cpu_s
        self.notebook_wall += wall_s

    def start_tests(self) -> None:
        """The notebook has run through once: the hidden tests' calls begin."""
        self.tests_started = True

    def worker_time_left(self) -> float:
        """Wall seconds the worker may still be waited for in all, for the pool's watch on a
        grader process (which adds the grader's own allowance): until the notebook has run,
        what its backstop has left (cells that wait are stopped only by it), then the CPU
        seconds the notebook's re-runs and the tests' calls have left. A call that waits is
        stopped by its own backstop, within the grader's allowance on top; a step's calls on
        a busy machine take more wall time than CPU time, which the tests' budget, far larger
        than one step's calls, covers several times over."""
        limits = self.limits
        tests = max(0.0, limits.tests_timeout_s - self.tests_cpu)
        if not self.tests_started:
            return max(0.0, limits.submission_timeout_s * self.factor - self.notebook_wall) + tests
        return max(0.0, limits.submission_timeout_s - self.notebook_cpu) + tests

    def call_allowance(self, asked: float | None = None) -> Allowance:
        """What the next call may spend: ``asked`` (the test's marker) or the call limit in
        CPU seconds, cut to what the tests have left, and its backstop likewise.
        StudentTimeout when they have nothing left."""
        limit = asked or self.limits.call_timeout_s
        cpu = min(limit, self.limits.tests_timeout_s - self.tests_cpu)
        wall = min(limit * self.factor, self.limits.tests_timeout_s * self.factor - self.tests_wall)
        if cpu <= 0:
            raise StudentTimeout(self.limits.tests_timeout_s)
        if wall <= 0:
            raise StudentTimeout(self.limits.tests_timeout_s * self.factor, wall=True)
        return Allowance(cpu, wall)

    def charge_call(self, cpu_s: float, wall_s: float) -> None:
        """A call (answered or stopped) spent this much of the tests' budget and backstop."""
        self.tests_cpu += cpu_s
        self.tests_wall += wall_s
