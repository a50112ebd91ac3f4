"""Writing an imported week: the source notebook, its hidden tests, ``week.toml`` and data.

Everything the week declares is written once, as text an instructor edits in one place:
the title cell ``# Week 7: title (P points)``, each task's heading ``## Task N (P points):
title`` (``by hand`` for manual tasks) and a ``### Model answer`` heading on each model
answer (``autograder.authoring`` reads them; generation writes the metadata). No
metadata repeats them, so one edit is one change.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager
from nbformat import NotebookNode
from nbformat.validator import normalize
from nbformat.warnings import MissingIDFieldWarning

from autograder.authoring import ANSWER_HEADING, number
from autograder.authoring.markers import BEGIN, END
from autograder.authoring.notebook_io import to_bytes
from autograder.course_languages import WEEK_SETTINGS_FILE
from autograder.formats.atomic import copy_file, write_bytes, write_text

TITLE_LINE = re.compile(r"^#\s+(.+?)\s*$")


@dataclass(frozen=True)
class TestCell:
    """One original test cell: its code, and what it must print when otter compares output."""

    source: str
    expected_output: str | None = None  # None: no comparison (nbgrader: the cell must only not raise)
    failure_message: str | None = None  # otter's failure_message: said when the cell fails


@dataclass(frozen=True)
class CellTest:
    """One hidden pytest test: the original test cells it runs, in order (several only for
    otter's ``all_or_nothing`` questions, which score all or none of their points)."""

    name: str  # grade_id or question name + index: becomes test_<name>
    task: int
    points: float
    description: str  # shown to the student: what the test checks
    cells: tuple[TestCell, ...]


@dataclass
class ImportedWeek:
    """What an importer built, before anything is written."""

    notebook: NotebookNode
    title: str
    tool: str
    origin: str
    prelude: str
    tests: list[CellTest]
    language: str
    data_files: list[Path]  # files the notebook reads, copied into the week's data/
    # the course's own modules beside the original notebook: path in the week's folder -> the file
    helpers: dict[str, Path] = field(default_factory=dict)
    handout: list[str] = field(default_factory=list)  # helpers the student notebook imports: handed out too


def points_text(points: float) -> str:
    """Points as a heading or marker writes them: exact, so shares like 1/3 add up again."""
    return str(number(points))


def task_cell(number_: int, points: float, title: str, *, manual: bool = False) -> NotebookNode:
    """The markdown cell that opens a task: its heading is its only declaration."""
    kind = f"{points_text(points)} points, by hand" if manual else f"{points_text(points)} points"
    cell: NotebookNode = nbformat.v4.new_markdown_cell(f"## Task {number_} ({kind}): {title}")
    return cell


def retitle_task(cell: NotebookNode, number_: int, points: float, *, manual: bool = False) -> None:
    """The author's own ``## ...`` heading made task ``number_``'s heading, its text kept."""
    first, _, rest = cell.source.lstrip().partition("\n")
    heading = task_cell(number_, points, first.lstrip("#").strip(), manual=manual).source
    cell.source = heading + (f"\n{rest}" if rest else "")


def model_answer(source: str) -> str:
    """A markdown model answer under the heading that declares it one."""
    lines = source.lstrip().splitlines()
    if lines and ANSWER_HEADING.match(lines[0]):
        return source
    return f"### Model answer\n\n{source.strip()}"


def wrap_solution(source: str) -> str:
    """A whole cell as one solution region (nbgrader and otter replace such cells whole)."""
    return f"{BEGIN}\n{source.rstrip()}\n{END}"


def python_source(source: str) -> str:
    """A notebook cell as the Python IPython runs: magics and shell escapes (``%matplotlib
    inline``, ``!pip ...``) turned into calls by IPython's own transformers, so that the
    cell's imports beside them are read too. A cell that is Python already is unchanged
    (a line magic becomes one line: line numbers stay those of the cell)."""
    try:
        ast.parse(source)
    except SyntaxError:
        return str(TransformerManager().transform_cell(source)).rstrip("\n")
    return source


def notebook_imports(cells: list[NotebookNode]) -> str:
    """The top-level import statements of the given code cells, in order, once each."""
    lines: list[str] = []
    for cell in cells:
        try:
            tree = ast.parse(python_source(cell.source))
        except SyntaxError:
            continue  # not Python even to IPython: the author's choice, no imports we could reuse
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                line = ast.unparse(node)
                if line not in lines:
                    lines.append(line)
    return "\n".join(lines)


def current_format(nb: NotebookNode) -> NotebookNode:
    """The notebook as nbformat 4.5, whatever minor version (4.0 to 4.5) the original was:
    cells the original gave ids keep them, every other cell (from a 4.4 notebook, or one the
    import wrote: the title, task headings, check cells) gets one, as nbformat normalises."""
    nb.nbformat_minor = 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingIDFieldWarning)
        _, normal = normalize(nb)
    current: NotebookNode = nbformat.from_dict(normal)
    return current


def python_name(text: str) -> str:
    """``text`` as a Python identifier, for a test function's name."""
    name = re.sub(r"\W+", "_", text).strip("_").lower()
    return name if name and not name[0].isdigit() else f"cell_{name}"


def literal(text: str) -> str:
    """A readable string literal for ``text``: raw triple quotes when that spells it exactly
    (not when it holds or ends with a quote or ends with a backslash), else repr."""
    if "'''" not in text and not text.endswith(("\\", "'")) and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


def tests_module(tool: str, origin: str, prelude: str, tests: list[CellTest]) -> str:
    """The hidden test module's source."""
    out = [
        f'"""Hidden tests converted from the {tool} test cells of {origin} by `autograder import {tool}`.',
        "",
        "Each test runs original test cells in the grader; the names they use come from the",
        "notebook's imports (PRELUDE) or from the submission (docs/INTEROP.md says how and its limits).",
        '"""',
        "",
        "import pytest",
        "",
        "from autograder.interop.cell_test import run_cell",
        "",
        f"PRELUDE = {literal(prelude)}",
    ]
    used: set[str] = set()
    for test in tests:
        name = f"test_{python_name(test.name)}"
        while name in used:
            name += "_"
        used.add(name)
        out += ["", "", f"@pytest.mark.task({test.task})", f"@pytest.mark.points({points_text(test.points)})",
                f"def {name}(student):", f"    {test.description!r}"]
        for cell in test.cells:
            message = "" if cell.failure_message is None else f", failure_message={cell.failure_message!r}"
            expected = "" if cell.expected_output is None else f", expected_output={literal(cell.expected_output)}"
            out.append(f"    run_cell(student, PRELUDE, {literal(cell.source)}{expected}{message})")
    return "\n".join(out) + "\n"


def written_files(notebook: Path, tool: str) -> list[Path]:
    """The files ``write_week`` writes for the week of ``notebook`` (data files aside)."""
    folder = notebook.parent
    return [notebook, folder / "tests" / f"test_{notebook.stem}_{tool}.py", folder / WEEK_SETTINGS_FILE]


def title_cell(nb: NotebookNode, week: str, title: str, total: float) -> str:
    """Open the notebook with its title cell; the author's own ``# Title`` line becomes it.
    Returns the title used."""
    heading = f"# Week {int(week.removeprefix('week'))}: {{}} ({points_text(total)} points)"
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if first is not None and (m := TITLE_LINE.match(first.source.lstrip().split("\n", 1)[0])) and \
            not first.source.lstrip().startswith("##"):
        title = m.group(1)
        rest = first.source.lstrip().partition("\n")[2]
        first.source = heading.format(title) + (f"\n{rest}" if rest else "")
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(heading.format(title)))
    return title


def week_settings(imported: ImportedWeek) -> str:
    """``week.toml``: the week's language and, when the course has helper modules, its
    ``[files]`` (docs/AUTHORING.md, "A week's own files")."""
    text = (f"# The week's languages: it starts in the language it was written in.\n[languages]\n"
            f"source = {json.dumps(imported.language)}\noffered = [{json.dumps(imported.language)}]\n")
    if imported.helpers:
        text += ("\n# The course's own modules, found beside the imported notebook: importable while grading, and "
                 "handed out\n# when the student notebook imports them.\n[files]\n"
                 f"helpers = {json.dumps(sorted(imported.helpers))}\n")
        if imported.handout:
            text += f"handout = {json.dumps(sorted(imported.handout))}\n"
    return text


def write_week(imported: ImportedWeek, *, week: str, out_root: Path) -> Path:
    """Write ``out_root/source/<week>/``: notebook, hidden tests, week.toml, data; return the notebook."""
    nb = imported.notebook
    nb.metadata.pop("autograder", None)
    folder = out_root / "source" / week
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    notebook, module, settings = written_files(folder / f"{week}.ipynb", imported.tool)
    write_bytes(notebook, to_bytes(nb, path=notebook))
    write_text(module, tests_module(imported.tool, imported.origin, imported.prelude, imported.tests))
    write_text(settings, week_settings(imported))
    for relative, path in imported.helpers.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        copy_file(path, folder / relative)
    for path in imported.data_files:
        (folder / "data").mkdir(exist_ok=True)
        copy_file(path, folder / "data" / path.name)
    return notebook


def indent_markers(source: str) -> tuple[str, list[int]]:
    """``source`` with each solution region's markers indented as deep as the region's own
    lines when they sit shallower (nbgrader and otter put their stub where the BEGIN
    marker is: at column 0 inside a loop body that stub does not compile). Returns the new
    source and the 0-based lines of the BEGIN markers moved."""
    lines = source.split("\n")
    moved = []
    begin: int | None = None
    for index, line in enumerate(lines):
        if line.strip() == BEGIN:
            begin = index
        elif line.strip() == END and begin is not None:
            body = [text for text in lines[begin + 1:index] if text.strip()]
            prefix = min((text[:len(text) - len(text.lstrip())] for text in body), key=len, default="")
            if len(prefix) > len(lines[begin]) - len(lines[begin].lstrip()):
                lines[begin], lines[index] = prefix + BEGIN, prefix + END
                moved.append(begin)
            begin = None
    return "\n".join(lines), moved
