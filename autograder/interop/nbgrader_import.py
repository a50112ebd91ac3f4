"""``autograder import nbgrader SOURCE_NOTEBOOK``: an nbgrader source notebook as a week.

nbgrader keeps everything in cell metadata (``metadata.nbgrader``: ``solution``,
``grade``, ``task``, ``points``, ``grade_id``). Mapping:

- solution code cell -> a code cell with ``### BEGIN SOLUTION`` regions (nbgrader's own
  markers; a cell without markers is one region, as nbgrader replaces it whole);
- autograded test cell -> a task worth its points, whose heading goes before the
  solution cells that precede the test (the author's own markdown heading there, when
  there is one, becomes the task cell instead of a second heading); the cell becomes one hidden test (hidden tests
  included, markers dropped) and its visible part stays as a public check cell;
- manually graded answer (markdown) -> a manual task and its answer cell; a manually
  graded code answer -> a manual task around a solution cell; a task cell -> a manual task.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from autograder.exceptions import InteropError
from autograder.generate.markers import BEGIN, END
from autograder.interop.week_writer import CellTest, notebook_imports, task_cell, wrap_solution, write_week

HIDDEN_BEGIN = re.compile(r"^\s*#+\s*BEGIN HIDDEN TESTS\s*$")
HIDDEN_END = re.compile(r"^\s*#+\s*END HIDDEN TESTS\s*$")
SOLUTION_MARKER = re.compile(r"^(\s*)#+\s*(BEGIN|END) SOLUTION\s*$")
STUB = re.compile(r"^\s*#\s*YOUR CODE HERE\s*$|^\s*raise NotImplementedError\(\)\s*$", re.IGNORECASE)


def _meta(cell: NotebookNode) -> dict[str, Any]:
    meta: dict[str, Any] = cell.get("metadata", {}).get("nbgrader", {})
    return meta


def solution_source(source: str, where: str) -> str:
    """nbgrader's markers respelled exactly as ours; a cell without any is one region."""
    lines = source.split("\n")
    if any(SOLUTION_MARKER.match(line) for line in lines):
        return "\n".join(
            f"{m.group(1)}{BEGIN if m.group(2) == 'BEGIN' else END}" if (m := SOLUTION_MARKER.match(line)) else line
            for line in lines)
    if source.strip() and all(STUB.match(line) or not line.strip() for line in lines):
        raise InteropError(f"{where}: holds only nbgrader's stub (# YOUR CODE HERE): import the source "
                           "notebook, the one with the solutions, not the released one")
    return wrap_solution(source)


def split_hidden(source: str) -> tuple[str, str]:
    """(visible part, whole test without the HIDDEN TESTS marker lines)."""
    visible, whole, hidden = [], [], False
    for line in source.split("\n"):
        if HIDDEN_BEGIN.match(line):
            hidden = True
        elif HIDDEN_END.match(line):
            hidden = False
        else:
            whole.append(line)
            if not hidden:
                visible.append(line)
    return "\n".join(visible).strip(), "\n".join(whole).strip()


def _authors_heading(cell: NotebookNode) -> bool:
    """A section heading (``##`` or deeper, not the notebook's title) of the author's, not
    yet a task: it names the task itself."""
    return (cell.cell_type == "markdown" and cell.source.lstrip().startswith("##")
            and "autograder" not in cell.metadata)


def import_nbgrader(source_notebook: Path, *, week: str, out_root: Path) -> Path:
    """Convert ``source_notebook``; write ``out_root/source/<week>/``; return the notebook path."""
    nb = nbformat.read(source_notebook, as_version=4)
    cells: list[NotebookNode] = []
    tests: list[CellTest] = []
    plain_code: list[NotebookNode] = []
    number = 0
    task_at: int | None = None  # where the next autograded task's heading goes
    for index, original in enumerate(nb.cells):
        cell = copy.deepcopy(original)
        meta = cell.metadata.pop("nbgrader", {})
        where = f"{source_notebook}: cell {index + 1}"
        grade, solution, task = bool(meta.get("grade")), bool(meta.get("solution")), bool(meta.get("task"))
        grade_id = str(meta.get("grade_id", f"cell{index + 1}"))
        points = float(meta.get("points", 0) or 0)
        if task or (grade and solution):
            number += 1
            cells.append(task_cell(number, points, grade_id, manual=True))
            if cell.cell_type == "markdown" and solution:
                cell.metadata["autograder"] = {"answer": number}
            elif cell.cell_type == "code":
                cell.source = solution_source(cell.source, where)
            cells.append(cell)
        elif solution and cell.cell_type == "code":
            task_at = len(cells) if task_at is None else task_at
            cell.source = solution_source(cell.source, where)
            cells.append(cell)
        elif grade and cell.cell_type == "code":
            number += 1
            visible, whole = split_hidden(cell.source)
            at = len(cells) if task_at is None else task_at
            if at and _authors_heading(cells[at - 1]):
                cells[at - 1].metadata["autograder"] = {"task": number, "points": points}
            else:
                cells.insert(at, task_cell(number, points, grade_id))
            task_at = None
            if visible:
                cell.source = visible
                cell.metadata["autograder"] = {"check": True}
                cell.outputs = []
                cells.append(cell)
            tests.append(CellTest(grade_id, number, points, f"nbgrader test cell {grade_id} passes", whole))
        else:
            if cell.cell_type == "code":
                plain_code.append(cell)
            cells.append(cell)
    if not number:
        raise InteropError(f"{source_notebook}: no graded nbgrader cells (metadata.nbgrader with points)")
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata), cells=cells)
    for cell in out.cells:
        cell.pop("id", None)
    out.nbformat_minor = 4
    title = source_notebook.stem.replace("_", " ")
    return write_week(out, week=week, title=title, tool="nbgrader", origin=source_notebook.name,
                      prelude=notebook_imports(plain_code), tests=tests, out_root=out_root)
