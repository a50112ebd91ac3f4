"""Reading a submitted notebook: whatever the student uploaded, or a clear reason why not.

Any notebook that holds the week's code is gradable: cells in any order, extra cells,
no metadata. Only code cells run; outputs and metadata are ignored.
"""

from __future__ import annotations

import json

import nbformat

from autograder.exceptions import SubmissionError

MAX_NOTEBOOK_BYTES = 20 << 20
MAX_CODE_CELLS = 2000
MAX_CELLS = 10_000  # code and markdown together
MAX_CELL_CHARS = 1 << 20


def read_notebook(content: bytes) -> nbformat.NotebookNode:
    """Parse and validate a notebook, upgrading older formats to v4."""
    if not content.strip():
        raise SubmissionError("the file is empty: upload the .ipynb file saved from Jupyter or Colab")
    if len(content) > MAX_NOTEBOOK_BYTES:
        raise SubmissionError(
            f"the notebook is {len(content) / 2**20:.0f} MB, over the {MAX_NOTEBOOK_BYTES >> 20} MB limit: "
            "clear the outputs (Edit > Clear all outputs) and upload it again"
        )
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"the file is not UTF-8 text (byte {exc.start}): is it really a .ipynb notebook?") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise SubmissionError(f"the file is not a notebook: it is not valid JSON{where}") from None
    if not isinstance(raw, dict) or "cells" not in raw and "worksheets" not in raw:
        raise SubmissionError("the file is JSON but not a Jupyter notebook (no cells)")
    if isinstance(raw.get("cells"), list) and len(raw["cells"]) > MAX_CELLS:
        # before nbformat validates every cell: 100,000 cells would cost seconds
        raise SubmissionError(f"the notebook has {len(raw['cells'])} cells, over the {MAX_CELLS} limit")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises many types for malformed input
        raise SubmissionError(f"the notebook is malformed: {str(exc)[:200]}") from None
    return nb


def code_cells(content: bytes) -> list[str]:
    """The sources of the notebook's code cells, in order, within the caps."""
    nb = read_notebook(content)
    cells: list[str] = []
    for cell in nb.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise SubmissionError("a code cell's source is not text")
        if len(source) > MAX_CELL_CHARS:
            raise SubmissionError(f"a code cell holds {len(source)} characters, over the {MAX_CELL_CHARS} limit")
        if source.strip():
            cells.append(source)
        if len(cells) > MAX_CODE_CELLS:
            raise SubmissionError(f"the notebook has more than {MAX_CODE_CELLS} code cells")
    return cells
