"""Writing an imported week: the source notebook and one hidden test module of cell tests."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.generate.markers import BEGIN, END
from autograder.generate.notebook_io import to_bytes


@dataclass(frozen=True)
class CellTest:
    """One test cell of the original notebook, to become one hidden pytest test."""

    name: str  # grade_id or question name + index: becomes test_<name>
    task: int
    points: float
    description: str  # shown to the student: what the test checks
    source: str
    expected_output: str | None = None  # otter's recorded output, when it compares output


def task_cell(number: int, points: float, title: str, *, manual: bool = False) -> NotebookNode:
    """The markdown cell that opens a task: heading and metadata agree."""
    kind = f"{points:g} points, graded by hand" if manual else f"{points:g} points"
    cell: NotebookNode = nbformat.v4.new_markdown_cell(f"## Task {number} ({kind}): {title}")
    cell.metadata["autograder"] = {"task": number, "points": points, **({"manual": True} if manual else {})}
    return cell


def wrap_solution(source: str) -> str:
    """A whole cell as one solution region (nbgrader and otter replace such cells whole)."""
    return f"{BEGIN}\n{source.rstrip()}\n{END}"


def notebook_imports(cells: list[NotebookNode]) -> str:
    """The top-level import statements of the given code cells, in order, once each."""
    lines: list[str] = []
    for cell in cells:
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue  # IPython magics: not Python, and no imports we could reuse
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                line = ast.unparse(node)
                if line not in lines:
                    lines.append(line)
    return "\n".join(lines)


def python_name(text: str) -> str:
    """``text`` as a Python identifier, for a test function's name."""
    name = re.sub(r"\W+", "_", text).strip("_").lower()
    return name if name and not name[0].isdigit() else f"cell_{name}"


def _literal(text: str) -> str:
    """A readable string literal for ``text``: raw triple quotes when safe, else repr."""
    if "'''" not in text and not text.endswith("\\") and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


def tests_module(tool: str, origin: str, prelude: str, tests: list[CellTest]) -> str:
    """The hidden test module's source."""
    out = [
        f'"""Hidden tests converted from the {tool} test cells of {origin} by `autograder import {tool}`.',
        "",
        "Each test runs one original test cell in the grader; the names it uses come from the",
        "notebook's imports (PRELUDE) or from the submission (docs/INTEROP.md says how and its limits).",
        '"""',
        "",
        "import pytest",
        "",
        "from autograder.interop.cell_test import run_cell",
        "",
        f"PRELUDE = {_literal(prelude)}",
    ]
    used: set[str] = set()
    for test in tests:
        name = f"test_{python_name(test.name)}"
        while name in used:
            name += "_"
        used.add(name)
        expected = "" if test.expected_output is None else f", expected_output={_literal(test.expected_output)}"
        out += [
            "",
            "",
            f"@pytest.mark.task({test.task})",
            f"@pytest.mark.points({test.points:g})",
            f"def {name}(student):",
            f"    {repr(test.description)}",
            f"    run_cell(student, PRELUDE, {_literal(test.source)}{expected})",
        ]
    return "\n".join(out) + "\n"


def written_files(notebook: Path, tool: str) -> list[Path]:
    """The files ``write_week`` writes for the week of ``notebook``: the notebook and its tests."""
    return [notebook, notebook.parent / "tests" / f"test_{notebook.stem}_{tool}.py"]


def write_week(nb: NotebookNode, *, week: str, title: str, tool: str, origin: str, prelude: str,
               tests: list[CellTest], out_root: Path) -> Path:
    """Write ``out_root/source/<week>/<week>.ipynb`` and its hidden tests; return the notebook."""
    nb.metadata["autograder"] = {"week": week, "title": title}
    folder = out_root / "source" / week
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    notebook = folder / f"{week}.ipynb"
    notebook.write_bytes(to_bytes(nb, path=notebook))
    module = written_files(notebook, tool)[1]
    module.write_text(tests_module(tool, origin, prelude, tests), encoding="utf-8")
    return notebook
