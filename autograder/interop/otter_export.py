"""``autograder export otter WEEK``: a week as an otter-assign master notebook.

Writes ``<out>/<week>.ipynb`` (otter-assign's format, v1: raw delimiter cells) and a copy
of the hidden tests in ``<out>/hidden_tests/<week>/``, which the assignment config ships
in the autograder zip only (``autograder_files``). Mapping:

- an autograded task -> a question ``task<N>`` whose block runs from the task's heading to
  its last solution cell; each solution cell sits in a ``# BEGIN SOLUTION`` block with our
  ``### BEGIN SOLUTION`` markers respelled as otter's ``# BEGIN SOLUTION`` (otter's stub
  is ``...``, not ``raise NotImplementedError()``);
- each hidden test -> one hidden test case worth the test's points, calling
  ``autograder.interop.kernel.run_hidden_test`` with the notebook's globals;
- a manual task -> a ``manual: true`` question whose solution block is the model answer.

Every test case is hidden, so otter adds no ``grader.check`` cells and runs all tests
after the whole notebook, as we do. Otter's isolation and time limits are weaker than
ours; see docs/INTEROP.md.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.authoring.markers import BEGIN, END, find_regions
from autograder.authoring.notebook_io import read_source, to_bytes
from autograder.course import Week
from autograder.formats.atomic import copy_file, write_bytes
from autograder.interop.grades import question_name
from autograder.interop.kernel import TESTS_FOLDER
from autograder.interop.suite import ExportedTest, collect

_MARKER = re.compile(rf"^(\s*)({re.escape(BEGIN)}|{re.escape(END)})\s*$", re.MULTILINE)


def yaml_lines(config: dict[str, object]) -> str:
    """A flat YAML mapping; each value in JSON, which YAML reads as the same value."""
    return "\n".join(f"{key}: {json.dumps(value)}" for key, value in config.items())


def raw(text: str, config: dict[str, object] | None = None) -> NotebookNode:
    """A raw cell holding an otter directive, with its YAML config if any."""
    cell: NotebookNode = nbformat.v4.new_raw_cell(text if config is None else f"{text}\n{yaml_lines(config)}")
    return cell


def otter_markers(source: str) -> str:
    """``### BEGIN SOLUTION`` -> ``# BEGIN SOLUTION`` (same for END), indentation kept."""
    return _MARKER.sub(lambda m: f"{m.group(1)}{m.group(2)[2:]}", source)


def test_case_source(week: str, test: ExportedTest) -> str:
    """An otter test cell that runs one of our hidden tests in the student's kernel."""
    config = yaml_lines({"points": test.points, "hidden": True})
    return "\n".join([
        '""" # BEGIN TEST CONFIG',
        config,
        '""" # END TEST CONFIG',
        "from autograder.interop.kernel import run_hidden_test",
        f"run_hidden_test({week!r}, {test.file!r}, {test.name!r}, globals())",
    ])


def master_notebook(week: Week, tests: list[ExportedTest]) -> NotebookNode:
    """The week's source notebook rearranged into otter-assign blocks."""
    source = read_source(week.source_notebook)
    cells = source.cells
    tasks = {t.number: t for t in week.tasks}
    heading = {i: int(c.metadata["autograder"]["task"]) for i, c in enumerate(cells)
               if "task" in c.get("metadata", {}).get("autograder", {})}
    answer = {i: int(c.metadata["autograder"]["answer"]) for i, c in enumerate(cells)
              if "answer" in c.get("metadata", {}).get("autograder", {})}
    solution = {i for i, c in enumerate(cells)
                if c.cell_type == "code" and find_regions(c.source, path=week.source_notebook, cell=i)}
    # Where each question ends: its last solution (or answer) cell before the next heading.
    ends: dict[int, int] = {}
    starts = sorted(heading)
    for k, start in enumerate(starts):
        stop = starts[k + 1] if k + 1 < len(starts) else len(cells)
        own = [i for i in range(start, stop) if i in solution or answer.get(i) == heading[start]]
        ends[own[-1] if own else start] = heading[start]

    config = {"name": week.name, "autograder_files": [f"{TESTS_FOLDER}"], "export_cell": False,
              "init_cell": True, "check_all_cell": False}
    out: list[NotebookNode] = [raw("# ASSIGNMENT CONFIG", config)]
    for i, cell in enumerate(cells):
        cell = copy.deepcopy(cell)
        cell.pop("id", None)
        if i in heading:
            task = tasks[heading[i]]
            question: dict[str, object] = {"name": question_name(task.number), "points": task.points}
            if task.manual:
                question["manual"] = True
            out.append(raw("# BEGIN QUESTION", question))
        if i in solution or i in answer:
            out += [raw("# BEGIN SOLUTION"), _with_source(cell, otter_markers(cell.source)), raw("# END SOLUTION")]
        else:
            out.append(cell)
        if i in ends:
            number = ends[i]
            cases = [t for t in tests if t.task == number]
            if cases:
                out.append(raw("# BEGIN TESTS"))
                out += [nbformat.v4.new_code_cell(test_case_source(week.name, t)) for t in cases]
                out.append(raw("# END TESTS"))
            out.append(raw("# END QUESTION"))
    nb: NotebookNode = nbformat.v4.new_notebook(metadata=copy.deepcopy(source.metadata))
    nb.nbformat_minor = 4  # no cell ids: otter assigns its own
    nb.cells = out
    for cell in nb.cells:
        cell.pop("id", None)
    return nb


def _with_source(cell: NotebookNode, text: str) -> NotebookNode:
    cell.source = text
    return cell


def export_otter(week: Week, out_dir: Path) -> Path:
    """Write the otter-assign master notebook and the hidden tests' copy; return the
    master notebook's path."""
    tests = collect(week)
    out_dir.mkdir(parents=True, exist_ok=True)
    master = out_dir / f"{week.name}.ipynb"
    write_bytes(master, to_bytes(master_notebook(week, tests), path=master))
    hidden = out_dir / TESTS_FOLDER / week.name
    if hidden.exists():
        shutil.rmtree(hidden)
    shutil.copytree(week.tests_dir, hidden, ignore=shutil.ignore_patterns("__pycache__", ".*"), copy_function=copy_file)
    return master
