"""The week-1 assignment as an nbgrader course and as an otter autograder, and their runs.

Both run the SAME hidden tests (``source/week01/tests``) inside the notebook's kernel, one
pytest run per task, with ``student`` bound to the kernel's namespace: what an nbgrader or
otter author would do with these tests. Points are all-or-nothing per task there (the
timing, not the marks, is compared). Each tool lives in its own virtualenv under
``benchmarks/.venvs/`` with the same numpy/scipy/scikit-learn/matplotlib as ours.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
VENVS = Path(__file__).resolve().parent / ".venvs"
TESTS = ROOT / "source" / "week01" / "tests"
TASKS = {1: ("test_week01_perceptron.py", 30), 2: ("test_week01_sklearn.py", 30)}
PINNED = ["numpy==2.4.6", "scipy==1.17.1", "scikit-learn==1.9.1", "matplotlib==3.11.2", "pytest"]
PACKAGES = {"nbgrader": ["nbgrader"], "otter": ["otter-grader", "ipykernel"]}  # otter does not pull in a kernel

STUDENT_SHIM = f'''
import sys as _sys
if {str(ROOT)!r} not in _sys.path:  # the hidden tests import autograder.testing (numpy only)
    _sys.path.insert(0, {str(ROOT)!r})
import pytest as _pytest
class _Student:
    def __init__(self, ns): self._ns = ns
    def __getattr__(self, name):
        if name.startswith("__"): raise AttributeError(name)
        try: return self._ns[name]
        except KeyError: raise AttributeError(name) from None
    def __contains__(self, name): return name in self._ns
    def typename(self, obj): return type(obj).__name__
    def same(self, a, b): return a is b
class _Bind:
    def __init__(self, ns): self.ns = ns
    @_pytest.fixture
    def student(self): return _Student(self.ns)
def _run_task(path, ns):
    return _pytest.main([path, "-q", "-p", "no:cacheprovider", "-p", "no:autograder", "--assert=plain",
                         "-W", "ignore", "--import-mode=importlib"], plugins=[_Bind(ns)])
'''


def venv(tool: str) -> Path:
    """The tool's virtualenv, created and filled on first use; its bin folder."""
    bin_dir = VENVS / tool / "bin"
    stamp = VENVS / tool / ".installed"
    if not stamp.exists():
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(VENVS / tool)], check=True)
        subprocess.run([str(bin_dir / "pip"), "install", "-q", *PACKAGES[tool], *PINNED], check=True)
        stamp.touch()
    return bin_dir


def tool_env(tool: str) -> dict[str, str]:
    """The environment to run a tool in: its venv's bin first on PATH.

    nbgrader runs the ``alembic`` executable by name to check its database schema, and
    otter and nbgrader start the ``python3`` kernel by name: without the venv's bin on
    PATH the first fails (``nbgrader db assignment add`` exits 1) and the second could
    pick another interpreter.
    """
    bin_dir = venv(tool)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(bin_dir.parent)}


def _code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


# -- nbgrader ------------------------------------------------------------------------------
def _nbgrader_test_cell(task: int) -> nbformat.NotebookNode:
    file, points = TASKS[task]
    cell = nbformat.v4.new_code_cell(
        STUDENT_SHIM + f"assert _run_task({str(TESTS / file)!r}, globals()) == 0, 'a check of task {task} failed'")
    cell.pop("id", None)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "points": points,
                                 "grade_id": f"task{task}", "schema_version": 3}
    return cell


def _nbgrader_notebook(cells: list[str]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for index, source in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        cell.pop("id", None)
        if "### BEGIN SOLUTION" in source:  # only the reference has these
            cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False,
                                         "grade_id": f"solution{index}", "schema_version": 3}
        notebook.cells.append(cell)
    notebook.cells += [_nbgrader_test_cell(1), _nbgrader_test_cell(2)]
    notebook.nbformat_minor = 4
    return notebook


def nbgrader_course(course: Path, submissions: list[Path]) -> None:
    """An nbgrader course: the reference as source, each submission under submitted/."""
    shutil.rmtree(course, ignore_errors=True)
    (course / "source" / "week01").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'bench'\n"
        f"c.CourseDirectory.root = {str(course)!r}\nc.ExecutePreprocessor.timeout = 120\n")
    reference = _code_cells(ROOT / "source" / "week01" / "week01.ipynb")
    nbformat.write(_nbgrader_notebook(reference), course / "source" / "week01" / "week01.ipynb")
    for path in submissions:
        folder = course / "submitted" / path.stem / "week01"
        folder.mkdir(parents=True)
        nbformat.write(_nbgrader_notebook(_code_cells(path)), folder / "week01.ipynb")


def nbgrader_argv(course: Path) -> tuple[list[list[str]], list[str]]:
    """Commands to prepare (generate the assignment, once) and to time (autograde all)."""
    bin_dir = venv("nbgrader")
    prepare = [[str(bin_dir / "nbgrader"), "db", "assignment", "add", "week01"],
               [str(bin_dir / "nbgrader"), "generate_assignment", "week01", "--force"]]
    return prepare, [str(bin_dir / "nbgrader"), "autograde", "week01", "--force", "--create"]


def nbgrader_times(course: Path) -> list[float]:
    """Per-submission seconds, from the order autograded notebooks were written."""
    written = sorted(p.stat().st_mtime for p in (course / "autograded").glob("*/week01/week01.ipynb"))
    return [b - a for a, b in zip(written, written[1:])]


# -- otter ---------------------------------------------------------------------------------
def otter_autograder(zip_path: Path) -> None:
    """An otter autograder zip: exception-based test files, one per task."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr("otter_config.json", json.dumps({"lang": "python"}))
        archive.writestr("requirements.txt", "")
        for task, (file, points) in TASKS.items():
            archive.writestr(f"tests/task{task}.py", (
                "from otter.test_files import test_case\nOK_FORMAT = False\n"
                f"name = 'task{task}'\npoints = {points}\n" + STUDENT_SHIM +
                f"@test_case(points={points})\ndef test_task{task}(env):\n"
                f"    assert _run_task({str(TESTS / file)!r}, env) == 0, 'a check of task {task} failed'\n"))


def otter_argv(zip_path: Path, notebook: Path, out: Path) -> list[str]:
    bin_dir = venv("otter")
    return [str(bin_dir / "otter"), "run", "-a", str(zip_path), "-o", str(out), str(notebook)]
