"""The base of every generation step, and what a step may know besides the notebook."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from autograder.i18n.runtime import untranslated
from autograder.testing.budgets import WeekBudgets


@dataclass(frozen=True)
class Context:
    """What every step may read: the source path (named in every error), the source
    notebook as the author wrote it (steps change a copy; guards compare against this), and
    the language being generated with its translations (identity in the source language),
    and the CPU budgets the week is graded under (None outside a week: nothing to state)."""

    path: Path
    source: NotebookNode
    language: str = "en"
    gettext: Callable[[str], str] = untranslated
    budgets: WeekBudgets | None = None


class Preprocessor:
    """One transformation or check of the notebook being generated.

    Steps change cells in place and never add or remove a cell, so cell N of the output
    is cell N of the source, as every error message numbers it; the one exception,
    ``TimeLimits``, comes after them all.
    """

    def preprocess(self, nb: NotebookNode, context: Context) -> NotebookNode:
        """Apply ``preprocess_cell`` to every cell, in order; a step that needs the whole notebook overrides this."""
        for index, cell in enumerate(nb.cells):
            self.preprocess_cell(cell, context, index)
        return nb

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Change (or check) one cell; ``index`` counts from 0, messages from 1."""
