"""Grading free-text tasks by hand: a sheet to fill, read back, folded into the results.

``write_manual_sheet`` lists every participant's answer to every manual task (a CSV the
marker fills, plus an HTML view to read comfortably); ``read_marks`` reads the filled CSV
and refuses anything Moodle or the totals could not use, naming the row; the gradebook
(``gradebook.apply_marks``) puts the points and comments into a result's manual tasks, so
totals, worksheet and feedback pick them up. The answer is the student's cell with metadata
``autograder.answer = N`` (docs/AUTHORING.md); when a student's editor dropped that
metadata, the markdown cell after the ``Task N`` heading. Cells the student added to a
task's section (after its prompt, before the next task) are shown with the answer, so an
answer written in the wrong cell still reaches the marker. Text a spreadsheet would run
as a formula is escaped in the CSV.

Rubric items (``autograder.rubric``) come with the sheet: ``manual-rubric.csv`` lists
them (``write_rubric_sheet``, ``read_rubric_sheet``), and a row of the marking sheet
applies them by number in its ``rubric`` column, with an optional ``adjustment``, instead
of ``points``. Similar answers are grouped (``autograder.grouping``): each group of two or
more answers gets a row of its own, without a key, whose decision marks every answer of
the group that has none of its own.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

import nbformat
from jinja2 import Template

from autograder.authoring import TASK_HEADING, first_line
from autograder.course import Task
from autograder.exceptions import ManualMarksError, SubmissionError
from autograder.formats.atomic import write_text
from autograder.formats.points import format_points
from autograder.formats.spreadsheet_cells import from_spreadsheet_cell, spreadsheet_cell
from autograder.formats.templating import environment
from autograder.grouping import group_answers
from autograder.notebook import read_notebook
from autograder.rubric import RubricItem, format_item_numbers, parse_item_numbers, rubric_points
from autograder.submission import Submission
from autograder.text import scrub

COLUMNS = ("key", "identifier", "full_name", "task", "group", "max_points", "answer", "rubric", "adjustment",
           "points", "comment", "note", "answer_sha256")
RUBRIC_COLUMNS = ("task", "item", "points", "comment")
RUBRIC_CSV = "manual-rubric.csv"  # its name beside the marking sheet
SHEET_ANSWER_CHARS = 32_000  # an answer's cell in the CSV: below a spreadsheet's 32,767 with the formula quote


class Mark(NamedTuple):
    points: float  # a rubric mark's: computed (autograder.rubric)
    comment: str   # a rubric mark's: the marker's own words, without the items' comments
    answer_sha256: str | None = None  # the answer the marker read (the sheet's column); None: unknown
    items: tuple[int, ...] = ()  # the rubric items applied (numbers within the task)
    adjustment: float | None = None  # None: points given directly; else a rubric mark's adjustment

    @property
    def by_rubric(self) -> bool:
        return self.adjustment is not None


class RubricRow(NamedTuple):
    """A row of ``manual-rubric.csv``: an item to define (``number`` None: the next free one) or change."""

    task: int
    number: int | None
    points: float
    comment: str


Marks = dict[str, dict[int, Mark]]  # submission key -> task number -> mark


def write_manual_sheet(
    *,
    submissions: Iterable[Submission],
    tasks: Sequence[Task],
    csv_path: Path,
    html_path: Path | None = None,
    title: str = "",
    marks: Marks | None = None,
    given: nbformat.NotebookNode | None = None,
) -> int:
    """Write the marking sheet for the manual tasks among ``tasks``; returns its row count.

    One row per submission and manual task, ``points`` and ``comment`` empty (or prefilled
    from ``marks``, so exporting again never loses marking already done). A mark given to
    another answer than the one shown now is stale: its points are left empty (the old
    ones in ``note``) so merging the sheet cannot confirm it unread. The CSV is UTF-8
    with a BOM so spreadsheets show any script; ``html_path`` gets a read-only view.
    ``given`` is the notebook handed out: cells of a task's section that are not in it
    were added by the student and are shown with the answer.
    """
    manual = [t for t in tasks if t.manual]
    given_sources = {c.source.strip() for c in given.cells} if given is not None else None
    answers: dict[str, dict[int, str]] = {}
    people: dict[str, Submission] = {}
    for submission in submissions:
        notebook, problem = _notebook(submission)
        people[submission.key] = submission
        for task in manual:
            answer = problem or task_answer(notebook, task.number, given_sources)
            answers.setdefault(submission.key, {})[task.number] = (
                answer if answer is not None else f"(no answer cell found for task {task.number})")
    rows = []
    for task in manual:
        by_key = {key: texts[task.number] for key, texts in answers.items()}
        for number, group in enumerate(group_answers(by_key), start=1):
            name = f"T{task.number}-G{number}" if len(group) > 1 else ""
            if name:
                rows.append(_group_row(task, name, group, by_key[group[0]]))
            for key in group:
                mark = (marks or {}).get(key, {}).get(task.number)
                rows.append(_answer_row(people[key], task, name, by_key[key], mark))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    html_name = Path(html_path).name if html_path is not None else None
    writer.writerows([{name: spreadsheet_cell(_sheet_answer(value, html_name) if name == "answer" else value)
                       for name, value in row.items()} for row in rows])
    # names from file names that are not UTF-8 (and any other lone surrogate) become U+FFFD
    write_text(Path(csv_path), scrub("\ufeff" + text.getvalue()))
    if html_path is not None:
        page = _page().render(title=title, tasks=manual, rows=rows, csv_name=Path(csv_path).name)
        write_text(Path(html_path), scrub(page))
    return sum(1 for row in rows if row["key"])


def _sheet_answer(answer: str, html_name: str | None) -> str:
    """``answer`` as the CSV holds it: at most ``SHEET_ANSWER_CHARS`` characters, a longer
    one cut with a visible note saying how much is left out and where to read all of it.

    Spreadsheets hold at most 32,767 characters in a cell (and cut or split a longer one)
    and ``read_marks``' CSV reader refuses a field over 131,072, so a student's answer of
    any length must not reach either: the marker fills this sheet in a spreadsheet, and the
    HTML view and the notebook keep the whole answer (``answer_sha256`` is the whole answer's)."""
    if len(answer) <= SHEET_ANSWER_CHARS:
        return answer
    where = f"{html_name} beside this sheet and the notebook" if html_name else "the notebook"

    def note(left: int) -> str:
        return f"\n\n[cut here for the spreadsheet: {left:,} more characters; the whole answer is in {where}]"

    kept = SHEET_ANSWER_CHARS - len(note(len(answer)))
    return answer[:kept] + note(len(answer) - kept)


def _answer_row(submission: Submission, task: Task, group: str, answer: str, mark: Mark | None) -> dict[str, str]:
    """One answer's row, prefilled with its mark unless the mark was given to another answer."""
    participant = submission.participant
    digest = answer_sha256(answer)
    stale = mark is not None and mark.answer_sha256 is not None and mark.answer_sha256 != digest
    shown = mark if mark is not None and not stale else None
    note = _stale_note(mark) if mark is not None and stale else ""
    if shown is not None and shown.by_rubric:
        note = f"{format_points(shown.points)} points from the rubric"
    return {
        "key": submission.key,
        "identifier": f"Participant {participant.participant_id}" if participant and participant.participant_id
        else "",
        "full_name": (participant.full_name or participant.group_name or "") if participant else "",
        "task": str(task.number),
        "group": group,
        "max_points": format_points(task.points),
        "answer": answer,
        "rubric": format_item_numbers(shown.items) if shown is not None and shown.by_rubric else "",
        "adjustment": format_points(shown.adjustment) if shown is not None and shown.adjustment else "",
        "points": format_points(shown.points) if shown is not None and not shown.by_rubric else "",
        "comment": shown.comment if shown is not None else "",
        "note": note,
        "answer_sha256": digest,
    }


def _group_row(task: Task, group: str, keys: Sequence[str], first_answer: str) -> dict[str, str]:
    """The row whose decision marks every answer of ``group`` that has none of its own."""
    return {
        "key": "", "identifier": f"Group {group}", "full_name": f"{len(keys)} similar answers",
        "task": str(task.number),
        "group": group, "max_points": format_points(task.points), "answer": first_answer, "rubric": "",
        "adjustment": "", "points": "", "comment": "",
        "note": "a decision here marks every answer of the group whose own row is left empty", "answer_sha256": "",
    }


def read_marks(sheet: Path, *, tasks: Sequence[Task] | None = None, rubric: Sequence[RubricItem] = ()) -> Marks:
    """The marks filled into a sheet written by ``write_manual_sheet``.

    Rows with no decision (neither ``points`` nor ``rubric``) are not marked yet and
    skipped, unless their group's row holds one: it marks them. Points must be numbers
    (``7.5`` or ``7,5``) from 0 to the task's maximum (from ``tasks`` when given, else the
    sheet's ``max_points``); ``rubric`` names items of ``rubric`` by number (``1 3``) and
    makes the mark a rubric mark (``autograder.rubric``) with the ``adjustment`` column
    added. Every problem is collected and raised together in one ManualMarksError naming
    each row as a spreadsheet numbers it (the header is row 1).
    """
    sheet = Path(sheet)
    maxima = {t.number: t.points for t in tasks if t.manual} if tasks is not None else None
    defined = {(item.task, item.number): item for item in rubric}
    records = list(enumerate(_read_rows(sheet), start=2))
    problems: list[str] = []
    groups: dict[str, Mark] = {}
    for number, row in records:  # the groups' decisions first: a member row may come before its group's
        group = row.get("group", "").strip()
        if not row.get("key", "").strip() and group:
            decision = _decision(row, f"row {number} (group {group}, task {row.get('task', '').strip() or '?'})",
                                 maxima, defined, problems)
            if decision is not None:
                groups[group] = decision
    marks: Marks = {}
    for number, row in records:
        key, task_text, group = row.get("key", "").strip(), row.get("task", "").strip(), row.get("group", "").strip()
        if not key and group:
            continue
        where = f"row {number} ({key or 'no key'}, task {task_text or '?'})"
        mark = _decision(row, where, maxima, defined, problems)
        if mark is None and group in groups:
            mark = groups[group]
        if mark is None:
            continue
        mark = mark._replace(answer_sha256=row.get("answer_sha256", "").strip() or None)
        if not key or not task_text.isdigit():
            problems.append(f"{where}: the key and task columns must be kept as written")
        elif int(task_text) in marks.get(key, {}):
            problems.append(f"{where}: marked twice")
        else:
            marks.setdefault(key, {})[int(task_text)] = mark
    if problems:
        raise ManualMarksError.rows(sheet, problems)
    return marks


def _decision(row: Mapping[str, str], where: str, maxima: Mapping[int, float] | None,
              defined: Mapping[tuple[int, int], RubricItem], problems: list[str]) -> Mark | None:
    """The mark one row decides (None: no decision, or a problem, appended to ``problems``)."""
    task_text = row.get("task", "").strip()
    points_text, comment = row.get("points", "").strip(), from_spreadsheet_cell(row.get("comment", "").strip())
    rubric_text, adjustment_text = row.get("rubric", "").strip(), row.get("adjustment", "").strip()
    if not points_text and not rubric_text:
        if adjustment_text:
            problems.append(f"{where}: an adjustment but no rubric items (an adjustment changes their sum)")
        elif comment:
            problems.append(f"{where}: a comment but no points (write 0 to give no points)")
        return None
    if not task_text.isdigit():
        problems.append(f"{where}: the key and task columns must be kept as written")
        return None
    task = int(task_text)
    maximum = maxima.get(task) if maxima is not None else parse_number(row.get("max_points", ""))
    if maxima is not None and task not in maxima:
        problems.append(f"{where}: task {task} is not marked by hand this week")
    elif maximum is None:
        problems.append(f"{where}: max_points is missing, so the points cannot be checked")
    elif points_text and rubric_text:
        problems.append(f"{where}: write points or rubric items, not both (rubric items give the points)")
    elif rubric_text:
        return _rubric_decision(where, task, maximum, rubric_text, adjustment_text, comment, defined, problems)
    else:
        points = parse_number(points_text)
        if points is None:
            problems.append(f"{where}: points {points_text!r} is not a number")
        elif not 0 <= points <= maximum:
            problems.append(f"{where}: points {points_text} outside 0 to {format_points(maximum)}")
        elif adjustment_text:
            problems.append(f"{where}: an adjustment applies to rubric items only: add it to the points")
        else:
            return Mark(points, comment)
    return None


def _rubric_decision(where: str, task: int, maximum: float, rubric_text: str, adjustment_text: str, comment: str,
                     defined: Mapping[tuple[int, int], RubricItem], problems: list[str]) -> Mark | None:
    numbers = parse_item_numbers(rubric_text)
    adjustment = parse_number(adjustment_text) if adjustment_text else 0.0
    if numbers is None:
        problems.append(f"{where}: rubric {rubric_text!r} is not a list of item numbers such as '1 3'")
    elif unknown := [n for n in numbers if (task, n) not in defined]:
        problems.append(f"{where}: task {task} has no rubric item {', '.join(map(str, unknown))}: define it in "
                        f"{RUBRIC_CSV}")
    elif adjustment is None or abs(adjustment) > maximum:
        problems.append(f"{where}: adjustment {adjustment_text!r} is not a number from -{format_points(maximum)} "
                        f"to {format_points(maximum)}")
    else:
        items = [defined[task, n] for n in numbers]
        return Mark(rubric_points(items, adjustment, maximum), comment, None, numbers, adjustment)
    return None


def write_rubric_sheet(items: Sequence[RubricItem], tasks: Sequence[Task], path: Path) -> None:
    """``manual-rubric.csv``: every rubric item of the manual tasks, to edit and extend.

    Each hand-graded task without items gets an empty row to show the shape."""
    rows = [{"task": str(i.task), "item": str(i.number), "points": format_points(i.points) if i.points >= 0
             else "-" + format_points(-i.points), "comment": spreadsheet_cell(i.comment)} for i in items]
    with_items = {i.task for i in items}
    rows += [{"task": str(t.number), "item": "", "points": "", "comment": ""}
             for t in tasks if t.manual and t.number not in with_items]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=RUBRIC_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(sorted(rows, key=lambda r: (int(r["task"]), r["item"] == "", int(r["item"] or 0))))
    write_text(Path(path), scrub("\ufeff" + text.getvalue()))


def read_rubric_sheet(path: Path, *, tasks: Sequence[Task]) -> list[RubricRow]:
    """The items of a filled ``manual-rubric.csv``; rows without points and comment are skipped.

    An ``item`` number names an item to change (or to define with that number); an empty
    one defines the task's next item. Points may be negative (a deduction), at most the
    task's points either way. Every problem is raised together, naming its row."""
    path = Path(path)
    maxima = {t.number: t.points for t in tasks if t.manual}
    read: list[RubricRow] = []
    problems: list[str] = []
    seen: set[tuple[int, int]] = set()
    for number, row in enumerate(_read_rows(path, required=RUBRIC_COLUMNS), start=2):
        task_text, item_text = row.get("task", "").strip(), row.get("item", "").strip()
        points_text, comment = row.get("points", "").strip(), from_spreadsheet_cell(row.get("comment", "").strip())
        where = f"row {number} (task {task_text or '?'}, item {item_text or 'new'})"
        if not points_text and not comment:
            continue
        points = parse_number(points_text)
        if not task_text.isdigit() or int(task_text) not in maxima:
            problems.append(f"{where}: task {task_text!r} is not a task marked by hand this week")
        elif item_text and not item_text.isdigit():
            problems.append(f"{where}: item {item_text!r} must be a number, or empty for a new item")
        elif points is None:
            problems.append(f"{where}: points {points_text!r} is not a number")
        elif abs(points) > maxima[int(task_text)]:
            problems.append(f"{where}: points {points_text} outside -{format_points(maxima[int(task_text)])} to "
                            f"{format_points(maxima[int(task_text)])}")
        elif not comment:
            problems.append(f"{where}: an item needs a comment: it is what the student reads")
        elif item_text and (int(task_text), int(item_text)) in seen:
            problems.append(f"{where}: item {item_text} of task {task_text} is listed twice")
        else:
            if item_text:
                seen.add((int(task_text), int(item_text)))
            read.append(RubricRow(int(task_text), int(item_text) if item_text else None, points, comment))
    if problems:
        raise ManualMarksError.rows(path, problems)
    return read


def _stale_note(mark: Mark) -> str:
    was = f"{format_points(mark.points)} points" + (f", comment: {mark.comment}" if mark.comment else "")
    return f"STALE: the answer changed after it was marked ({was}); read it and write points again to confirm"


def answer_sha256(answer: str) -> str:
    """The fingerprint a mark keeps of the answer it was given to."""
    return hashlib.sha256(answer.encode("utf-8", "surrogatepass")).hexdigest()


def answer_hashes(submission: Submission, tasks: Sequence[Task],
                  given: nbformat.NotebookNode | None = None) -> dict[int, str]:
    """``{task: answer_sha256}`` for the manual tasks, as the marking sheet shows the answers."""
    notebook, problem = _notebook(submission)
    sources = {c.source.strip() for c in given.cells} if given is not None else None
    hashes = {}
    for task in (t for t in tasks if t.manual):
        answer = problem or task_answer(notebook, task.number, sources)
        hashes[task.number] = answer_sha256(
            answer if answer is not None else f"(no answer cell found for task {task.number})")
    return hashes


def _notebook(submission: Submission) -> tuple[nbformat.NotebookNode | None, str | None]:
    """The notebook as the grader read it (autograder.notebook: capped, checked, text
    scrubbed), or the text the marker sees instead of an answer."""
    if submission.content is None:
        return None, f"(no notebook: {submission.message or 'nothing handed in'})"
    try:
        return read_notebook(submission.content), None
    except SubmissionError as err:
        return None, f"(the notebook cannot be read: {err})"


def task_answer(notebook: nbformat.NotebookNode | None, task: int, given: set[str] | None = None) -> str | None:
    """The student's answer to hand-marked ``task``, wherever in the task's section they
    wrote it: what a marker reads, on the marking sheet and on the service's marking page.

    The cell tagged ``autograder.answer = N`` (else the first markdown cell after the
    heading), plus every non-empty cell of the section whose source is not among ``given``
    (the handed-out notebook's cell sources; None: unknown, so no cell counts as added), in
    notebook order, separated by a blank line. ``notebook`` is one read by
    ``autograder.notebook.read_notebook`` (None: unreadable). None when the task has no
    answer cell: the caller says so in its own words.
    """
    cells: list[nbformat.NotebookNode] = notebook.cells if notebook is not None else []
    section = task_section(cells, task)
    tagged = next((c for c in cells if _answer_tag(c) == str(task)), None)
    if tagged is None:
        tagged = next((c for c in section if c.cell_type == "markdown"), None)
    added = [c for c in section if c is not tagged and given is not None and c.source.strip()
             and c.source.strip() not in given]
    parts = [c for c in cells if c is tagged or any(c is a for a in added)]
    if not parts:
        return None
    return "\n\n".join(c.source if c is tagged else f"[{c.cell_type} cell added by the student]\n{c.source}"
                        for c in parts)


def _answer_tag(cell: nbformat.NotebookNode) -> str | None:
    """The task a cell's metadata says it answers: the student's file, so of any shape."""
    meta = cell.get("metadata", {}).get("autograder", {})
    return str(meta.get("answer")) if isinstance(meta, dict) and "answer" in meta else None


def task_section(cells: Sequence[nbformat.NotebookNode], task: int) -> list[nbformat.NotebookNode]:
    """The cells after the prompt of ``task`` and before the next task's prompt."""
    for index, cell in enumerate(cells):
        if _heading_task(cell) == task:
            section = []
            for after in cells[index + 1 :]:
                if _heading_task(after) is not None:
                    break
                section.append(after)
            return section
    return []


def _heading_task(cell: nbformat.NotebookNode) -> int | None:
    if cell.cell_type != "markdown":
        return None
    number = cell.get("metadata", {}).get("autograder", {}).get("task")
    if isinstance(number, int):
        return number
    heading = TASK_HEADING.match(first_line(cell))
    return int(heading[1]) if heading else None


def _read_rows(sheet: Path, required: Sequence[str] = ("key", "task", "points", "comment")) -> list[dict[str, str]]:
    try:
        text = sheet.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ManualMarksError(f"{sheet} cannot be read as UTF-8 CSV: {err}") from err
    header = text.split("\n", 1)[0]
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=max((",", ";", "\t"), key=header.count))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise ManualMarksError(f"{sheet}: the header lacks {', '.join(missing)}: keep the columns as exported")
    rows: list[dict[str, str]] = []
    try:
        for row in reader:
            rows.append({name: value or "" for name, value in row.items() if name is not None})
    except csv.Error as err:  # a cell over csv's field limit (131,072 characters), which no exported cell is
        raise ManualMarksError(f"{sheet}, row {len(rows) + 2}: {err}: shorten that cell (an exported answer "
                               f"is at most {SHEET_ANSWER_CHARS:,} characters)") from err
    return rows


def parse_number(text: str) -> float | None:
    """A number as a marker writes it (``7.5``, ``7,5``, ``-2``); None when it is not one."""
    text = text.strip().replace(",", ".")
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


@cache
def _page() -> Template:
    """The marking sheet's HTML view (``autograder/templates/marking_sheet.html.j2``)."""
    return environment("autograder").get_template("marking_sheet.html.j2")
