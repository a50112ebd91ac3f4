"""What the service's marking pages show: the week's hand-graded tasks with their progress
and statistics, and for one task its answers in groups of similar ones
(``answer_groups``, computed off the request), one answer at a time beside the task's rubric items, with the
student's code cells and outputs for that task.

Built for a class of 300, so a page shows one answer (and the rest of its group) rather
than every answer. Marking is anonymous by default: a student is "Student 17", a number
given by the order in which the week's students first handed in (stable as others hand in,
and not the LMS's id); names are shown when the marker asks. Nothing on the page is
selected for the marker: a decision applies to the answers the marker chose.

Kept apart from the routes (routes/marking.py) so that they only say who may ask and read the form.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from autograder.exceptions import AutograderError, GradebookError, Refused, SubmissionError
from autograder.gradebook import MARKED_BY_SHEET, ManualMark
from autograder.grouping import ANSWER_CHARS
from autograder.i18n.runtime import N_
from autograder.manual import parse_number, task_answer, task_section
from autograder.notebook import read_notebook
from autograder.results import TaskResult
from autograder.rubric import RubricItem
from autograder.service.answer_groups import groups as groups_of
from autograder.service.markers import assignments

if TYPE_CHECKING:
    from autograder.service.store import Attempt, Store

log = logging.getLogger(__name__)
OUTPUT_CHARS = 20_000  # of one text output: enough for any table or log a task prints
IMAGE_BYTES = 2_000_000  # of one image's base64: a plot, not a photograph album
OUTPUTS_PER_CELL = 20
IMAGE_TYPES = ("image/png", "image/jpeg")  # shown as images; SVG can carry script, so never
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colours in tracebacks


@dataclass(frozen=True)
class HandIn:
    """One student's latest graded attempt at the week, with its marks applied."""

    attempt: Attempt
    student: int  # "Student 17": the week's anonymous number
    tasks: dict[int, TaskResult]  # its hand-graded tasks by number


@dataclass(frozen=True)
class Answer:
    """One student's answer to one hand-graded task, and how it is marked now."""

    attempt: Attempt
    student: int
    task: TaskResult  # with the mark applied: score, marked, stale, comment
    text: str | None  # the first ``ANSWER_CHARS`` characters (the whole answer is shown for the one in view)
    mark: ManualMark | None  # the gradebook's: which rubric items, adjustment, note

    @property
    def done(self) -> bool:
        """Marked, and the mark still counts (not stale)."""
        return not self.task.pending

    @property
    def marked_by(self) -> str | None:
        """The course user who gave the mark; None when a sheet gave it, or it is older than markers."""
        marker = self.mark.marker if self.mark is not None else None
        return None if marker == MARKED_BY_SHEET else marker


@dataclass(frozen=True)
class TaskStats:
    """How far the marking of one task is, and what it gave."""

    number: int  # its title is the course's, in the page's language (the template's task_title)
    max_score: float
    answers: int
    marked: int
    mean: float | None
    median: float | None
    items: list[tuple[RubricItem, int]] = field(default_factory=list)  # each item and how many marks use it


@dataclass(frozen=True)
class Output:
    """One output of a code cell as the page shows it: text, or an image (a data: URI)."""

    text: str | None = None
    image: str | None = None


@dataclass(frozen=True)
class Cell:
    """One code cell of the task's section in the student's notebook."""

    source: str
    outputs: list[Output]


FILTER_FIELDS = ("unmarked", "with_item", "names", "marker", "keys")  # ``Filters.query``'s parameters


@dataclass(frozen=True)
class Filters:
    """What the marker narrowed the answers to; each is in the page's address."""

    unmarked: bool = False
    item: int | None = None  # answers whose mark uses this rubric item
    names: bool = False  # show the students' names
    marker: str = ""  # the hand-ins assigned to this marker (an LMS user: ``markers.assignments``)
    keys_off: bool = False  # the page's single-key shortcuts turned off (WCAG 2.1.4)

    def query(self) -> dict[str, str]:
        """The filters as query parameters, for the page's links and forms."""
        return {key: value for key, value in (("unmarked", "1" if self.unmarked else ""),
                                              ("with_item", str(self.item or "")), ("names", "1" if self.names else ""),
                                              ("marker", self.marker), ("keys", "off" if self.keys_off else ""))
                if value}


@dataclass(frozen=True)
class TaskPage:
    """One hand-graded task's marking page: one answer in view, its group, the way around."""

    stats: TaskStats
    week_marked: int
    week_answers: int
    items: list[RubricItem]
    grouped: bool  # False: the groups are being computed (answer_groups), each answer is shown alone meanwhile
    groups: list[list[Answer]]  # after the filters: groups with no answer left are dropped
    group_numbers: list[int]  # each shown group's number among all the task's groups
    group: int  # index into ``groups`` of the one in view (-1: no answer passes the filters)
    current: Answer | None
    text: str | None  # the whole answer in view
    cells: list[Cell]
    names: dict[int, str]  # attempt id -> the student's name, when asked for
    previous: int | None  # attempt ids to go to: the answer before and after, the group before and after
    following: int | None
    previous_group: int | None
    next_group: int | None


def student_numbers(attempts: Sequence[Attempt]) -> dict[str, int]:
    """Each student's anonymous number for a week: 1 for the first to hand in, and so on
    (``attempts`` oldest first, as ``week_attempts`` gives them), so a number never changes."""
    numbers: dict[str, int] = {}
    for attempt in attempts:
        numbers.setdefault(attempt.user, len(numbers) + 1)
    return numbers


def hand_ins(store: Store, context: str, week: str, marker: str = "") -> list[HandIn]:
    """Each student's latest scored attempt that has hand-graded tasks (of those assigned to
    ``marker``, if given), by anonymous number. An attempt being regraded stays, with its
    last result, until the new one lands."""
    every = store.week_attempts(context=context, week=week)
    numbers = student_numbers(every)
    latest = {attempt.user: attempt for attempt in every if attempt.scored}
    if marker:
        split = assignments(store, context, week)
        latest = {user: attempt for user, attempt in latest.items() if split.get(user) == marker}
    results = store.results_of(list(latest.values()))
    found = []
    for user, attempt in latest.items():
        result = results.get(attempt.id)
        manual = {task.task: task for task in result.tasks if task.manual} if result else {}
        if manual:
            found.append(HandIn(attempt, numbers[user], manual))
    return sorted(found, key=lambda hand_in: hand_in.student)


def task_stats(number: int, answers: Sequence[tuple[TaskResult, ManualMark | None]],
               items: Sequence[RubricItem]) -> TaskStats:
    """Answers, marked answers, their mean and median points, each rubric item's use."""
    done = [(task, mark) for task, mark in answers if not task.pending]
    points = [task.score for task, _ in done]
    used = {item.number: sum(1 for _, mark in done if mark is not None and item.number in mark.items)
            for item in items}
    first = answers[0][0]
    return TaskStats(number, first.max_score, len(answers), len(done),
                     statistics.fmean(points) if points else None, statistics.median(points) if points else None,
                     [(item, used[item.number]) for item in items])


def week_stats(store: Store, context: str, week: str, marker: str = "") -> list[TaskStats]:
    """Every hand-graded task of ``week`` with its progress and statistics (no notebook is
    read), over the hand-ins assigned to ``marker`` if given."""
    marks = store.gradebook.manual_marks(week)
    by_task: dict[int, list[tuple[TaskResult, ManualMark | None]]] = {}
    for hand_in in hand_ins(store, context, week, marker):
        for number, task in hand_in.tasks.items():
            by_task.setdefault(number, []).append((task, marks.get(hand_in.attempt.key, {}).get(number)))
    rubric: dict[int, list[RubricItem]] = {}
    for item in store.gradebook.rubric(week):
        rubric.setdefault(item.task, []).append(item)
    return [task_stats(number, answers, rubric.get(number, [])) for number, answers in sorted(by_task.items())]


@lru_cache(maxsize=1024)
def _answer_texts(upload: Path, tasks: tuple[int, ...]) -> tuple[str | None, ...]:
    """The first ``ANSWER_CHARS`` characters of an uploaded notebook's answer to each of
    ``tasks``. Uploads are kept by their content's hash, so the path names the content: each
    notebook is read once, not on every view of the page (300 reads take ~0.3 s)."""
    try:
        notebook = read_notebook(upload.read_bytes())
    except SubmissionError:
        notebook = None
    texts = (task_answer(notebook, task) for task in tasks)
    return tuple(text[:ANSWER_CHARS] if text is not None else None for text in texts)


def task_answers(store: Store, hand_ins_: Sequence[HandIn], week: str, task: int) -> list[Answer]:
    """Every answer to ``task``, in the order of the students' numbers, with its mark."""
    marks = store.gradebook.manual_marks(week)
    return [Answer(h.attempt, h.student, h.tasks[task],
                   _answer_texts(store.upload_path(h.attempt.content_hash), (task,))[0],
                   marks.get(h.attempt.key, {}).get(task)) for h in hand_ins_ if task in h.tasks]


def task_page(store: Store, context: str, week: str, task: int, filters: Filters, *,
              at: int | None = None, after: int | None = None) -> TaskPage | None:
    """The marking page of ``task``: the answer ``at`` (an attempt id) in view, else the
    first one after ``after`` in the task's order (where a marker goes once an answer is
    marked), else the first unmarked one, else the first; all among the answers the
    ``filters`` leave. None when no
    graded attempt has the task."""
    everyone = hand_ins(store, context, week)
    if filters.marker:  # the marker's share; the groups are the whole class's, numbered alike for every marker
        split = assignments(store, context, week)
        theirs = [h for h in everyone if split.get(h.attempt.user) == filters.marker]
    else:
        theirs = everyone
    answers = task_answers(store, everyone, week, task)
    mine = {h.attempt.id for h in theirs}
    if not any(answer.attempt.id in mine for answer in answers):
        return None
    items = store.gradebook.rubric(week, task)
    marks = store.gradebook.manual_marks(week)
    week_answers = [(t, marks.get(h.attempt.key, {}).get(n)) for h in theirs for n, t in h.tasks.items()]
    stats = task_stats(task, [(a.task, a.mark) for a in answers if a.attempt.id in mine], items)

    keyed = {answer.attempt.key: answer for answer in answers}
    found = groups_of(store, context, week, task, {key: answer.text or "" for key, answer in keyed.items()})
    all_groups = [[keyed[key] for key in group] for group in found] if found is not None else [[a] for a in answers]
    order = [answer.attempt.id for group in all_groups for answer in group]
    groups, numbers = [], []
    for number, group in enumerate(all_groups, start=1):
        kept = [answer for answer in group if answer.attempt.id in mine and passes(answer, filters)]
        if kept:
            groups.append(kept)
            numbers.append(number)
    shown = [answer for group in groups for answer in group]
    current = next((a for a in shown if a.attempt.id == at), None)
    if current is None and after is not None and after in order:
        later = set(order[order.index(after) + 1:])
        current = next((a for a in shown if a.attempt.id in later), None)
    if current is None and shown:
        current = next((answer for answer in shown if not answer.done), shown[0])  # where the marking is

    week_marked = sum(1 for t, _ in week_answers if not t.pending)
    if current is None:
        return TaskPage(stats, week_marked, len(week_answers), items, found is not None, groups, numbers, -1, None,
                        None, [], {}, None, None, None, None)
    shown_group = next(index for index, g in enumerate(groups) if current in g)
    position = shown.index(current)
    notebook, outputs = _notebook(store, current.attempt)
    named = groups[shown_group] if filters.names else []  # anonymous unless names are asked for
    known = store.user_names(context, [answer.attempt.user for answer in named])
    names = {answer.attempt.id: known.get(answer.attempt.user) or answer.attempt.user for answer in named}
    return TaskPage(stats, week_marked, len(week_answers), items, found is not None, groups, numbers, shown_group,
                    current,
                    task_answer(notebook, task), task_cells(notebook, outputs, task), names,
                    shown[position - 1].attempt.id if position > 0 else None,
                    shown[position + 1].attempt.id if position + 1 < len(shown) else None,
                    groups[shown_group - 1][0].attempt.id if shown_group > 0 else None,
                    groups[shown_group + 1][0].attempt.id if shown_group + 1 < len(groups) else None)


def passes(answer: Answer, filters: Filters) -> bool:
    """Whether an answer is one the marker asked to see."""
    if filters.unmarked and answer.done:
        return False
    return filters.item is None or (answer.mark is not None and filters.item in answer.mark.items)


def _notebook(store: Store, attempt: Attempt) -> tuple[nbformat.NotebookNode | None, list[object]]:
    """An attempt's notebook as the grader reads it, and each of its cells' outputs, which
    that reading drops (the grader never looks at them): from the file's own JSON, cell for
    cell (the cells ``read_notebook`` keeps are the ones with a ``cell_type``, in order).
    Outputs of the old nbformat 3 are not shown."""
    content = store.content(attempt)
    try:
        notebook = read_notebook(content)
    except SubmissionError:
        return None, []
    cells = json.loads(content.decode("utf-8-sig")).get("cells")  # read_notebook has parsed it: it parses
    if not isinstance(cells, list):
        return notebook, []
    return notebook, [cell.get("outputs") for cell in cells
                      if isinstance(cell, dict) and isinstance(cell.get("cell_type"), str)]


def task_cells(notebook: nbformat.NotebookNode | None, outputs: Sequence[object], task: int) -> list[Cell]:
    """The code cells of ``task``'s section with their ``outputs`` (each cell's, in the
    notebook's order), as the page may show them: text and PNG or JPEG images only, each
    bounded; never the student's HTML, SVG or JavaScript, which would run in the marker's page."""
    if notebook is None:
        return []
    index = {id(cell): number for number, cell in enumerate(notebook.cells)}
    shown = []
    for cell in task_section(notebook.cells, task):
        if cell.cell_type != "code":
            continue
        given = outputs[index[id(cell)]] if index[id(cell)] < len(outputs) else None
        kept = (_output(output) for output in (given if isinstance(given, list) else [])[:OUTPUTS_PER_CELL])
        shown.append(Cell(str(cell.source), [output for output in kept if output is not None]))
    return shown


def _output(output: object) -> Output | None:
    """One output of a student's cell made safe to show, or None (nothing showable)."""
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text"))
    if kind == "error":
        traceback = output.get("traceback")
        lines = traceback if isinstance(traceback, list) else [f"{output.get('ename')}: {output.get('evalue')}"]
        return _text(ANSI.sub("", "\n".join(str(line) for line in lines)))
    data = output.get("data")
    if kind not in ("execute_result", "display_data") or not isinstance(data, dict):
        return None
    for mime in IMAGE_TYPES:
        image = data.get(mime)
        if isinstance(image, list):
            image = "".join(str(part) for part in image)
        if isinstance(image, str) and len(image) <= IMAGE_BYTES:
            packed = "".join(image.split())
            try:
                base64.b64decode(packed, validate=True)
            except (binascii.Error, ValueError):
                continue
            return Output(image=f"data:{mime};base64,{packed}")
    return _text(data.get("text/plain"))


def _text(value: object) -> Output | None:
    text = "".join(str(part) for part in value) if isinstance(value, list) else value
    if not isinstance(text, str) or not text.strip():
        return None
    return Output(text=text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "\n…")


def is_row_id(number: int) -> bool:
    """Whether a number from a URL or a form can be a database row id (SQLite's are signed
    64-bit): a larger one is nobody's, answered as such rather than as an overflow."""
    return 0 < number < 2**63


def form_ids(values: Sequence[object], what: str, *, back: str) -> list[int]:
    """Row numbers a form or a path sent (attempt ids, task and item numbers); Refused (400)
    for anything else, so a number SQLite cannot hold is never asked for. ``what`` names the
    field, a catalog message (``N_``): the refusal is shown in the instructor's language."""
    ids = []
    for value in values:
        text = str(value).strip()
        if not text.isdigit() or not is_row_id(int(text)):
            raise Refused(400, N_("{what}: {value} is not one of this page's numbers: reload the page."), back=back,
                          terms={"what": what}, value=repr(text[:40]))
        ids.append(int(text))
    return ids


def refused_change(error: AutograderError, *, back: str) -> Refused:
    """The error page for a change the gradebook refused (``error``): its catalog message in the
    instructor's language, without the gradebook's path (the service's business, in the log);
    a failure that is not about what was asked says to try again."""
    if isinstance(error, GradebookError) and error.message is not None:
        return Refused(400, error.message, back=back, **error.values)
    log.warning("the gradebook did not take an instructor's change: %s", error)
    return Refused(400, N_("The gradebook did not take this change: reload the page and try again."), back=back)


def form_number(text: object, what: str, *, back: str, empty: float | None = None) -> float:
    """A number an instructor typed (``7.5`` or ``7,5``; ``empty`` when left blank, if
    given); Refused (400) saying which field is wrong (``what``, a catalog message), with a way ``back``."""
    value = str(text or "").strip()
    if not value and empty is not None:
        return empty
    number = parse_number(value)
    if number is None:
        raise Refused(400, N_("{what}: {value} is not a number (write e.g. 5, -2 or 7.5)."), back=back,
                      terms={"what": what}, value=repr(value))
    return number
