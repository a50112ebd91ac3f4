"""Reading a submitted notebook: whatever the student uploaded, or a clear reason why not.

Any notebook that holds the week's code is gradable: cells in any order, extra cells,
no metadata. Only code cells run; outputs are ignored. Every consumer of a student's
notebook (grading, the marking sheet, choosing among a Moodle hand-in's notebooks) reads
it here, so the caps and checks below hold for all of them.

The file is checked as plain JSON before anything walks it: its size, its nesting, the
number of cells of either format (v4 ``cells``, v3 ``worksheets[].cells``). What comes
back is a small v4 notebook built from the cells alone: outputs and attachments dropped,
metadata cut to the flat ``autograder`` mapping the grader reads (docs/AUTHORING.md),
text scrubbed so it can always be written (``autograder.text``). nbformat's schema
validation is not run: it costs seconds on a large notebook (20 MB of outputs, 180,000
v3 cells) and only logs what it finds, while every field used here is checked here.
"""

from __future__ import annotations

import json
from typing import Any

import nbformat
from nbformat.v4.convert import upgrade_cell

from autograder.exceptions import SubmissionError
from autograder.text import scrub

MAX_NOTEBOOK_BYTES = 20 << 20
MAX_CODE_CELLS = 2000
MAX_CELLS = 10_000  # code and markdown together
MAX_CELL_CHARS = 1 << 20
_SCALARS = (str, int, float, bool, type(None))


def read_notebook(content: bytes) -> nbformat.NotebookNode:
    """Parse and check a notebook of format 3 or 4; returns it as a v4 notebook whose
    cells each have a ``cell_type``, a ``source`` string and a flat ``metadata``."""
    raw = _parse(content)
    version = raw.get("nbformat", 4)
    if version == 4 or version is None:
        cells = raw.get("cells")
        if not isinstance(cells, list):
            raise SubmissionError("the file is JSON but not a Jupyter notebook (no list of cells)")
    elif version == 3:
        sheets = raw.get("worksheets")
        if not isinstance(sheets, list) or not all(isinstance(s, dict) and isinstance(s.get("cells"), list)
                                                   for s in sheets):
            raise SubmissionError("the file is an nbformat 3 notebook without a list of worksheets and cells")
        cells = [cell for sheet in sheets for cell in sheet["cells"]]
    else:
        raise SubmissionError(f"notebook format {repr(version)[:20]} is not supported: "
                              "open the notebook in Jupyter or Colab, save it, and upload it again")
    if len(cells) > MAX_CELLS:
        # before any cell is looked at: 100,000 cells would cost seconds
        raise SubmissionError(f"the notebook has {len(cells)} cells, over the {MAX_CELLS} limit")
    nb: nbformat.NotebookNode = nbformat.v4.new_notebook(metadata=_flat_metadata(raw.get("metadata")))
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell, dict) and isinstance(cell.get("cell_type"), str):
            nb.cells.append(_cell(cell, number, v3=version == 3))
    return nb


def _parse(content: bytes) -> dict[str, Any]:
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
        raise SubmissionError(
            f"the file is not UTF-8 text (byte {exc.start}): is it really a .ipynb notebook?"
        ) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"the file is not a notebook: it is not valid JSON (line {exc.lineno}, "
                              f"column {exc.colno})") from None
    except ValueError as exc:  # a number of more than 4,300 digits: "Exceeds the limit (4300 digits) for ..."
        raise SubmissionError(f"the file is not a notebook Python can read ({str(exc).split(':')[0][:100]})") from None
    except RecursionError:
        raise SubmissionError("the notebook's JSON nests too deeply to be read (lists or objects inside "
                              "each other hundreds of levels deep): clear the outputs and save it again") from None
    if not isinstance(raw, dict) or "cells" not in raw and "worksheets" not in raw:
        raise SubmissionError("the file is JSON but not a Jupyter notebook (no cells)")
    return raw


def _cell(raw: dict[str, Any], number: int, *, v3: bool) -> nbformat.NotebookNode:
    """One cell as the grader reads it; ``source`` is text or the submission is refused."""
    kind = raw["cell_type"]
    source = raw.get("input" if v3 and kind == "code" else "source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise SubmissionError(f"cell {number}'s source is not text: open the notebook in Jupyter, "
                              "save it, and upload it again")
    cell = nbformat.NotebookNode(cell_type=scrub(kind), source=scrub(source),
                                 metadata=_flat_metadata(raw.get("metadata")))
    if v3 and kind in ("heading", "html"):  # nbformat's own v3 -> v4 rules (headings become markdown)
        cell = upgrade_cell(nbformat.NotebookNode(cell, level=_level(raw.get("level"))))
        del cell["id"]
    if cell.cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def _level(level: object) -> int:
    return level if isinstance(level, int) and 1 <= level <= 6 else 1


def _flat_metadata(metadata: object) -> nbformat.NotebookNode:
    """The ``autograder`` mapping of a metadata object, if it is one of scalars; else nothing.

    The grader reads nothing else from metadata (task, points, manual, answer, week), so a
    list or a nested object there is a student's edit, not ours, and is dropped."""
    mine = metadata.get("autograder") if isinstance(metadata, dict) else None
    if not isinstance(mine, dict) or not all(isinstance(v, _SCALARS) for v in mine.values()):
        return nbformat.NotebookNode()
    return nbformat.NotebookNode(autograder=nbformat.NotebookNode(
        {scrub(k): scrub(v) if isinstance(v, str) else v for k, v in mine.items()}))


def code_cells(content: bytes) -> list[str]:
    """The sources of the notebook's code cells, in order, within the caps."""
    cells: list[str] = []
    for cell in read_notebook(content).cells:
        if cell.cell_type != "code":
            continue
        if len(cell.source) > MAX_CELL_CHARS:
            raise SubmissionError(f"a code cell holds {len(cell.source)} characters, over the {MAX_CELL_CHARS} limit")
        if cell.source.strip():
            cells.append(cell.source)
        if len(cells) > MAX_CODE_CELLS:
            raise SubmissionError(f"the notebook has more than {MAX_CODE_CELLS} code cells")
    return cells


def declared_week(content: bytes) -> str | None:
    """The week the notebook's metadata names (``autograder.week``, as ``week07``), or None
    when it names none or something that is not a week name (student-chosen text is not
    repeated)."""
    import re

    try:
        week = read_notebook(content).metadata.get("autograder", {}).get("week")
    except (SubmissionError, AttributeError):
        return None
    match = re.fullmatch(r"\s*week\s*0*(\d{1,3})\s*", str(week), flags=re.IGNORECASE) if week is not None else None
    return f"week{int(match.group(1)):02d}" if match else None


def declared_language(content: bytes) -> str | None:
    """The language the notebook's metadata names (``autograder.language``, written by
    ``autograder generate``), or None. The caller checks it against the course's languages:
    the metadata is the student's to edit."""
    try:
        language = read_notebook(content).metadata.get("autograder", {}).get("language")
    except (SubmissionError, AttributeError):
        return None
    return language if isinstance(language, str) and len(language) <= 16 else None


MAX_LINE_CHARS = 80  # of a line of the student's code quoted in feedback


def cell_line(cells: list[str], where: object) -> tuple[int, int, str] | None:
    """The code cell, line number and that line's text at ``where``, a position the worker
    named (``[cell, line]``, 1-based, cells counted as ``code_cells`` counts them), read from
    ``cells``, the grader's own copy of the notebook; None when ``where`` is not a line of
    it. The worker is the student's and may name anything: only a position that exists
    here is shown, and the text is the grader's, stripped and cut to ``MAX_LINE_CHARS``.

    Lines count as the worker's compiler counted them: IPython drops a cell's leading
    blank lines before compiling it (``IPython.core.inputtransformer2.leading_empty_lines``).
    """
    if type(where) is not list or len(where) != 2 or any(type(n) is not int for n in where):
        return None
    cell, line = where
    if not 1 <= cell <= len(cells):
        return None
    lines = cells[cell - 1].splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1].strip()
    text = text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 3] + "..."
    return cell, line, text
