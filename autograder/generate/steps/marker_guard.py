"""Last check on every generated notebook: no marker text survives."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.authoring.markers import has_marker_text, lines_of
from autograder.exceptions import GenerationError
from autograder.generate.steps.base import Context, Preprocessor


class MarkerGuard(Preprocessor):
    """Refuse a notebook in which any cell still holds marker text: a surviving marker
    means a region was not processed, whatever the reason."""

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Refuse a cell in which marker text survived."""
        for number, line in enumerate(lines_of(cell.source), start=1):
            if has_marker_text(line):
                raise GenerationError.at(
                    context.path, index + 1, f"solution-marker text survives generation: {line.strip()!r}", line=number
                )
