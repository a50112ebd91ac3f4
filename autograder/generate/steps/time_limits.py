"""The student is told the CPU budgets the notebook is graded under, in its own language."""

from __future__ import annotations

from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell

from autograder.formats.points import format_points
from autograder.generate.steps.base import Context, Preprocessor
from autograder.i18n.runtime import N_
from autograder.testing.budgets import LIMITS_CELL_ID


class TimeLimits(Preprocessor):
    """Write a "Time limits" markdown cell (id ``autograder-time-limits``) from the week's
    budgets (``testing/budgets.week_budgets``), right after the notebook's first markdown
    cell (the title and the rules a week opens with), or first when there is none.

    The one step that adds a cell, so it runs after every step and guard that numbers
    cells as the source does; its text comes from the framework's catalog and the budgets,
    never from the source, so the guards have nothing to judge in it. Without budgets in
    the context (a notebook generated outside a week) it writes nothing."""

    rules = N_("**Time limits.** Your code is stopped when it uses more CPU time than this: {cell} seconds for "
               "each cell, {call} seconds for each call a hidden test makes to it, and {notebook} seconds for "
               "the whole notebook. Only what your code computes counts, so a busy grading machine does not "
               "change your marks.")
    exception = N_("Some hidden tests of task {task} give each call {seconds} seconds instead of {call}.")

    def preprocess(self, nb: NotebookNode, context: Context) -> NotebookNode:
        """Insert the cell, in the notebook's language."""
        budgets = context.budgets
        if budgets is None:
            return nb
        call = format_points(budgets.call_s)
        lines = [context.gettext(self.rules).format(cell=format_points(budgets.cell_s), call=call,
                                                    notebook=format_points(budgets.notebook_s))]
        if budgets.tasks:
            lines.append("")
            lines += ["- " + context.gettext(self.exception).format(task=t.task, seconds=format_points(t.call_s),
                                                                    call=call) for t in budgets.tasks]
        cell = new_markdown_cell("\n".join(lines), id=LIMITS_CELL_ID)
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
        nb.cells.insert(first + 1, cell)
        return nb
