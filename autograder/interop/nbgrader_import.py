"""``autograder import nbgrader SOURCE_NOTEBOOK``: an nbgrader source notebook as a week.

nbgrader keeps everything in cell metadata (``metadata.nbgrader``: ``solution``,
``grade``, ``task``, ``points``, ``grade_id``). Mapping (docs/INTEROP.md has the table):

- solution code cell -> a code cell with ``### BEGIN SOLUTION`` regions (nbgrader's own
  markers; a cell without markers is one region, as nbgrader replaces it whole);
- autograded test cell -> a task worth its points, whose heading goes before the
  solution cells that precede the test and the instructions before them (the author's
  own ``##`` heading there becomes the task heading); the cell becomes one hidden test (hidden tests included, markers
  dropped) and its visible part stays as a public check cell;
- manually graded answer (markdown) -> a task graded by hand and its model answer;
- manually graded code cell -> a task graded by hand around the cell, which students
  get as nbgrader gives it (solution regions stubbed), and a model-answer cell pointing
  at it; a task cell -> a task graded by hand, its text kept, with a model-answer cell
  for the instructor to fill (nbgrader has none).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from autograder.authoring import ANSWER_HEADING, TASK_HEADING, first_line
from autograder.authoring.markers import BEGIN, END
from autograder.interop.importing import Imported, import_week
from autograder.interop.report import ImportReport, where
from autograder.interop.week_writer import (
    CellTest,
    ImportedWeek,
    TestCell,
    current_format,
    indent_markers,
    model_answer,
    notebook_imports,
    retitle_task,
    task_cell,
    title_cell,
    wrap_solution,
)

HIDDEN_BEGIN = re.compile(r"^\s*#+\s*BEGIN HIDDEN TESTS\s*$")
HIDDEN_END = re.compile(r"^\s*#+\s*END HIDDEN TESTS\s*$")
SOLUTION_MARKER = re.compile(r"^(\s*)#+\s*(BEGIN|END) SOLUTION\s*$")
AUTOTEST = re.compile(r"^\s*#+\s*(?:HASHED\s+)?AUTOTEST\b", re.IGNORECASE | re.MULTILINE)
RELEASED = re.compile(r"^\s*#\s*YOUR CODE HERE\s*\n\s*raise NotImplementedError\(\)\s*$", re.IGNORECASE | re.MULTILINE)
CODE_ANSWER = "The code cell above: its solution is the model answer (nbgrader graded it by hand)."
NO_ANSWER = "(nbgrader's task cell gave no model answer: write the one markers compare against.)"


def kernel_language(nb: NotebookNode) -> str:
    """The programming language of the notebook's kernel, lower case ("python", "r")."""
    spec = nb.metadata.get("kernelspec", {})
    info = nb.metadata.get("language_info", {})
    return str(spec.get("language") or info.get("name") or "python").lower()


def refuse_other_kernels(nb: NotebookNode, report: ImportReport) -> None:
    """Only Python notebooks grade here: an R or Julia notebook is refused by name."""
    if kernel_language(nb) != "python":
        name = nb.metadata.get("kernelspec", {}).get("name", "?")
        report.problems.append(f"the notebook runs on the {kernel_language(nb)!r} kernel ({name!r}): only Python "
                               "notebooks can be imported, since student code and hidden tests run as Python")


def _meta(cell: NotebookNode) -> dict[str, Any]:
    meta: dict[str, Any] = cell.get("metadata", {}).get("nbgrader", {})
    return meta


def solution_source(source: str, cell: int, report: ImportReport) -> str:
    """nbgrader's markers respelled exactly as ours; a cell without any is one region."""
    lines = source.split("\n")
    if any(SOLUTION_MARKER.match(line) for line in lines):
        source = "\n".join(
            f"{m.group(1)}{BEGIN if m.group(2) == 'BEGIN' else END}" if (m := SOLUTION_MARKER.match(line)) else line
            for line in lines)
    elif RELEASED.search(source):
        report.problems.append(f"{where(cell)}: holds nbgrader's stub (# YOUR CODE HERE) where the solution goes: "
                               "import the source notebook, the one with the solutions, not the released one")
        return source
    else:
        source = wrap_solution(source)
    source, moved = indent_markers(source)
    for line in moved:
        report.note("changed", where(cell, line), "the solution markers sat shallower than the code they enclose "
                    "(the stub there would not compile); indented with it")
    return source


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
    line = first_line(cell)
    return (cell.cell_type == "markdown" and line.startswith("##")
            and not TASK_HEADING.match(line) and not ANSWER_HEADING.match(line))


def _prose(cell: NotebookNode) -> bool:
    """Markdown that is not a heading: the instructions introducing what follows."""
    return cell.cell_type == "markdown" and not first_line(cell).startswith("#")


def _open_task(cells: list[NotebookNode], at: int, number: int, points: float, title: str, *,
               manual: bool = False) -> None:
    """Open task ``number`` at ``at``, before the prose introducing it, so its instructions
    fall in its own section (where students and markers look); the author's own ``##``
    heading there becomes the task heading."""
    while at and _prose(cells[at - 1]):
        at -= 1
    if at and _authors_heading(cells[at - 1]):
        retitle_task(cells[at - 1], number, points, manual=manual)
    else:
        cells.insert(at, task_cell(number, points, title, manual=manual))


def build_nbgrader(source_notebook: Path, report: ImportReport, week: str) -> ImportedWeek:
    """The week an nbgrader source notebook becomes; problems go to ``report``."""
    nb = nbformat.read(source_notebook, as_version=4)
    refuse_other_kernels(nb, report)
    cells: list[NotebookNode] = []
    tests: list[CellTest] = []
    plain_code: list[NotebookNode] = []
    test_code: list[NotebookNode] = []  # nbgrader runs test cells in one kernel: a later one sees their imports
    total = 0.0
    number = 0
    task_at: int | None = None  # where the next autograded task's heading goes
    for index, original in enumerate(nb.cells):
        cell = copy.deepcopy(original)
        meta = cell.metadata.pop("nbgrader", {})
        grade, solution, task = bool(meta.get("grade")), bool(meta.get("solution")), bool(meta.get("task"))
        grade_id = str(meta.get("grade_id", f"cell{index + 1}"))
        points = float(meta.get("points", 0) or 0)
        if task or (grade and solution):
            number += 1
            total += points
            if task:  # the task cell states the task itself
                cells.append(task_cell(number, points, grade_id, manual=True))
            else:
                _open_task(cells, len(cells), number, points, grade_id, manual=True)
            if cell.cell_type == "markdown" and solution:
                cell.source = model_answer(cell.source)
            elif cell.cell_type == "code":
                cell.source = solution_source(cell.source, index, report)
                cells += [cell, nbformat.v4.new_markdown_cell(model_answer(CODE_ANSWER))]
                continue
            else:
                cells += [cell, nbformat.v4.new_markdown_cell(model_answer(NO_ANSWER))]
                report.note("instructor", where(index), f"task cell {grade_id!r}: nbgrader has no model answer for "
                            "it; the week has a '### Model answer' cell after it for you to fill")
                continue
            cells.append(cell)
        elif solution and cell.cell_type == "code":
            task_at = len(cells) if task_at is None else task_at
            cell.source = solution_source(cell.source, index, report)
            cells.append(cell)
        elif grade and cell.cell_type == "code":
            number += 1
            total += points
            visible, whole = split_hidden(cell.source)
            if autotest := AUTOTEST.search(cell.source):
                report.problems.append(
                    f"{where(index, cell.source[:autotest.start()].count(chr(10)))}: test cell {grade_id!r} uses "
                    "nbgrader's `### AUTOTEST` directives, which only nbgrader expands into checks: here they are "
                    "comments, and the test would pass for everyone. Write the checks out as asserts comparing with "
                    "the right values (`assert squares(1) == [1]`), import again")
            _open_task(cells, len(cells) if task_at is None else task_at, number, points, grade_id)
            task_at = None
            if visible:
                cell.source = visible
                cell.metadata["autograder"] = {"check": True}
                cell.outputs = []
                cells.append(cell)
            tests.append(CellTest(grade_id, number, points, f"nbgrader test cell {grade_id} passes",
                                  (TestCell(whole),)))
            test_code.append(nbformat.v4.new_code_cell(whole))
        else:
            if cell.cell_type == "code":
                plain_code.append(cell)
            cells.append(cell)
    if not number:
        report.problems.append("no graded nbgrader cells (metadata.nbgrader with points)")
    elif tests:
        report.note("instructor", "test cells", f"nbgrader gives test cells no description, so students read "
                    f"'nbgrader test cell <grade_id> passes' for each of the {len(tests)} hidden tests: edit their "
                    "docstrings to say what each checks")
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    out.cells = cells  # not through new_notebook, which validates as 4.5 before the cells have ids
    title = title_cell(out, week, source_notebook.stem.replace("_", " "), total)
    return ImportedWeek(notebook=current_format(out), title=title, tool="nbgrader", origin=source_notebook.name,
                        prelude=notebook_imports(plain_code + test_code), tests=tests, language="", data_files=[])


def import_nbgrader(notebook: Path, *, week: str, out_root: Path, language: str | None = None) -> Imported:
    """Convert ``notebook``, check the week, write ``out_root/source/<week>/`` (docs/INTEROP.md)."""
    return import_week(build_nbgrader, notebook, week=week, out_root=out_root, language=language)
