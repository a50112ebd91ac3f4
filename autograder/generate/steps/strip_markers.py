"""The solution notebook's version of a code cell: the code stays, the markers go."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.authoring.markers import Region, find_regions, rewrite
from autograder.generate.steps.base import Context, Preprocessor


class StripMarkers(Preprocessor):
    """Delete the two marker lines of every region and keep what they wrap."""

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Keep the solution code, drop the marker lines."""
        if cell.cell_type != "code":
            return
        regions = find_regions(cell.source, path=context.path, cell=index)
        if regions:
            cell.source = rewrite(cell.source, regions, _inner)


def _inner(region: Region, inner: list[str]) -> list[str]:
    return inner
