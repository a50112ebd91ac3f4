"""What the service's marking pages show: each student's latest graded attempt with its
hand-graded tasks' answers, and for the rubric page the answers of each task in groups of
similar ones (``autograder.grouping``) beside the task's rubric items.

Kept apart from the routes (routes/marking.py) so that they only say who may ask and read the form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.exceptions import Refused
from autograder.gradebook import ManualMark
from autograder.grouping import group_answers
from autograder.i18n.runtime import N_
from autograder.manual import parse_number, task_answer
from autograder.notebook import read_notebook
from autograder.results import TaskResult
from autograder.rubric import RubricItem

if TYPE_CHECKING:
    from autograder.service.store import Attempt, Store

NO_ANSWER = "(no answer)"


@dataclass(frozen=True)
class Answer:
    """One student's answer to one hand-graded task, and how it is marked now."""

    attempt: Attempt
    name: str
    task: TaskResult  # with the mark applied: score, marked, stale, comment
    text: str | None
    mark: ManualMark | None  # the gradebook's: which rubric items, adjustment, note


@dataclass(frozen=True)
class TaskMarking:
    """A hand-graded task on the rubric page: its items and its answers in groups."""

    number: int
    title: str
    max_score: float
    items: list[RubricItem]
    groups: list[list[Answer]]


def answers_to_mark(store: Store, context: str, week: str) -> list[tuple[Attempt, str, list[tuple[TaskResult,
                                                                                             str | None]]]]:
    """Each student's latest graded attempt with its hand-graded tasks and their answers."""
    latest: dict[str, Attempt] = {}
    for attempt in store.week_attempts(context=context, week=week):
        if attempt.state == "graded":
            latest[attempt.user] = attempt
    rows = []
    results = store.results_of(list(latest.values()))
    for user, attempt in sorted(latest.items()):
        result = results.get(attempt.id)
        manual = [task for task in result.tasks if task.manual] if result else []
        if not manual:
            continue
        notebook = read_notebook(store.content(attempt))
        rows.append((attempt, store.user_name(context, user) or user,
                     [(task, task_answer(notebook, task.task)) for task in manual]))
    return rows


def rubric_view(store: Store, context: str, week: str) -> list[TaskMarking]:
    """Every hand-graded task of ``week`` with its rubric and its answers grouped."""
    marks = store.gradebook.manual_marks(week)
    by_task: dict[int, list[Answer]] = {}
    titles: dict[int, tuple[str, float]] = {}
    for attempt, name, tasks in answers_to_mark(store, context, week):
        for task, text in tasks:
            titles.setdefault(task.task, (task.title, task.max_score))
            by_task.setdefault(task.task, []).append(
                Answer(attempt, name, task, text, marks.get(attempt.key, {}).get(task.task)))
    view = []
    for number, answers in sorted(by_task.items()):
        keyed: Mapping[str, Answer] = {a.attempt.key: a for a in answers}
        groups = group_answers({key: answer.text or "" for key, answer in keyed.items()})
        title, max_score = titles[number]
        view.append(TaskMarking(number, title, max_score, store.gradebook.rubric(week, number),
                                [[keyed[key] for key in group] for group in groups]))
    return view


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
