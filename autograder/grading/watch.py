"""The grader's own work, bounded from outside: what a grader process is doing, and for how long it may.

A hidden test runs in the grader, and what it computes can depend on what the student's
code returns (a model's settings, a tree's size). No budget inside the process can stop
it: a scikit-learn fit in C holds the interpreter, so neither a signal handler nor a
watchdog thread ever runs. So the grader process only *says* what it starts (``Watch``)
and the pool that started it (``autograder.grading.pool``) enforces the budget: it
kills a grader process whose current step runs past its wall or CPU time, and gives that
one submission an ``error`` result naming the check; the rest of the work goes on in a
fresh process.

A step's wall budget is the time its calls into the worker may still take (the worker's
own budgets bound those) plus ``Limits.grader_test_wall_s`` for the grader's work; its
CPU budget is ``Limits.grader_test_cpu_s`` of the grader process's CPU time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Protocol

from autograder.execution import Limits
from autograder.grading.messages import Watch as WatchMessage
from autograder.grading.messages import send


class Watch(Protocol):
    """Told what the grading loop starts, so someone outside can bound it."""

    def begin(self, what: str, worker_time: float) -> None:
        """A step starts (the notebook's run, a hidden test): ``what`` names it for the
        student, ``worker_time`` is what its calls into the worker may still take."""


class Unwatched:
    """``grade()`` called in the caller's own process: nobody outside to enforce a budget
    (the worker's budgets and the per-test reply cap still hold)."""

    def begin(self, what: str, worker_time: float) -> None:
        """Nothing to tell."""


class PipeWatch:
    """In a grader process: tell the parent each step's budget over the grader's pipe."""

    def __init__(self, conn: Connection, limits: Limits) -> None:
        self.conn = conn
        self.limits = limits

    def begin(self, what: str, worker_time: float) -> None:
        """Send the step and its wall and CPU budgets."""
        send(self.conn, WatchMessage(what=what, wall=worker_time + self.limits.grader_test_wall_s,
                                     cpu=self.limits.grader_test_cpu_s))


@dataclass
class Step:
    """What the parent knows of a grader process's current step."""

    what: str
    deadline: float  # monotonic
    cpu_start: float
    cpu_limit: float

    @classmethod
    def begun(cls, message: WatchMessage, pid: int) -> Step:
        """The step a ``watch`` message from grader process ``pid`` announces, from now."""
        return cls(message.what[:200], time.monotonic() + message.wall, cpu_seconds(pid), message.cpu)

    def overrun(self, pid: int, now: float) -> bool | None:
        """None while the step is within its budgets; else whether it was the CPU budget
        (True) or the wall budget (False) that ran out."""
        if cpu_seconds(pid) - self.cpu_start > self.cpu_limit:
            return True
        return False if now > self.deadline else None

    def wait_s(self, now: float) -> float:
        """How long the parent may wait before it looks at this step again."""
        return min(self.deadline - now, CPU_CHECK_S)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPU_CHECK_S = 1.0  # how often a parent reads a watched grader process's CPU time


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` (all its threads), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(b")") + 2:].split()  # after "pid (comm) ": state is field 3
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
