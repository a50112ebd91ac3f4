"""``autograder export nbgrader WEEK``: a week as an nbgrader course directory.

Writes ``<out>/source/<week>/<week>.ipynb`` (nbgrader's source notebook), a copy of the
hidden tests in ``<out>/hidden_tests/<week>/`` (outside ``source/``, so nbgrader never
releases them) and ``<out>/nbgrader_config.py``. Mapping:

- a code cell with ``### BEGIN SOLUTION`` regions -> an nbgrader solution cell (nbgrader
  uses the same markers and the same stub);
- a free-text answer cell of a manual task -> a manually graded answer worth the task's
  points; a manual task without one -> a manually graded task cell;
- each hidden test -> one autograded test cell worth the test's points, appended at the
  end (our tests run after the whole notebook), whose code sits between
  ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS`` and calls
  ``autograder.interop.kernel.run_hidden_test`` with the notebook's globals.

So nbgrader's total is our total, test by test. The kernel running the notebook needs
this package installed (scripts/install-interop does it).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.authoring.markers import find_regions
from autograder.authoring.notebook_io import read_source, to_bytes
from autograder.course import Week
from autograder.formats.atomic import copy_file, write_bytes, write_text
from autograder.interop.kernel import TESTS_FOLDER
from autograder.interop.suite import ExportedTest, collect

SCHEMA_VERSION = 3
# One hidden test cell may fit scikit-learn models several times: nbgrader's default of
# 30 s per cell is too tight on a loaded machine.
CONFIG = '''"""nbgrader settings for this course, written by `autograder export nbgrader`."""
c = get_config()  # noqa: F821 - nbgrader provides it
c.Execute.timeout = {timeout}
'''


def nbgrader_meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
                  task: bool = False, points: float | None = None) -> dict[str, object]:
    """nbgrader's cell metadata (schema 3)."""
    meta: dict[str, object] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": SCHEMA_VERSION,
        "solution": solution,
        "task": task,
    }
    if points is not None:
        meta["points"] = points
    return meta


def test_cell_source(week: str, test: ExportedTest) -> str:
    """The autograded test cell: a visible comment, the call hidden from students."""
    return "\n".join([
        f"# Hidden test ({test.points:g} points): {test.description}",
        "### BEGIN HIDDEN TESTS",
        "from autograder.interop.kernel import run_hidden_test",
        f"run_hidden_test({week!r}, {test.file!r}, {test.name!r}, globals())",
        "### END HIDDEN TESTS",
    ])


def nbgrader_notebook(week: Week, tests: list[ExportedTest]) -> NotebookNode:
    """The week's source notebook with nbgrader metadata and one test cell per hidden test."""
    nb = copy.deepcopy(read_source(week.source_notebook))
    tasks = {t.number: t for t in week.tasks}
    answered = {int(c.metadata["autograder"]["answer"]) for c in nb.cells
                if "answer" in c.get("metadata", {}).get("autograder", {})}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("autograder", {})
        if cell.cell_type == "code" and find_regions(cell.source, path=week.source_notebook, cell=index):
            cell.metadata["nbgrader"] = nbgrader_meta(f"{week.name}_cell{index:02d}", solution=True)
        elif cell.cell_type == "markdown" and "answer" in meta:
            number = int(meta["answer"])
            cell.metadata["nbgrader"] = nbgrader_meta(
                f"task{number}_answer", grade=True, solution=True, points=tasks[number].points)
        elif cell.cell_type == "markdown" and meta.get("manual") and int(meta["task"]) not in answered:
            number = int(meta["task"])
            cell.metadata["nbgrader"] = nbgrader_meta(
                f"task{number}", task=True, locked=True, points=tasks[number].points)
    if tests:
        nb.cells.append(new_cell(nb, nbformat.v4.new_markdown_cell(
            "## Autograder tests\n\nThese cells run the hidden tests; leave them as they are."), "autograder-tests"))
    for test in tests:
        cell = new_cell(nb, nbformat.v4.new_code_cell(test_cell_source(week.name, test)), test.grade_id)
        cell.metadata["nbgrader"] = nbgrader_meta(test.grade_id, grade=True, locked=True, points=test.points)
        nb.cells.append(cell)
    return nb


def new_cell(nb: NotebookNode, cell: NotebookNode, cell_id: str) -> NotebookNode:
    """``cell`` with a stable id under nbformat 4.5 and none before (4.4 forbids ids)."""
    if nb.get("nbformat_minor", 0) >= 5:
        cell["id"] = cell_id
    else:
        cell.pop("id", None)
    return cell


def export_nbgrader(week: Week, out_dir: Path, *, cell_timeout: int = 300) -> Path:
    """Write the nbgrader course directory for ``week`` into ``out_dir``; return the
    source notebook's path. Files already there for this week are replaced."""
    tests = collect(week)
    notebook = out_dir / "source" / week.name / f"{week.name}.ipynb"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    nb = nbgrader_notebook(week, tests)
    write_bytes(notebook, to_bytes(nb, path=notebook))
    for extra in week.source_dir.iterdir():  # data files next to the notebook travel with it
        if extra.name not in {"tests", notebook.name, "__pycache__"} and not extra.name.startswith("."):
            target = notebook.parent / extra.name
            if extra.is_dir():
                shutil.copytree(extra, target, dirs_exist_ok=True, copy_function=copy_file)
            else:
                copy_file(extra, target)
    hidden = out_dir / TESTS_FOLDER / week.name
    if hidden.exists():
        shutil.rmtree(hidden)
    shutil.copytree(week.tests_dir, hidden, ignore=shutil.ignore_patterns("__pycache__", ".*"), copy_function=copy_file)
    config = out_dir / "nbgrader_config.py"
    if not config.exists():
        write_text(config, CONFIG.format(timeout=cell_timeout))
    return notebook
