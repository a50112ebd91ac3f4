"""A week's assignment as an nbgrader course and as an otter autograder, and their runs.

Both run the SAME hidden tests (``source/weekNN/tests``) inside the notebook's kernel, one
pytest run per task (the tests whose ``task`` marker names it), with ``student`` bound to
the kernel's namespace through the project's pytest plugin and codec in-process
(``LocalChannel``, as our nbgrader and otter exports do: the ``seed``, ``rng`` and
``unchanged_inputs`` fixtures of weeks 2-6 come from that plugin): what an nbgrader or
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
import tomllib
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
VENVS = Path(__file__).resolve().parent / ".venvs"
# the grading environment's pins (course.toml [grading.libraries]) and this package (its
# pytest plugin runs in the kernel), as scripts/install-interop installs them
PINS = tomllib.loads((ROOT / "course.toml").read_text())["grading"]["libraries"]
SAME_AS_OURS = [f"{name}=={pinned}" for name, pinned in PINS.items()] + ["-e", str(ROOT)]
PACKAGES = {"nbgrader": ["nbgrader"], "otter": ["otter-grader", "ipykernel"]}  # otter does not pull in a kernel

STUDENT_SHIM = f'''
import sys as _sys
if {str(ROOT)!r} not in _sys.path:  # the hidden tests' own imports (``autograder.i18n``)
    _sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path as _Path
import pytest as _pytest
from autograder.execution.local import LocalChannel as _LocalChannel
from autograder.testing.hidden import pytest_args as _pytest_args, read_markers as _read_markers
from autograder.testing.plugin import CHANNEL_SOURCE as _CHANNEL_SOURCE
class _Bind:
    def __init__(self, ns, task):
        self.channel, self.task = _LocalChannel.onto(ns), task
    def current_channel(self, item): return self.channel
    def current_seed(self): return 0
    @_pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config): config.stash[_CHANNEL_SOURCE] = self
    def pytest_collection_modifyitems(self, config, items):
        items[:] = [item for item in items if _read_markers(item).task == self.task]
def _run_task(tests, task, ns):
    return _pytest.main(_pytest_args(_Path(tests), capture=False), plugins=[_Bind(ns, task)])
'''


def tasks(week: str) -> dict[int, float]:
    """The week's autograded tasks and their points."""
    sys.path.insert(0, str(ROOT))
    from autograder.course import Course

    return {t.number: t.points for t in Course.locate(ROOT).week(week).tasks if not t.manual}


def tests_dir(week: str) -> Path:
    return ROOT / "source" / week / "tests"


def venv(tool: str) -> Path:
    """The tool's virtualenv, created and filled on first use; its bin folder."""
    bin_dir = VENVS / tool / "bin"
    stamp = VENVS / tool / ".installed"
    if not stamp.exists():
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(VENVS / tool)], check=True)
        subprocess.run([str(bin_dir / "pip"), "install", "-q", *PACKAGES[tool], *SAME_AS_OURS], check=True)
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
def _nbgrader_test_cell(week: str, task: int, points: float) -> nbformat.NotebookNode:
    run = f"assert _run_task({str(tests_dir(week))!r}, {task}, globals()) == 0, 'a check of task {task} failed'"
    cell = nbformat.v4.new_code_cell(STUDENT_SHIM + run)
    cell.pop("id", None)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "points": points,
                                 "grade_id": f"task{task}", "schema_version": 3}
    return cell


def _nbgrader_notebook(week: str, cells: list[str]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for index, source in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        cell.pop("id", None)
        if "### BEGIN SOLUTION" in source:  # only the reference has these
            cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False,
                                         "grade_id": f"solution{index}", "schema_version": 3}
        notebook.cells.append(cell)
    notebook.cells += [_nbgrader_test_cell(week, task, points) for task, points in tasks(week).items()]
    notebook.nbformat_minor = 4
    return notebook


def nbgrader_course(course: Path, week: str, submissions: list[Path]) -> None:
    """An nbgrader course: the reference as source, each submission under submitted/."""
    shutil.rmtree(course, ignore_errors=True)
    (course / "source" / week).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'bench'\n"
        f"c.CourseDirectory.root = {str(course)!r}\nc.ExecutePreprocessor.timeout = 120\n")
    reference = _code_cells(ROOT / "source" / week / f"{week}.ipynb")
    nbformat.write(_nbgrader_notebook(week, reference), course / "source" / week / f"{week}.ipynb")
    for path in submissions:
        folder = course / "submitted" / path.stem / week
        folder.mkdir(parents=True)
        nbformat.write(_nbgrader_notebook(week, _code_cells(path)), folder / f"{week}.ipynb")


def nbgrader_argv(course: Path, week: str) -> tuple[list[list[str]], list[str]]:
    """Commands to prepare (generate the assignment, once) and to time (autograde all)."""
    bin_dir = venv("nbgrader")
    prepare = [[str(bin_dir / "nbgrader"), "db", "assignment", "add", week],
               [str(bin_dir / "nbgrader"), "generate_assignment", week, "--force"]]
    return prepare, [str(bin_dir / "nbgrader"), "autograde", week, "--force", "--create"]


def nbgrader_times(course: Path, week: str) -> list[float]:
    """Per-submission seconds, from the order autograded notebooks were written."""
    written = sorted(p.stat().st_mtime for p in (course / "autograded").glob(f"*/{week}/{week}.ipynb"))
    return [b - a for a, b in zip(written, written[1:])]


# -- otter ---------------------------------------------------------------------------------
def otter_autograder(zip_path: Path, week: str) -> None:
    """An otter autograder zip: exception-based test files, one per task."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr("otter_config.json", json.dumps({"lang": "python"}))
        archive.writestr("requirements.txt", "")
        for task, points in tasks(week).items():
            archive.writestr(f"tests/task{task}.py", (
                "from otter.test_files import test_case\nOK_FORMAT = False\n"
                f"name = 'task{task}'\npoints = {points}\n" + STUDENT_SHIM +
                f"@test_case(points={points})\ndef test_task{task}(env):\n"
                f"    assert _run_task({str(tests_dir(week))!r}, {task}, env) == 0, 'a check of task {task} failed'\n"))


def otter_argv(zip_path: Path, notebook: Path, out: Path) -> list[str]:
    bin_dir = venv("otter")
    return [str(bin_dir / "otter"), "run", "-a", str(zip_path), "-o", str(out), str(notebook)]
