"""Refuse bad solution markers before anything is changed."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.authoring.markers import find_regions, refuse_marker_text
from autograder.generate.steps.base import Context, Preprocessor


class CheckMarkers(Preprocessor):
    """Every code cell's markers balance, do not nest and are spelled exactly; no other
    cell holds marker text. Runs first, so its messages point at the author's own lines."""

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Refuse a cell whose solution markers do not pair up."""
        if cell.cell_type == "code":
            find_regions(cell.source, path=context.path, cell=index)
        else:
            refuse_marker_text(cell.source, path=context.path, cell=index)
