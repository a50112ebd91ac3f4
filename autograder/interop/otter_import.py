"""``autograder import otter MASTER_NOTEBOOK``: an otter-assign master notebook as a week.

Otter's format (v1) delimits blocks with raw cells (or, for Colab and Deepnote, markdown
cells fencing them in a ```` ```otter ```` code block): ``# BEGIN QUESTION`` (YAML:
``name``, ``points``, ``manual``, ``all_or_nothing``) ... ``# END QUESTION``, and inside a
question ``# BEGIN SOLUTION``, ``# BEGIN PROMPT`` and ``# BEGIN TESTS`` blocks. Mapping
(docs/INTEROP.md has the table):

- a question -> a task ``## Task N (P points): name``, by hand when ``manual: true``;
- solution code -> our regions (``# BEGIN/END SOLUTION [NO PROMPT]`` respelled, a
  ``# SOLUTION`` line a one-line region, a cell without markers one region); a markdown
  solution -> the model answer of a manual question, kept as given when tagged
  ``otter_include``, else dropped (otter never shows it);
- prompt blocks, inline ``# BEGIN/END PROMPT`` lines, ``# SEED`` lines and ignored
  lines (``# IGNORE``, ``# BEGIN/END IGNORE``) are dropped, as otter drops them from the
  student notebook (our stub is the prompt; our grader seeds each submission itself);
- each test cell -> a hidden test comparing the cell's recorded output as otter's doctest
  does, and a public one (not ``hidden``) also a check cell students run, as they would
  run ``grader.check``; an ``all_or_nothing`` question -> one test running all its cells; points shared
  out as otter shares them; ``success_message`` is the test's description and
  ``failure_message`` its failure;
- otter's own statements (``import otter``, ``grader = otter.Notebook()``,
  ``grader.check(...)``, ``grader.export()``) are dropped, the rest of their cells kept;
- the assignment's ``files`` and ``student_files`` are copied into the week's ``data/``
  and the notebook's literal paths to them rewritten.
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any

import nbformat
import yaml
from nbformat import NotebookNode

from autograder.authoring import ANSWER_HEADING
from autograder.authoring.markers import BEGIN, END
from autograder.interop.importing import Imported, import_week
from autograder.interop.nbgrader_import import refuse_other_kernels
from autograder.interop.report import ImportReport, where
from autograder.interop.week_writer import (
    CellTest,
    ImportedWeek,
    TestCell,
    current_format,
    indent_markers,
    model_answer,
    notebook_imports,
    python_source,
    task_cell,
    title_cell,
    wrap_solution,
)

DELIMITER = re.compile(r"^\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|PROMPT|TESTS)\b", re.IGNORECASE)
MARKER = re.compile(r"^(\s*)#\s*(BEGIN|END) SOLUTION( NO PROMPT)?\s*$")
LINE_SOLUTION = re.compile(r"^(\s*)(.*?)\s*# ?SOLUTION( NO PROMPT)?\s*$")
PROMPT_LINE = re.compile(r"#\s*(BEGIN|END) PROMPT\s*$")  # at a line's end: `_ = """ # BEGIN PROMPT`
IGNORE_BEGIN = re.compile(r"^\s*#\s*BEGIN\s*IGNORE\s*$", re.IGNORECASE)
CONFIG_BEGIN = re.compile(r'^(?:.\s*=\s*)?"""?\s*#\s*BEGIN\s*TEST\s*CONFIG', re.IGNORECASE)
CONFIG_END = re.compile(r'^"""?\s*#\s*END\s*TEST\s*CONFIG', re.IGNORECASE)
FENCE_OPEN = re.compile(r"^\s*```\s*(otter)?\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")
IGNORE_LINE = re.compile(r"^\s*#\s*(BEGIN|END)\s*IGNORE\s*$", re.IGNORECASE)
IGNORE_MARK = re.compile(r"\s*#\s*IGNORE\s*$")
INCLUDE_TAG = "otter_include"
V0_QUESTION = re.compile(r"^BEGIN QUESTION\s*$", re.MULTILINE)  # format v0: in a markdown cell's ``` block
IGNORED = "otter removes it from every notebook it writes"
CODE_ANSWER = "The code cell above: its solution is the model answer (otter graded it by hand)."
NO_ANSWER = "(otter's question gave no solution: write the model answer markers compare against.)"


def unfence(cells: list[NotebookNode]) -> list[tuple[int, NotebookNode]]:
    """Markdown cells holding delimiters in ```` ```otter ```` code blocks (otter's form for
    Colab and Deepnote) split into the raw delimiter cells and the markdown around them;
    each cell with the index of the original cell it comes from."""
    out: list[tuple[int, NotebookNode]] = []
    for origin, cell in enumerate(cells):
        lines = cell.source.split("\n")
        if cell.cell_type != "markdown" or not any(FENCE_OPEN.match(line) for line in lines):
            out.append((origin, cell))
            continue
        text: list[str] = []
        index = 0
        while index < len(lines):
            opened = FENCE_OPEN.match(lines[index])
            close = next((j for j in range(index + 1, len(lines)) if FENCE_CLOSE.match(lines[j])), None)
            body = lines[index + 1:close] if close is not None else []
            is_delimiter = bool(body) and (DELIMITER.match(body[0]) or "ASSIGNMENT CONFIG" in body[0].upper())
            if opened and close is not None and (opened.group(1) or is_delimiter):
                if "".join(text).strip():
                    out.append((origin, nbformat.v4.new_markdown_cell("\n".join(text).strip())))
                out.append((origin, nbformat.v4.new_raw_cell("\n".join(body))))
                text, index = [], close + 1
            else:
                text.append(lines[index])
                index += 1
        if "".join(text).strip():
            out.append((origin, nbformat.v4.new_markdown_cell("\n".join(text).strip())))
    return out


def strip_lines(source: str, cell: int, report: ImportReport) -> str:
    """Without otter's ignored lines, ``# SEED`` lines and inline prompt blocks (each noted)."""
    kept: list[str] = []
    block: str | None = None
    for index, line in enumerate(source.split("\n")):
        text = line.rstrip()
        if block == "IGNORE":
            block = None if text.endswith("# END IGNORE") else block
            continue
        if block == "PROMPT":
            block = None if PROMPT_LINE.search(text) else block
            continue
        if IGNORE_BEGIN.match(text):
            block = "IGNORE"
            report.note("dropped", where(cell, index), f"a # BEGIN IGNORE block ({IGNORED})")
        elif PROMPT_LINE.search(text):
            block = "PROMPT"
            report.note("dropped", where(cell, index), "an inline prompt block (generation writes our stub there)")
        elif text.endswith("# IGNORE"):
            report.note("dropped", where(cell, index), f"{line.strip()!r} (# IGNORE: {IGNORED})")
        elif text.endswith("# SEED"):
            report.note("dropped", where(cell, index), f"{line.strip()!r} (# SEED: the grader seeds each "
                        "submission itself, the `seed` fixture of the hidden tests)")
        else:
            kept.append(line)
    return "\n".join(kept)


def solution_source(source: str, cell: int, report: ImportReport) -> str:
    """An otter solution cell with our ``### BEGIN/END SOLUTION`` markers."""
    lines = source.split("\n")
    if not any(MARKER.match(line) or LINE_SOLUTION.match(line) for line in lines):
        return wrap_solution(source)
    out = []
    for line in lines:
        if m := MARKER.match(line):
            out.append(f"{m.group(1)}{BEGIN if m.group(2) == 'BEGIN' else END}")
        elif m := LINE_SOLUTION.match(line):
            out += [f"{m.group(1)}{BEGIN}", f"{m.group(1)}{m.group(2)}", f"{m.group(1)}{END}"]
        else:
            out.append(line)
    marked, moved = indent_markers("\n".join(out))
    for at in moved:
        report.note("changed", where(cell, at), "the solution markers sat shallower than the code they enclose "
                    "(the stub there would not compile); indented with it")
    return marked


def without_otter(source: str, cell: int, report: ImportReport) -> str:
    """The cell without otter's own statements (``import otter``, ``grader = otter.Notebook()``,
    ``grader.check(...)``, ``grader.export()``): the course's imports beside them stay."""
    lines = source.split("\n")
    python = python_source(source)
    try:
        tree = ast.parse(python)
    except SyntaxError:
        return source
    if python.count("\n") != source.count("\n"):
        return source  # a cell magic: the whole cell is one call, no otter statement of its own
    drop: set[int] = set()
    for node in tree.body:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        imported = {a.name for a in node.names} if isinstance(node, (ast.Import, ast.ImportFrom)) else set()
        module = node.module if isinstance(node, ast.ImportFrom) else None
        if names & {"otter", "grader"} or "otter" in imported or (module or "").startswith("otter"):
            assert node.end_lineno is not None
            drop.update(range(node.lineno - 1, node.end_lineno))
            report.note("dropped", where(cell, node.lineno - 1), f"{lines[node.lineno - 1].strip()!r} (otter's own "
                        "statement: the grader checks and collects submissions itself)")
    return "\n".join(line for i, line in enumerate(lines) if i not in drop).strip()


def recorded_output(cell: NotebookNode) -> str:
    """What the master notebook printed: otter's expected doctest output."""
    text = ""
    for output in cell.get("outputs", []):
        text += "".join(output.get("text", ""))
        plain = output.get("data", {}).get("text/plain")
        text += "".join(plain) if isinstance(plain, list) else (plain or "")
    return text


def never_none(statement: ast.stmt) -> bool:
    """Whether a test cell's last statement is an expression whose value is never None (a
    comparison, a literal, ``not ...``): with no recorded output, otter would fail everyone.
    Any other (``None``, a name, a call) may print nothing, as otter then expects."""
    if not isinstance(statement, ast.Expr):
        return False
    value = statement.value
    if isinstance(value, ast.Constant):
        return value.value is not None
    return isinstance(value, (ast.Compare, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.JoinedStr, ast.BinOp)) or (
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not))


def magic_advice(code: str) -> str:
    """What to do when a test cell does not parse because of IPython syntax."""
    if python_source(code) == code:  # the transformers changed nothing: not IPython syntax either
        return ""
    return ": it uses IPython magics or shell escapes (`%...`, `!...`), which a hidden test cannot run; remove them"


def parse_test(source: str) -> tuple[dict[str, Any], str]:
    """(config, test code) of one otter test cell."""
    lines = source.split("\n")
    if lines and CONFIG_BEGIN.match(lines[0]):
        end = next((i for i, line in enumerate(lines) if i and CONFIG_END.match(line)), None)
        if end is None:
            raise ValueError("a test cell opens a TEST CONFIG block it never closes")
        try:
            config = yaml.safe_load("\n".join(lines[1:end])) or {}
        except yaml.YAMLError as error:
            raise ValueError(f"its TEST CONFIG block is not YAML ({error}): fix it as otter assign requires") from error
        if not isinstance(config, dict):
            raise ValueError("its TEST CONFIG block is not `key: value` lines")
        return dict(config), "\n".join(lines[end + 1:])
    hidden = bool(lines and lines[0].lstrip().startswith("#") and re.search(r"\bhidden\b", lines[0], re.IGNORECASE))
    return {"hidden": hidden}, "\n".join(lines[1:] if hidden else lines)


def share_points(total: Any, given: list[float | None]) -> list[float]:
    """Each test case's points from the question's ``points`` as otter resolves them: a list
    gives each case its own; ``{each: P}`` makes the total P per case; a number is shared
    evenly among the cases without their own; with no total, cases without points share one
    point when no case has any, else get none."""
    if isinstance(total, list):
        return [float(p) for p in total]
    if isinstance(total, dict):
        total = float(total.get("each", 1)) * len(given)
    rest = sum(p is None for p in given)
    pre = sum(p for p in given if p is not None)
    if total is not None:
        share = (float(total) - pre) / rest if rest else 0.0
    else:
        share = 1 / rest if rest and not pre else 0.0
    return [share if p is None else float(p) for p in given]


def read_yaml(text: str, index: int, block: str, report: ImportReport) -> dict[str, Any]:
    """A delimiter cell's YAML settings; a problem naming the cell when they are not a YAML mapping."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as error:
        report.problems.append(f"{where(index)}: the {block} settings are not YAML ({error}): fix them as otter "
                               "assign would require")
        return {}
    if value is not None and not isinstance(value, dict):
        report.problems.append(f"{where(index)}: the {block} settings are not `key: value` lines")
        return {}
    return dict(value or {})


def _question(cell: NotebookNode, index: int, report: ImportReport) -> dict[str, Any]:
    text = cell.source.split("\n", 1)[1] if "\n" in cell.source else ""
    question = read_yaml(text, index, "BEGIN QUESTION", report)
    if "name" not in question:
        report.problems.append(f"{where(index)}: a BEGIN QUESTION cell without a name")
        question["name"] = f"question{index + 1}"
    return question


class _Builder:
    """One pass over the master notebook's cells, question by question."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self.cells: list[NotebookNode] = []
        self.tests: list[CellTest] = []
        self.plain_code: list[NotebookNode] = []
        self.number = 0
        self.total = 0.0
        self.question: dict[str, Any] | None = None
        self.block: str | None = None
        self.pending: list[tuple[dict[str, Any], TestCell, int]] = []
        self.heading_at = 0
        self.config: dict[str, Any] = {}

    def delimiter(self, edge: str, kind: str, cell: NotebookNode, index: int) -> None:
        if kind == "QUESTION" and edge == "BEGIN":
            self.question = _question(cell, index, self.report)
            self.number += 1
            self.heading_at = len(self.cells)
            self.pending = []
        elif kind == "QUESTION":
            if self.question is None:
                self.report.problems.append(f"{where(index)}: END QUESTION without BEGIN QUESTION")
                return
            self.end_question()
        else:
            if self.question is None:
                self.report.problems.append(f"{where(index)}: {edge} {kind} outside a question")
            self.block = kind if edge == "BEGIN" else None

    def end_question(self) -> None:
        assert self.question is not None
        question, name = self.question, str(self.question["name"])
        manual = bool(question.get("manual"))
        try:
            points = share_points(question.get("points"), [c.get("points") for c, _, _ in self.pending])
        except (TypeError, ValueError) as error:
            self.report.problems.append(f"question {name!r}: its points cannot be shared out ({error})")
            points = [0.0] * len(self.pending)
        total = sum(points) if self.pending else float(question.get("points") or 0)
        if question.get("all_or_nothing") and self.pending:
            self.tests.append(CellTest(name, self.number, total, f"every test of {name} passes",
                                       tuple(t for _, t, _ in self.pending)))
        for k, ((config, test, _), share) in enumerate(zip(self.pending, points), start=1):
            if question.get("all_or_nothing"):
                break
            description = str(config.get("success_message") or f"otter test {k} of {name} passes")
            self.tests.append(CellTest(f"{name}_{k}", self.number, share, description, (test,)))
        if manual:
            self.model_answer(name)
        elif not self.pending:  # otter writes no test file for it: the question is worth nothing
            self.report.note("changed", f"question {name!r}", "has no tests and is not `manual: true`, so otter "
                             "grades nothing for it: its cells stay in the week, outside any task")
            self.number -= 1
            self.question = None
            return
        self.cells.insert(self.heading_at, task_cell(self.number, total, name, manual=manual))
        self.total += total
        self.question = None

    def model_answer(self, name: str) -> None:
        """A manual question's model answer, which markers compare against: otter needs
        none (a code solution or a prompt alone is common), so the week gets a
        ``### Model answer`` cell pointing at the code solution, or one to fill."""
        question = self.cells[self.heading_at:]
        if any(c.cell_type == "markdown" and ANSWER_HEADING.match(c.source.lstrip()) for c in question):
            return
        if any(c.cell_type == "code" and BEGIN in c.source for c in question):
            self.cells.append(nbformat.v4.new_markdown_cell(model_answer(CODE_ANSWER)))
            return
        self.cells.append(nbformat.v4.new_markdown_cell(model_answer(NO_ANSWER)))
        self.report.note("instructor", f"question {name!r}", "graded by hand with no solution in otter: the week has "
                         "a '### Model answer' cell at its end for you to fill")

    def test(self, cell: NotebookNode, index: int) -> None:
        try:
            config, code = parse_test(cell.source)
        except ValueError as error:
            self.report.problems.append(f"{where(index)}: {error}")
            return
        # otter keeps `# IGNORE` lines in the tests it runs (they leave only the student notebook):
        # `test_q1(slope)  # IGNORE` is what makes a function-style test check anything
        code = code.strip()
        try:
            tree = ast.parse(code)
        except SyntaxError as error:
            self.report.problems.append(f"{where(index)}: the test cell is not Python "
                                        f"({error.msg}, line {error.lineno}){magic_advice(code)}")
            return
        expected: str | None = recorded_output(cell)
        if not self.ok_format():
            code, expected = self.exception_test(tree, index), None
            if not code:
                return
        elif not (expected or "").strip() and tree.body and never_none(tree.body[-1]):
            self.report.problems.append(
                f"{where(index)}: the test cell ends in `{ast.unparse(tree.body[-1])}` but has no recorded output, "
                "so otter expects none and fails everyone: run the master notebook (Restart & Run All), save it, "
                "import again")
        failure = config.get("failure_message")
        self.pending.append((config, TestCell(code, expected, None if failure is None else str(failure)), index))
        if not config.get("hidden"):  # what grader.check runs for students: the public test, call included
            shown = "\n".join(IGNORE_MARK.sub("", line) for line in code.split("\n") if not IGNORE_LINE.match(line))
            self.cells.append(nbformat.v4.new_code_cell(shown, metadata={"autograder": {"check": True}}))

    def ok_format(self) -> bool:
        """Whether the tests are otter's doctest-like OK format (the default), not its
        exception-based one (``tests: ok_format: false``)."""
        tests = self.config.get("tests")
        return not isinstance(tests, dict) or tests.get("ok_format", True) is not False

    def exception_test(self, tree: ast.Module, index: int) -> str:
        """An exception-based test cell (``def test_q1(slope): assert ...``, an optional call)
        as otter runs it: the function, then a call passing each parameter the notebook's
        global of that name. Empty when the cell is not such a test (a problem is noted)."""
        function = tree.body[0] if tree.body else None
        if not isinstance(function, ast.FunctionDef) or len(tree.body) > 2:
            self.report.problems.append(f"{where(index)}: an exception-based test cell (tests: ok_format: false) must "
                                        "hold one test function and at most a call to it, as otter requires")
            return ""
        given = function.args.posonlyargs + function.args.args
        names = [a.arg for a in given + function.args.kwonlyargs]
        if "env" in names:
            self.report.problems.append(f"{where(index)}: test function {function.name}() takes `env`, the whole "
                                        "notebook namespace, which a hidden test here cannot see: take the names it "
                                        f"needs as parameters instead (`def {function.name}(slope, data):`)")
            return ""
        arguments = [a.arg for a in given] + [f"{a.arg}={a.arg}" for a in function.args.kwonlyargs]
        call = f"{function.name}({', '.join(arguments)})"
        return f"{ast.unparse(function)}\n\n\n{call}"

    def solution(self, cell: NotebookNode, index: int) -> None:
        if cell.cell_type == "code":
            cell.source = solution_source(strip_lines(cell.source, index, self.report), index, self.report)
            cell.outputs = []
            self.cells.append(cell)
            return
        if cell.cell_type != "markdown":
            return
        tags = cell.metadata.get("tags", [])
        if INCLUDE_TAG in tags:
            cell.metadata["tags"] = [t for t in tags if t != INCLUDE_TAG]
            if not cell.metadata["tags"]:
                del cell.metadata["tags"]
            self.cells.append(cell)
        elif self.question is not None and self.question.get("manual"):
            cell.source = model_answer(cell.source)
            self.cells.append(cell)
        else:
            self.report.note("dropped", where(index), "a markdown solution of an autograded question (otter never "
                             "shows it to students; a model answer belongs to a question graded by hand)")

    def plain(self, cell: NotebookNode, index: int) -> None:
        if cell.cell_type == "code":
            cell.source = without_otter(strip_lines(cell.source, index, self.report), index, self.report)
            if not cell.source.strip():
                return
            self.plain_code.append(cell)
        self.cells.append(cell)


def build_otter(master_notebook: Path, report: ImportReport, week: str) -> ImportedWeek:
    """The week an otter-assign master notebook becomes; problems go to ``report``."""
    nb = nbformat.read(master_notebook, as_version=4)
    refuse_other_kernels(nb, report)
    build = _Builder(report)
    for index, original in unfence(nb.cells):
        cell = copy.deepcopy(original)
        source = cell.source.lstrip()
        if cell.cell_type == "raw" and source.upper().startswith("# ASSIGNMENT CONFIG"):
            build.config = read_yaml(source.split("\n", 1)[1] if "\n" in source else "", index, "ASSIGNMENT CONFIG",
                                     report)
            continue
        delimiter = DELIMITER.match(cell.source) if cell.cell_type == "raw" else None
        if delimiter:
            build.delimiter(delimiter.group(1).upper(), delimiter.group(2).upper(), cell, index)
        elif build.block == "PROMPT":
            report.note("dropped", where(index), "a prompt cell (generation writes our stub in its place)")
        elif build.block == "TESTS":
            build.test(cell, index)
        elif build.block == "SOLUTION":
            build.solution(cell, index)
        else:
            build.plain(cell, index)
    if build.question is not None:
        report.problems.append(f"question {build.question.get('name')!r} has no END QUESTION")
    if not build.number:
        v0 = any(c.cell_type == "markdown" and V0_QUESTION.search(c.source) for c in nb.cells)
        hint = (": this looks like otter's older format v0 (BEGIN QUESTION inside a markdown cell, `## Test ##` "
                "cells), which the import does not read; rewrite its delimiters as format v1's raw cells, then import")
        report.problems.append("no questions (raw cells # BEGIN QUESTION ... # END QUESTION)" + (hint if v0 else ""))
    plain = [t.name for t in build.tests if t.description.startswith("otter test ")]
    if plain:
        report.note("instructor", "test cells", f"{len(plain)} hidden tests have no success_message, so students "
                    "read 'otter test K of QUESTION passes': edit their docstrings to say what each checks")
    data_files = _files(build, master_notebook, report)
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    out.cells = build.cells  # not through new_notebook, which validates as 4.5 before the cells have ids
    title = title_cell(out, week, str(build.config.get("name") or master_notebook.stem).replace("_", " "), build.total)
    return ImportedWeek(notebook=current_format(out), title=title, tool="otter", origin=master_notebook.name,
                        prelude=notebook_imports(build.plain_code), tests=build.tests, language="",
                        data_files=data_files)


def _files(build: _Builder, master: Path, report: ImportReport) -> list[Path]:
    """The assignment's ``files`` and ``student_files`` (otter hands both out), to copy into
    ``data/``: the notebook's and tests' string literals naming one are rewritten to
    ``data/NAME``, where the worker finds it."""
    found = []
    for key in ("files", "student_files"):
        for name in [str(f) for f in build.config.get(key, []) or []]:
            path = master.parent / name
            if outside(master.parent, name):
                report.problems.append(
                    f"ASSIGNMENT CONFIG: {key}: {name!r} is outside the master notebook's folder ({master.parent}), "
                    "and what a week ships goes to every student and every worker: copy the file (only what "
                    "students may see) into that folder, name it relative to the notebook, import again")
                continue
            if not path.is_file():
                report.problems.append(f"ASSIGNMENT CONFIG: {key}: {name!r} is not next to the notebook ({path})")
                continue
            if path.suffix == ".py":  # a module the notebook imports: the week's helper, not data
                report.note("changed", "ASSIGNMENT CONFIG", f"{key}: {name!r} is a Python module: not copied into "
                            "data/; when the notebook or its tests import it, it is the week's helper module (see "
                            "the note on its import statement)")
                continue
            found.append(path)
            pattern = re.compile(rf"""(['"]){re.escape(name)}\1""")
            for cell in build.cells:
                if cell.cell_type == "code":
                    cell.source = _rename(cell.source, pattern, path.name)
            build.tests = [_rename_in(test, pattern, path.name) for test in build.tests]
            report.note("changed", "ASSIGNMENT CONFIG", f"{key}: {name!r} is the week's data/{path.name} (students "
                        "and tests read it there); the notebook's and tests' literal paths to it are rewritten")
    for name in build.config.get("autograder_files", []) or []:
        report.note("dropped", "ASSIGNMENT CONFIG", f"autograder_files: {name!r} (hidden tests here read only the "
                    "week's data/, which students see too: move what they need there, or into the test code)")
    return found


def outside(folder: Path, name: str) -> bool:
    """Whether ``name`` (as a config names a file) is absolute, leaves ``folder`` with
    ``..``, or is a symlink (or lies under one) leading out of it."""
    if Path(name).is_absolute():
        return True
    return not (folder / name).resolve().is_relative_to(folder.resolve())


def _rename(source: str, pattern: re.Pattern[str], name: str) -> str:
    return pattern.sub(lambda m: f"{m[1]}data/{name}{m[1]}", source)


def _rename_in(test: CellTest, pattern: re.Pattern[str], name: str) -> CellTest:
    cells = tuple(TestCell(_rename(c.source, pattern, name), c.expected_output, c.failure_message)
                  for c in test.cells)
    return CellTest(test.name, test.task, test.points, test.description, cells)


def import_otter(notebook: Path, *, week: str, out_root: Path, language: str | None = None) -> Imported:
    """Convert ``notebook``, check the week, write ``out_root/source/<week>/`` (docs/INTEROP.md)."""
    return import_week(build_otter, notebook, week=week, out_root=out_root, language=language)
