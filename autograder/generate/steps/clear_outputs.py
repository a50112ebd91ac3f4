"""Nothing from running the reference reaches a generated notebook."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.generate.steps.base import Context, Preprocessor


class ClearOutputs(Preprocessor):
    """Clear outputs and execution counts, and drop the run-timing metadata Jupyter and its
    extensions record: outputs can give answers away, and timings would make the generated
    files change every time the author re-runs the source."""

    timing_keys: tuple[str, ...] = ("execution", "ExecuteTime")

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Drop the cell's outputs, execution count and timing metadata."""
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in self.timing_keys:
            cell.metadata.pop(key, None)
