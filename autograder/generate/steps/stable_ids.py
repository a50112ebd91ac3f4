"""Cell ids that depend only on the source, so regeneration is byte-identical."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.generate.steps.base import Context, Preprocessor


class StableIds(Preprocessor):
    """Keep each source cell's id (student, solution and source cells then correspond);
    a source without ids (nbformat < 4.5) or with a repeated id gets ``cell-<index>``,
    never nbformat's random ids. Writes nbformat 4.5, the first minor with ids."""

    def preprocess(self, nb: NotebookNode, context: Context) -> NotebookNode:
        """Give every cell an id derived from the source, so regeneration is byte-identical."""
        nb.nbformat = 4
        nb.nbformat_minor = max(int(nb.get("nbformat_minor", 0)), 5)
        seen: set[str] = set()
        for index, cell in enumerate(nb.cells):
            cell_id = cell.get("id")
            if not cell_id or cell_id in seen:
                cell_id = f"cell-{index}"
            cell.id = cell_id
            seen.add(cell_id)
        return nb
