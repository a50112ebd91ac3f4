"""A week's CPU budgets as a student must know them, from the limits grading uses.

Grading stops a submission's code by CPU time (``execution/budget.py``): each notebook
cell, each call a hidden test makes, and the whole notebook have a budget in ``Limits``,
and a hidden test may give its own calls another one with ``@pytest.mark.call_timeout``.
The student is told all of them where they read the rules: the "Time limits" cell that
generation writes into every student notebook, and the service's week page. Both read
them here, so neither can drift from the numbers grading enforces, and the markers are
read as the grader reads them (``hidden.collect`` and ``hidden.read_markers``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from nbformat import NotebookNode

from autograder.course import Week
from autograder.execution import Limits
from autograder.testing.hidden import collect, read_markers


@dataclass(frozen=True, order=True)
class TaskCallBudget:
    """Some of a task's hidden tests give each call ``call_s`` CPU seconds instead of the default."""

    task: int
    call_s: float


@dataclass(frozen=True)
class WeekBudgets:
    """The CPU seconds a student's code may use when one week is graded."""

    cell_s: float  # each notebook cell
    call_s: float  # each call from a hidden test, unless the test sets its own
    notebook_s: float  # the whole notebook run
    tasks: tuple[TaskCallBudget, ...] = ()  # the per-call budgets that differ from call_s, by task


# the id of the "Time limits" cell generation adds to every student and solution notebook
LIMITS_CELL_ID = "autograder-time-limits"


def source_cells(cells: Sequence[NotebookNode]) -> list[NotebookNode]:
    """A generated notebook's cells that come from its source notebook, in order (cell N is
    the source's cell N): all but the "Time limits" cell, the one cell generation adds.
    Whoever pairs a generated notebook's cells with the source's reads them through here."""
    return [cell for cell in cells if cell.get("id") != LIMITS_CELL_ID]


_lock = threading.Lock()  # collecting changes sys.path and sys.modules for a moment
_markers: dict[tuple[str, str], tuple[tuple[int, float], ...]] = {}


def _call_timeouts(week: Week) -> tuple[tuple[int, float], ...]:
    """``(task, seconds)`` of every hidden test that sets ``call_timeout``; collected once per
    version of the week's tests (the service's week page asks on every view)."""
    if not week.tests_dir.is_dir():
        return ()
    key = (str(week.tests_dir.resolve()), week.tests_sha256)
    with _lock:
        if key not in _markers:
            found = (read_markers(item) for item in collect(week.tests_dir))
            _markers[key] = tuple((m.task, m.call_timeout) for m in found
                                  if m.task is not None and m.call_timeout is not None)
        return _markers[key]


def week_budgets(week: Week, limits: Limits | None = None) -> WeekBudgets:
    """``week``'s budgets under ``limits`` (by default the ``Limits`` every grading run uses
    unless told otherwise): cell, call and notebook, and each task's differing call budgets.

    Raises CourseError when the week's hidden tests do not collect."""
    limits = limits or Limits()
    exceptions = {TaskCallBudget(task, seconds) for task, seconds in _call_timeouts(week)
                  if seconds != limits.call_timeout_s}
    return WeekBudgets(cell_s=limits.cell_timeout_s, call_s=limits.call_timeout_s,
                       notebook_s=limits.submission_timeout_s, tasks=tuple(sorted(exceptions)))
