"""What a source notebook declares: its week, title and total, its tasks and model answers.

Authors may write all of it in the cells' text, so nobody needs Jupyter's metadata editor:
- the title cell ``# Week 7: k-means (100 points)`` names the week, its title and total;
- a markdown cell opening with ``## Task 3 (25 points): title`` declares task 3, and
  ``(25 points, by hand)`` makes it graded by hand;
- a markdown cell opening with a ``### Model answer`` heading is the model answer of the
  task whose heading comes before it.
The metadata of the older convention (``"autograder": {"task": 3, "points": 25}``, ...)
still works; where text and metadata both say something they must agree, so a typo in
either is caught rather than silently preferred. Nothing here raises: every contradiction
is a ``problem`` ("cell N: what is wrong, what to do"), refused by ``autograder generate``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nbformat import NotebookNode

# the one task-heading pattern (``manual`` finds a student's answer by it too); at most nine
# digits, so ``int`` never meets the thousands a student's notebook may hold
TASK_HEADING = re.compile(r"^#{1,6}\s*task\s+(\d{1,9})\b\s*(?:\(([^)]*)\))?\s*[:.,\-\u2013\u2014]?\s*(.*)$",
                          re.IGNORECASE)
WEEK_HEADING = re.compile(
    r"^#\s*week\s+(\d+)\b\s*[:.\-\u2013\u2014]?\s*(.*?)\s*(?:\((\d+(?:\.\d+)?\s*points?)\))?\s*$", re.IGNORECASE
)
ANSWER_HEADING = re.compile(r"^#{1,6}\s*model answer\b", re.IGNORECASE)
POINTS = re.compile(r"(\d+(?:\.\d+)?)\s*points?\b", re.IGNORECASE)
BY_HAND = re.compile(r"\bby hand\b", re.IGNORECASE)


@dataclass(frozen=True)
class TaskSpec:
    number: int
    points: float
    manual: bool
    title: str
    cell: int  # 0-based index of its heading cell


@dataclass
class WeekSpec:
    """What the notebook declares; ``problems`` are contradictions, each "cell N: ...".
    Where text and metadata disagree, the metadata's value is kept (and the problem
    recorded), so one mistake is reported once rather than again by every later check."""

    week: str | None = None
    title: str | None = None
    total: float | None = None
    tasks: list[TaskSpec] = field(default_factory=list)
    answers: dict[int, int] = field(default_factory=dict)  # answer cell index -> task number
    problems: list[str] = field(default_factory=list)


def first_line(cell: NotebookNode) -> str:
    """The first non-blank line of a cell, stripped: where headings and markers are read."""
    text = cell.get("source", "")
    text = "".join(text) if isinstance(text, list) else text
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def number(value: float) -> int | float:
    """Points as JSON writes them: 40, not 40.0."""
    return int(value) if float(value).is_integer() else float(value)


def read_spec(nb: NotebookNode) -> WeekSpec:
    """Everything the notebook declares (week, title, total, tasks, model answers) and every problem with it."""
    spec = WeekSpec()
    _read_week(nb, spec)
    current: int | None = None
    seen: dict[int, int] = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("autograder", {})
        if not isinstance(meta, dict) or cell.get("cell_type") != "markdown":
            continue
        line = first_line(cell)
        heading = TASK_HEADING.match(line)
        if "task" in meta or heading:
            task = _read_task(index, meta, heading, line, spec.problems)
            if task is None:
                continue
            if task.number in seen:
                spec.problems.append(f"cell {index + 1}: task {task.number} is declared again (first in cell "
                                     f"{seen[task.number] + 1}): give each task one heading")
                continue
            seen[task.number] = index
            spec.tasks.append(task)
            current = task.number
        elif "answer" in meta or ANSWER_HEADING.match(line):
            _read_answer(index, meta, current, spec)
    spec.tasks.sort(key=lambda t: t.number)
    return spec


def _read_week(nb: NotebookNode, spec: WeekSpec) -> None:
    meta = nb.get("metadata", {}).get("autograder", {})
    meta = meta if isinstance(meta, dict) else {}
    heading = next((m for m in (WEEK_HEADING.match(first_line(c)) for c in nb.cells
                                if c.get("cell_type") == "markdown") if m), None)
    head_week = f"week{int(heading[1]):02d}" if heading else None
    head_total = _points(heading[3]) if heading and heading[3] else None
    if "week" in meta and head_week and str(meta["week"]) != head_week:
        spec.problems.append(f"the notebook's metadata says week {meta['week']!r}, its title heading {head_week!r}: "
                             "make them agree")
    spec.week = str(meta["week"]) if "week" in meta else head_week
    spec.title = str(meta["title"]) if "title" in meta else (heading[2].strip() or None if heading else None)
    meta_total = meta.get("points")
    if meta_total is not None and head_total is not None and float(meta_total) != head_total:
        spec.problems.append(f"the title heading says {head_total:g} points, the notebook's metadata "
                             f"{float(meta_total):g}: make them agree")
    spec.total = float(meta_total) if meta_total is not None else head_total


def _points(text: str | None) -> float | None:
    found = POINTS.search(text or "")
    return float(found[1]) if found else None


def _read_task(
    index: int, meta: dict[str, Any], heading: re.Match[str] | None, line: str, problems: list[str]
) -> TaskSpec | None:
    where = f"cell {index + 1}"
    head_number = int(heading[1]) if heading else None
    head_points = _points(heading[2]) if heading else None
    if "task" in meta and head_number is not None and int(meta["task"]) != head_number:
        problems.append(
            f"{where}: its heading says task {head_number}, its metadata task {meta['task']}: make them agree"
        )
    task = int(meta["task"]) if "task" in meta else head_number
    assert task is not None
    if "points" in meta and head_points is not None and float(meta["points"]) != head_points:
        problems.append(f"{where}: the heading of task {task} says {head_points:g} points, its metadata "
                        f"{float(meta['points']):g}: make them agree (students read the heading)")
    points = float(meta["points"]) if "points" in meta else head_points
    if points is None:
        problems.append(f"{where}: task {task} has no points: write them in its heading, "
                        f"'## Task {task} (10 points): what to do'")
        return None
    manual = bool(meta.get("manual", False)) or bool(heading and heading[2] and BY_HAND.search(heading[2]))
    title = heading[3].strip() if heading else line.lstrip("#").strip()
    return TaskSpec(number=task, points=points, manual=manual, title=title or f"Task {task}", cell=index)


def _read_answer(index: int, meta: dict[str, Any], current: int | None, spec: WeekSpec) -> None:
    where = f"cell {index + 1}"
    task = meta.get("answer", current)
    if task is None:
        spec.problems.append(f"{where}: a model answer before any task heading: move it under the heading of "
                             "the task it answers")
        return
    if not isinstance(task, int) or isinstance(task, bool):
        return  # AnswerPrompts refuses it, saying why
    if current is not None and task != current:
        spec.problems.append(f"{where}: the model answer to task {task} sits under the heading of task {current}: "
                             f"move it under task {task}'s heading")
        return
    spec.answers[index] = task


def annotate(nb: NotebookNode) -> NotebookNode:
    """``nb`` with what its text declares also written as metadata, where missing.

    The grader and the marking sheet read metadata from generated and submitted
    notebooks, so generation writes it for authors who wrote only text.
    """
    spec = read_spec(nb)
    for task in spec.tasks:
        meta = nb.cells[task.cell].metadata.setdefault("autograder", {})
        meta.setdefault("task", task.number)
        meta.setdefault("points", number(task.points))
        if task.manual:
            meta.setdefault("manual", True)
    for index, task_number in spec.answers.items():
        nb.cells[index].metadata.setdefault("autograder", {}).setdefault("answer", task_number)
    if spec.week or spec.title:
        meta = nb.metadata.setdefault("autograder", {})
        if spec.week:
            meta.setdefault("week", spec.week)
        if spec.title:
            meta.setdefault("title", spec.title)
    return nb
