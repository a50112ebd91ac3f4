"""``autograder import otter MASTER_NOTEBOOK``: an otter-assign master notebook as a week.

Otter's format (v1) delimits blocks with raw cells: ``# BEGIN QUESTION`` (YAML: ``name``,
``points``, ``manual``) ... ``# END QUESTION``, and inside a question ``# BEGIN SOLUTION``,
``# BEGIN PROMPT`` and ``# BEGIN TESTS`` blocks. Mapping:

- a question -> a task (heading ``## Task N (P points): name``), manual when ``manual: true``;
- solution code -> our regions (otter's ``# BEGIN SOLUTION`` / ``# END SOLUTION`` and
  ``# BEGIN SOLUTION NO PROMPT`` markers respelled; a ``# SOLUTION`` line is a one-line
  region; a cell without markers is one region); a markdown solution -> the answer cell;
- prompt blocks are dropped (generation writes our stubs);
- each test cell -> a hidden test (config from ``# BEGIN TEST CONFIG`` or a ``# HIDDEN``
  first line); the cell's recorded output is compared as otter's doctest does.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import nbformat
import yaml
from nbformat import NotebookNode

from autograder.exceptions import InteropError
from autograder.generate.markers import BEGIN, END
from autograder.interop.week_writer import CellTest, notebook_imports, task_cell, wrap_solution, write_week

DELIMITER = re.compile(r"^\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|PROMPT|TESTS)\b", re.IGNORECASE)
MARKER = re.compile(r"^(\s*)#\s*(BEGIN|END) SOLUTION( NO PROMPT)?\s*$")
LINE_SOLUTION = re.compile(r"^(\s*)(.*?)\s*# SOLUTION\s*$")
CONFIG_BEGIN = re.compile(r'^(?:.\s*=\s*)?"""?\s*#\s*BEGIN\s*TEST\s*CONFIG', re.IGNORECASE)
CONFIG_END = re.compile(r'^"""?\s*#\s*END\s*TEST\s*CONFIG', re.IGNORECASE)


def solution_source(source: str) -> str:
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
    return "\n".join(out)


def recorded_output(cell: NotebookNode) -> str:
    """What the master notebook printed: otter's expected doctest output."""
    text = ""
    for output in cell.get("outputs", []):
        text += "".join(output.get("text", ""))
        plain = output.get("data", {}).get("text/plain")
        text += "".join(plain) if isinstance(plain, list) else (plain or "")
    return text


def parse_test(source: str) -> tuple[dict[str, Any], str]:
    """(config, test code) of one otter test cell."""
    lines = source.split("\n")
    if lines and CONFIG_BEGIN.match(lines[0]):
        end = next((i for i, line in enumerate(lines) if i and CONFIG_END.match(line)), None)
        if end is None:
            raise InteropError("a test cell opens a TEST CONFIG block it never closes")
        return dict(yaml.safe_load("\n".join(lines[1:end])) or {}), "\n".join(lines[end + 1:])
    hidden = bool(lines and lines[0].lstrip().startswith("#") and re.search(r"\bhidden\b", lines[0], re.IGNORECASE))
    return {"hidden": hidden}, "\n".join(lines[1:] if hidden else lines)


def _points(question: dict[str, Any], configs: list[dict[str, Any]]) -> list[float]:
    """Each test case's points, resolved as otter does from the question's ``points``."""
    total = question.get("points")
    if isinstance(total, list):
        return [float(p) for p in total]
    if isinstance(total, dict):
        return [float(total.get("each", 1))] * len(configs)
    given = [c.get("points") for c in configs]
    rest = [i for i, p in enumerate(given) if p is None]
    budget = (float(total) if total is not None else (0.0 if not rest or any(p is not None for p in given) else 1.0))
    left = budget - sum(float(p) for p in given if p is not None)
    share = left / len(rest) if rest else 0.0
    return [float(p) if p is not None else share for p in given]


def import_otter(master_notebook: Path, *, week: str, out_root: Path) -> Path:
    """Convert ``master_notebook``; write ``out_root/source/<week>/``; return the notebook path."""
    nb = nbformat.read(master_notebook, as_version=4)
    cells: list[NotebookNode] = []
    tests: list[CellTest] = []
    plain_code: list[NotebookNode] = []
    number, question, block = 0, None, None
    pending: list[tuple[dict[str, Any], str, str | None]] = []
    heading_at = 0
    for index, original in enumerate(nb.cells):
        cell = copy.deepcopy(original)
        where = f"{master_notebook}: cell {index + 1}"
        delimiter = DELIMITER.match(cell.source) if cell.cell_type == "raw" else None
        if cell.cell_type == "raw" and cell.source.lstrip().upper().startswith("# ASSIGNMENT CONFIG"):
            continue
        if delimiter:
            edge, kind = delimiter.group(1).upper(), delimiter.group(2).upper()
            if kind == "QUESTION" and edge == "BEGIN":
                question = dict(yaml.safe_load(cell.source.split("\n", 1)[1] if "\n" in cell.source else "") or {})
                if "name" not in question:
                    raise InteropError(f"{where}: a BEGIN QUESTION cell without a name")
                number += 1
                heading_at = len(cells)
                pending = []
            elif kind == "QUESTION":
                if question is None:
                    raise InteropError(f"{where}: END QUESTION without BEGIN QUESTION")
                manual = bool(question.get("manual"))
                points = _points(question, [c for c, _, _ in pending])
                name = str(question["name"])
                for k, ((_config, code, expected), p) in enumerate(zip(pending, points), start=1):
                    tests.append(CellTest(f"{name}_{k}", number, p, f"otter test {k} of {name} passes", code, expected))
                total = sum(points) if pending else float(question.get("points") or 0)
                cells.insert(heading_at, task_cell(number, total, name, manual=manual))
                question = None
            else:
                block = kind if edge == "BEGIN" else None
            continue
        if block == "PROMPT":
            continue
        if block == "TESTS":
            config, code = parse_test(cell.source)
            expected = recorded_output(cell)
            pending.append((config, code.strip(), expected if expected.strip() else None))
            continue
        if block == "SOLUTION":
            if cell.cell_type == "markdown":
                cell.metadata["autograder"] = {"answer": number}
            elif cell.cell_type == "code":
                cell.source = solution_source(cell.source)
                cell.outputs = []
        elif cell.cell_type == "code":
            if "otter" in cell.source and ("grader.check" in cell.source or "otter.Notebook" in cell.source):
                continue  # otter's own cells: init, check, export
            plain_code.append(cell)
        cells.append(cell)
    if question is not None:
        raise InteropError(f"{master_notebook}: question {question.get('name')!r} has no END QUESTION")
    if not number:
        raise InteropError(f"{master_notebook}: no questions (raw cells # BEGIN QUESTION ... # END QUESTION)")
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata), cells=cells)
    out.nbformat_minor = 4
    for cell in out.cells:
        cell.pop("id", None)
    return write_week(out, week=week, title=master_notebook.stem.replace("_", " "), tool="otter",
                      origin=master_notebook.name, prelude=notebook_imports(plain_code), tests=tests,
                      out_root=out_root)
