"""The student's version of a code cell: each solution region becomes a stub."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.authoring.markers import Region, find_regions, rewrite
from autograder.generate.steps.base import Context, Preprocessor
from autograder.i18n.runtime import N_


class ClearSolutions(Preprocessor):
    """Replace each region, markers included, by the stub at the BEGIN marker's indentation."""

    stub: tuple[str, ...] = ("# your code here", "raise NotImplementedError()")
    comment = N_("your code here")  # the stub's first line, in the notebook's language

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Replace each solution region with a stub."""
        if cell.cell_type != "code":
            return
        regions = find_regions(cell.source, path=context.path, cell=index)
        if regions:
            cell.source = rewrite(cell.source, regions, lambda region, inner: self._stub_for(region, context))

    def _stub_for(self, region: Region, context: Context) -> list[str]:
        lines = ["# " + context.gettext(self.comment), *self.stub[1:]]
        return [region.indent + line for line in lines]
