"""The student's version of a code cell: each solution region becomes a stub."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.generate.markers import Region, find_regions, rewrite
from autograder.generate.steps.base import Context, Preprocessor


class ClearSolutions(Preprocessor):
    """Replace each region, markers included, by the stub at the BEGIN marker's indentation."""

    stub: tuple[str, ...] = ("# your code here", "raise NotImplementedError()")

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Replace each solution region with a stub."""
        if cell.cell_type != "code":
            return
        regions = find_regions(cell.source, path=context.path, cell=index)
        if regions:
            cell.source = rewrite(cell.source, regions, self._stub_for)

    def _stub_for(self, region: Region, inner: list[str]) -> list[str]:
        return [region.indent + line for line in self.stub]
