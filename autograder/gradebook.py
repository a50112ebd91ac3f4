"""The gradebook: every result a run produced, in one database (by default a SQLite file
in the output folder; ``autograder.database`` opens it and keeps its schema).

Each result is committed in its own transaction, so a run killed halfway keeps
everything it finished and a re-run picks up where it stopped (``lookup`` returns the
stored result when the submission, the hidden tests and the grader are unchanged).
Two processes may write at once (SQLite: WAL and a busy timeout, in ``autograder.database``).

Manual marks live in their own table and are applied when results are read, so
re-grading a submission replaces its autograded points but never a marker's work; a mark
given to an earlier hand-in of the same answer carries to a new one when it is recorded
(``record``'s ``carry_from``). The grading service keeps no copy of a result either: its
attempts are results here (key ``attempt-<id>``), read with ``read_marks`` and
``marked_result`` inside its own queries.
An instructor's override of an autograded task's points (``set_override``: points, the
reason the student reads, who and when) lives in its own table too and is applied where
marks are (``apply_marks``): a regrade keeps it, even when the tests now give the same
points (the instructor removes it), and removing it brings back the tests' points.
Results are stored as the JSON document of ``autograder.formats.result_json``, the same
document ``grade --json`` prints; nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Connection, and_, delete, func, insert, select, update

from autograder.database import Database, clock, open_database
from autograder.database.tables import manual_marks, results, rubric_applied, rubric_items, runs, score_overrides
from autograder.exceptions import GradebookError
from autograder.formats import result_json
from autograder.formats.points import format_points
from autograder.i18n.runtime import N_
from autograder.results import SubmissionResult
from autograder.rubric import RubricItem, rubric_comment, rubric_points

FILENAME = "gradebook.sqlite"  # its name inside a week's output folder

# Changes the gradebook refuses, said by more than one check (GradebookError.refusing: translated on a page)
OUTSIDE_POINTS = N_("{points} points for task {task} of {key} is outside 0..{maximum}, the task's points")
NO_RUBRIC_ITEM = N_("task {task} of {week} has no rubric item {numbers}: define it first")
NO_TASK = N_("{key} in {week} has no task {task}")
MARKED_BY_SHEET = "sheet"  # the marker of a mark merged from a marking sheet (``merge-manual``)


@dataclass(frozen=True)
class ManualMark:
    """A marker's points and comment for one manual task of one submission."""

    points: float
    comment: str
    marked: datetime  # the last change (aware, UTC)
    answer_sha256: str | None = None  # the answer the marker saw; None for marks from before this was kept
    items: tuple[int, ...] = ()  # the rubric items it uses (numbers within the task); () for direct points
    adjustment: float | None = None  # a rubric mark's adjustment; None: points given directly
    note: str = ""  # a rubric mark's own comment (``comment`` holds the items' comments too)
    marker: str | None = None  # who saved it: an LMS user, MARKED_BY_SHEET; None for marks from before this was kept

    @property
    def by_rubric(self) -> bool:
        """Whether the mark is made of rubric items (its points and comment are computed)."""
        return self.adjustment is not None


@dataclass(frozen=True)
class ScoreOverride:
    """An instructor's points for an autograded task of one result, in place of the tests':
    a test that was wrong, code right in a way the tests missed. ``reason`` is shown to the
    student; ``by`` and ``at`` say who gave it and when (aware, UTC)."""

    points: float
    reason: str
    by: str
    at: datetime


NO_OVERRIDES: Mapping[int, ScoreOverride] = MappingProxyType({})


@dataclass(frozen=True)
class RunRecord:
    """One ``grade`` run as the gradebook saw it; ``finished`` is None if it never ended."""

    id: int
    week: str
    grader_version: str
    started: datetime
    finished: datetime | None
    counts: dict[str, int] = field(default_factory=dict)


class MarkOnRecord(Protocol):
    """A mark as the sheet (``manual.Mark``) or the gradebook (``ManualMark``) holds it."""

    @property
    def points(self) -> float: ...
    @property
    def comment(self) -> str: ...
    @property
    def answer_sha256(self) -> str | None: ...


def apply_marks(result: SubmissionResult, marks: Mapping[int, MarkOnRecord],
                overrides: Mapping[int, ScoreOverride] = NO_OVERRIDES) -> SubmissionResult:
    """Put the marker's points and comments (task number -> mark) on ``result``'s manual
    tasks and the instructor's ``overrides`` (task number -> override) on its autograded
    ones, in place; its totals follow (computed). The one place marks meet a result.

    An override takes the task's points (at most its maximum, should a new version of the
    tests lower it) and keeps the tests' in ``autograded_score``; one for a task marked by
    hand is not applied (``set_override`` refuses it; the hand mark is what counts there).

    A mark given to another answer than the one graded now is stale: it stays visible
    (points kept in the comment's place for the sheet) but the task counts as pending.
    Marks are checked against the tasks where they come in (``manual.read_marks``,
    ``Gradebook.set_manual``), not here.
    """
    for task in result.tasks:
        mark = marks.get(task.task)
        if task.manual and mark is not None:
            task.comment = mark.comment
            if mark.answer_sha256 and task.answer_sha256 and mark.answer_sha256 != task.answer_sha256:
                task.stale, task.score = True, 0.0
            else:
                task.score, task.marked = mark.points, True
        override = overrides.get(task.task)
        if not task.manual and override is not None:
            task.autograded_score, task.override_reason = task.score, override.reason
            task.score = min(override.points, task.max_score)
    return result


def read_marks(db: Connection, week: str, keys: Collection[str] | None = None) -> dict[str, dict[int, ManualMark]]:
    """Inside a transaction: ``{key: {task: ManualMark}}`` for the marked submissions of
    ``week`` (of ``keys`` only, if given), in two queries whatever their number."""

    def where(table: Any) -> ColumnElement[bool]:
        return and_(table.c.week == week, *([table.c.key.in_(keys)] if keys is not None else []))

    applied: dict[tuple[str, int], list[int]] = {}
    for k, task, number in db.execute(select(rubric_applied.c.key, rubric_applied.c.task, rubric_applied.c.number)
                                      .where(where(rubric_applied)).order_by(rubric_applied.c.number)):
        applied.setdefault((k, task), []).append(number)
    rows = db.execute(select(manual_marks.c.key, manual_marks.c.task, manual_marks.c.points, manual_marks.c.comment,
                             manual_marks.c.marked, manual_marks.c.answer_sha256, manual_marks.c.adjustment,
                             manual_marks.c.note, manual_marks.c.marker)
                      .where(where(manual_marks)).order_by(manual_marks.c.key, manual_marks.c.task)).all()
    marks: dict[str, dict[int, ManualMark]] = {}
    for k, task, points, comment, marked, answer, adjustment, note, marker in rows:
        marks.setdefault(k, {})[task] = ManualMark(points, comment, marked, answer,
                                                   tuple(applied.get((k, task), ())), adjustment, note, marker)
    return marks


def read_overrides(db: Connection, week: str, keys: Collection[str] | None = None
                   ) -> dict[str, dict[int, ScoreOverride]]:
    """Inside a transaction: ``{key: {task: ScoreOverride}}`` for the overridden results of
    ``week`` (of ``keys`` only, if given), in one query."""
    query = select(score_overrides.c.key, score_overrides.c.task, score_overrides.c.points,
                   score_overrides.c.reason, score_overrides.c.by, score_overrides.c.at
                   ).where(score_overrides.c.week == week).order_by(score_overrides.c.key, score_overrides.c.task)
    if keys is not None:
        query = query.where(score_overrides.c.key.in_(keys))
    overrides: dict[str, dict[int, ScoreOverride]] = {}
    for key, task, points, reason, by, at in db.execute(query):
        overrides.setdefault(key, {})[task] = ScoreOverride(points, reason, by, at)
    return overrides


def marked_result(document: Mapping[str, Any], marks: Mapping[int, MarkOnRecord],
                  overrides: Mapping[int, ScoreOverride] = NO_OVERRIDES) -> SubmissionResult:
    """A stored result document (the ``results.document`` column, ``result_json.to_dict``'s
    dict) read, with its marks (``read_marks``) and overrides (``read_overrides``) applied:
    what every reader of a result sees."""
    return apply_marks(result_json.from_dict(document), marks, overrides)


class Gradebook:
    """An open gradebook; use ``Gradebook.open(location)`` as a context manager."""

    def __init__(self, database: Database, *, owned: bool = True) -> None:
        self.database = database
        self.path = database.where  # the file (or the database's URL), for messages
        self._owned = owned  # closing the gradebook closes the database (not one shared with a store)

    @classmethod
    def open(cls, location: Path | str) -> Gradebook:
        """Open (creating or migrating if needed) the gradebook at ``location``: a file path
        (SQLite) or a database URL (``autograder.database``)."""
        return cls(open_database(location))

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connections (unless the database belongs to someone else)."""
        if self._owned:
            self.database.close()

    # --- runs -------------------------------------------------------------------------

    def begin_run(self, week: str, *, grader_version: str) -> int:
        """Note that a run started; returns the id to pass to ``record`` and ``finish_run``."""
        with self.database.write() as db:
            return int(db.execute(insert(runs).values(week=week, grader_version=grader_version, started=clock.now())
                                  .returning(runs.c.id)).scalar_one())

    def finish_run(self, run_id: int, *, reused: int = 0) -> RunRecord:
        """Close a run: counts the results it recorded per status, plus ``reused``
        (submissions skipped because ``lookup`` found them unchanged)."""
        with self.database.write() as db:
            counts: dict[str, int] = {status: n for status, n in db.execute(
                select(results.c.status, func.count()).where(results.c.run_id == run_id)
                .group_by(results.c.status).order_by(results.c.status))}
            counts["reused"] = reused
            updated = db.execute(update(runs).where(runs.c.id == run_id)
                                 .values(finished=clock.now(), counts=counts))
            if updated.rowcount != 1:
                raise GradebookError(f"{self.path}: no run {run_id} to finish")
        return next(r for r in self.runs() if r.id == run_id)

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first (a killed run shows ``finished`` None)."""
        with self.database.read() as db:
            rows = db.execute(select(runs.c.id, runs.c.week, runs.c.grader_version, runs.c.started,
                                     runs.c.finished, runs.c.counts).order_by(runs.c.id)).all()
        return [
            RunRecord(id=i, week=w, grader_version=v, started=s, finished=f, counts=dict(c))
            for i, w, v, s, f, c in rows
        ]

    # --- results ----------------------------------------------------------------------

    def record(self, result: SubmissionResult, *, run_id: int | None = None, carry_from: Sequence[str] = ()) -> None:
        """Store ``result``, replacing any earlier one for its (week, key), in one transaction.

        ``carry_from``: the keys of the same student's earlier hand-ins of the week, oldest
        first. A hand-graded task that has no mark of its own takes the latest of their
        marks given to the very same answer (``answer_sha256``), in the same transaction: a
        student who improves the code but not the written answer is not marked twice. A
        rubric mark carries as its items, so a later change of an item reaches this result
        too; a mark that no longer fits the task (its points above the task's now) stays
        behind."""
        if not result.week or not result.key:
            raise GradebookError(f"{self.path}: a result needs a week and a key to be recorded ({result.submission!r})")
        document = result_json.to_dict(result)
        row = {"week": result.week, "key": result.key, "submission_sha256": result.submission_sha256,
               "tests_sha256": result.tests_sha256, "grader_version": result.grader_version,
               "status": result.status.value, "score": result.score, "max_score": result.max_score,
               "document": document, "recorded": clock.now(), "run_id": run_id}
        with self.database.write() as db:
            db.execute(self.database.upsert(results, row, keys=("week", "key")))
            if carry_from:
                self._carry_marks(db, result, carry_from)

    def _carry_marks(self, db: Connection, result: SubmissionResult, earlier: Sequence[str]) -> None:
        """Inside ``record``'s transaction: ``result``'s unmarked hand-graded tasks take the
        latest mark of ``earlier`` keys given to the same answer."""
        week, key = result.week, result.key
        marks = read_marks(db, week, [key, *earlier])
        for task in result.tasks:
            if not (task.manual and task.answer_sha256) or task.task in marks.get(key, {}):
                continue
            mark = next((m for k in reversed(earlier) if (m := marks.get(k, {}).get(task.task)) is not None
                         and m.answer_sha256 == task.answer_sha256), None)
            if mark is None:
                continue
            if mark.by_rubric:
                defined = {i.number: i for i in self._rubric(db, week, task.task)}
                chosen = [defined[n] for n in mark.items if n in defined]
                adjustment = mark.adjustment or 0.0
                self._write_mark(db, week, key, task.task,
                                 points=rubric_points(chosen, adjustment, task.max_score),
                                 comment=rubric_comment(chosen, mark.note), answer_sha256=task.answer_sha256,
                                 rubric=(tuple(i.number for i in chosen), adjustment, mark.note), marker=mark.marker)
            elif 0 <= mark.points <= task.max_score:
                self._write_mark(db, week, key, task.task, points=mark.points, comment=mark.comment,
                                 answer_sha256=task.answer_sha256, marker=mark.marker)

    def lookup(
        self,
        week: str,
        key: str,
        *,
        submission_sha256: str | None,
        tests_sha256: str | None,
        grader_version: str,
    ) -> SubmissionResult | None:
        """The stored result if grading again would change nothing, else None.

        A submission without content (``submission_sha256`` None) is never reused: there
        is nothing to compare, and its result costs nothing to make again.
        """
        if submission_sha256 is None:
            return None
        with self.database.read() as db:
            document = db.execute(select(results.c.document).where(
                results.c.week == week, results.c.key == key, results.c.submission_sha256 == submission_sha256,
                results.c.tests_sha256.is_not_distinct_from(tests_sha256),
                results.c.grader_version == grader_version)).scalar()
            return None if document is None else self._applied(db, week, key, document)

    def result(self, week: str, key: str) -> SubmissionResult | None:
        """The stored result of ``key`` with its marks and overrides applied, whatever it was graded with;
        None if there is none."""
        with self.database.read() as db:
            document = db.execute(select(results.c.document).where(results.c.week == week,
                                                                    results.c.key == key)).scalar()
            return None if document is None else self._applied(db, week, key, document)

    @staticmethod
    def _applied(db: Connection, week: str, key: str, document: Mapping[str, Any]) -> SubmissionResult:
        """Inside a transaction: ``key``'s stored ``document`` read with its marks and overrides."""
        return marked_result(document, read_marks(db, week, [key]).get(key, {}),
                             read_overrides(db, week, [key]).get(key, {}))

    def recorded_seed(self, week: str, key: str, *, submission_sha256: str | None) -> int | None:
        """The seed the stored result of this very submission was graded with, else None.

        A regrade passes it back (``Submission.seed``) so the hidden tests draw the same
        data and the score is reproduced exactly. Only the same content gets it again: a
        changed hand-in under the same key draws a fresh seed, so resubmitting never
        replays inputs a student may have seen in feedback."""
        if submission_sha256 is None:
            return None
        with self.database.read() as db:
            document = db.execute(select(results.c.document).where(
                results.c.week == week, results.c.key == key,
                results.c.submission_sha256 == submission_sha256)).scalar()
        if document is None:
            return None
        seed = document.get("seed")
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    def results(self, week: str, keys: Collection[str] | None = None) -> list[SubmissionResult]:
        """Every stored result of ``week`` (of ``keys`` only, if given: one course's
        attempts in a shared database), ordered by key, with manual marks and overrides applied."""
        query = select(results.c.key, results.c.document).where(results.c.week == week).order_by(results.c.key)
        with self.database.read() as db:  # each document read as it comes: a week's dicts are never all held
            marks, overrides = read_marks(db, week, keys), read_overrides(db, week, keys)
            rows = db.execute(query if keys is None else query.where(results.c.key.in_(keys)))
            return [marked_result(doc, marks.get(key, {}), overrides.get(key, {})) for key, doc in rows]

    def weeks(self) -> list[str]:
        """The weeks that have results, sorted."""
        with self.database.read() as db:
            return list(db.execute(select(results.c.week).distinct().order_by(results.c.week)).scalars())

    # --- manual marks -----------------------------------------------------------------

    def set_manual(self, week: str, key: str, task: int, *, points: float, comment: str = "",
                   answer_sha256: str | None = None, marker: str | None = None) -> None:
        """Store a marker's points for a manual task; checked against the stored result.
        ``marker`` says who gave them (``ManualMark.marker``); of two saves the later stands.

        ``answer_sha256`` ties the mark to the answer the marker read: when a regrade finds
        another answer, the mark is stale and not counted until given again. Points given
        directly replace a rubric mark (its items no longer apply to this answer)."""
        with self.database.write() as db:
            maximum = self._manual_maximum(db, week, key, task)
            if not 0 <= points <= maximum:
                raise GradebookError.refusing(self.path, OUTSIDE_POINTS, points=format_points(points), task=task,
                                              key=repr(key), maximum=format_points(maximum))
            self._write_mark(db, week, key, task, points=float(points), comment=comment,
                             answer_sha256=answer_sha256, marker=marker)

    def set_rubric_mark(self, week: str, key: str, task: int, *, items: Sequence[int], adjustment: float = 0.0,
                        note: str = "", answer_sha256: str | None = None, marker: str | None = None) -> ManualMark:
        """Mark a manual task with rubric ``items`` (numbers within the task), an
        ``adjustment`` and the marker's own ``note``; points and comment follow the
        definition of ``autograder.rubric`` and are kept up to date when an item changes."""
        with self.database.write() as db:
            maximum = self._manual_maximum(db, week, key, task)
            defined = {i.number: i for i in self._rubric(db, week, task)}
            unknown = sorted(set(items) - set(defined))
            if unknown:
                raise GradebookError.refusing(self.path, NO_RUBRIC_ITEM, task=task, week=week,
                                              numbers=", ".join(map(str, unknown)))
            if abs(adjustment) > maximum:
                raise GradebookError.refusing(
                    self.path, N_("an adjustment of {adjustment} for task {task} is larger than the task's {maximum} "
                                  "points"), adjustment=format_points(adjustment), task=task,
                    maximum=format_points(maximum))
            chosen = [defined[n] for n in sorted(set(items))]
            self._write_mark(db, week, key, task, points=rubric_points(chosen, adjustment, maximum),
                             comment=rubric_comment(chosen, note), answer_sha256=answer_sha256,
                             rubric=(tuple(i.number for i in chosen), adjustment, note), marker=marker)
        return self._marks_for(week, key)[task]

    def _manual_maximum(self, db: Connection, week: str, key: str, task: int) -> float:
        """Inside a transaction: the points of ``key``'s hand-graded ``task``, or why it cannot be marked."""
        document = db.execute(select(results.c.document).where(results.c.week == week, results.c.key == key)).scalar()
        if document is None:
            raise GradebookError(f"{self.path}: no result for {key!r} in {week}: grade the week before marking it")
        stored = result_json.from_dict(document)
        try:
            target = stored.task(task)
        except KeyError:
            raise GradebookError.refusing(self.path, NO_TASK, key=repr(key), week=week, task=task) from None
        if not target.manual:
            raise GradebookError.refusing(self.path, N_("task {task} of {week} is autograded, not marked by hand"),
                                          task=task, week=week)
        return target.max_score

    def _write_mark(self, db: Connection, week: str, key: str, task: int, *, points: float, comment: str,
                    answer_sha256: str | None, marker: str | None,
                    rubric: tuple[tuple[int, ...], float, str] | None = None) -> None:
        """Inside a transaction: the mark row and the rubric items it uses (``rubric``:
        item numbers, adjustment, note; None for points given directly), saved by ``marker``."""
        items, adjustment, note = rubric if rubric is not None else ((), None, "")
        mark = {"week": week, "key": key, "task": task, "points": points, "comment": comment, "marked": clock.now(),
                "answer_sha256": answer_sha256, "adjustment": adjustment, "note": note, "marker": marker}
        db.execute(self.database.upsert(manual_marks, mark, keys=("week", "key", "task")))
        db.execute(delete(rubric_applied).where(rubric_applied.c.week == week, rubric_applied.c.key == key,
                                                rubric_applied.c.task == task))
        if items:
            db.execute(insert(rubric_applied), [{"week": week, "key": key, "task": task, "number": n} for n in items])

    def manual_marks(self, week: str) -> dict[str, dict[int, ManualMark]]:
        """``{key: {task: ManualMark}}`` for every marked submission of ``week``."""
        return self._marks(week)

    def _marks_for(self, week: str, key: str) -> dict[int, ManualMark]:
        return self._marks(week, key).get(key, {})

    def _marks(self, week: str, key: str | None = None) -> dict[str, dict[int, ManualMark]]:
        with self.database.read() as db:
            return read_marks(db, week, None if key is None else [key])

    # --- overrides of autograded points -----------------------------------------------

    def set_override(self, week: str, key: str, task: int, *, points: float, reason: str,
                     by: str) -> ScoreOverride:
        """An instructor's ``points`` for autograded ``task`` of ``key``'s result in place of
        what the tests gave, with the ``reason`` the student reads and who gave it (``by``);
        replaces an earlier override of the same task. Checked against the stored result:
        an autograded task, points within 0 and its maximum, a reason that says something."""
        reason = reason.strip()
        with self.database.write() as db:
            document = db.execute(select(results.c.document).where(results.c.week == week,
                                                                    results.c.key == key)).scalar()
            if document is None:
                raise GradebookError(f"{self.path}: no result for {key!r} in {week}: grade it before overriding "
                                     "its points")
            try:
                target = result_json.from_dict(document).task(task)
            except KeyError:
                raise GradebookError.refusing(self.path, NO_TASK, key=repr(key), week=week, task=task) from None
            if target.manual:
                raise GradebookError.refusing(
                    self.path, N_("task {task} of {week} is marked by hand: give it a mark instead of an override"),
                    task=task, week=week)
            if not 0 <= points <= target.max_score:
                raise GradebookError.refusing(self.path, OUTSIDE_POINTS, points=format_points(points), task=task,
                                              key=repr(key), maximum=format_points(target.max_score))
            if not reason:
                raise GradebookError.refusing(
                    self.path, N_("an override of task {task} of {key} needs a reason: the student reads it beside "
                                  "the new points"), task=task, key=repr(key))
            override = ScoreOverride(float(points), reason, by, clock.now())
            db.execute(self.database.upsert(score_overrides, {
                "week": week, "key": key, "task": task, "points": override.points, "reason": override.reason,
                "by": override.by, "at": override.at}, keys=("week", "key", "task")))
        return override

    def remove_override(self, week: str, key: str, task: int) -> None:
        """Take back the override of ``task`` of ``key``: the tests' points count again."""
        with self.database.write() as db:
            removed = db.execute(delete(score_overrides).where(
                score_overrides.c.week == week, score_overrides.c.key == key, score_overrides.c.task == task))
            if removed.rowcount != 1:
                raise GradebookError.refusing(self.path, N_("task {task} of {key} in {week} has no override to remove"),
                                              task=task, key=repr(key), week=week)

    def overrides(self, week: str, keys: Collection[str] | None = None) -> dict[str, dict[int, ScoreOverride]]:
        """``{key: {task: ScoreOverride}}`` for every overridden result of ``week`` (of ``keys`` only, if given)."""
        with self.database.read() as db:
            return read_overrides(db, week, keys)

    # --- rubric items -----------------------------------------------------------------

    def rubric(self, week: str, task: int | None = None) -> list[RubricItem]:
        """The rubric items of ``week`` (of one ``task``), by task and number."""
        with self.database.read() as db:
            return self._rubric(db, week, task)

    @staticmethod
    def _rubric(db: Connection, week: str, task: int | None = None) -> list[RubricItem]:
        query = select(rubric_items.c.task, rubric_items.c.number, rubric_items.c.points, rubric_items.c.comment
                       ).where(rubric_items.c.week == week).order_by(rubric_items.c.task, rubric_items.c.number)
        if task is not None:
            query = query.where(rubric_items.c.task == task)
        return [RubricItem(week, t, number, points, comment) for t, number, points, comment in db.execute(query)]

    def add_rubric_item(self, week: str, task: int, *, points: float, comment: str,
                        number: int | None = None) -> RubricItem:
        """A new rubric item for a hand-graded task of ``week``, numbered ``number`` (None:
        after the last; a number in use is refused)."""
        with self.database.write() as db:
            self.database.lock(db, "rubric", week, task)
            self._check_item(db, week, task, points, comment)
            numbers = set(db.execute(select(rubric_items.c.number).where(rubric_items.c.week == week,
                                                                         rubric_items.c.task == task)).scalars())
            if number in numbers or (number is not None and number < 1):
                raise GradebookError(f"{self.path}: task {task} of {week} cannot have another item {number}")
            number = number if number is not None else max(numbers, default=0) + 1
            db.execute(insert(rubric_items).values(week=week, task=task, number=number, points=float(points),
                                                   comment=comment.strip()))
        return RubricItem(week, task, number, float(points), comment.strip())

    def edit_rubric_item(self, week: str, task: int, number: int, *, points: float, comment: str) -> list[str]:
        """Change an item's points and comment, and recompute every mark that uses it in the
        same transaction; the keys whose marks changed (their outputs must be written again)."""
        with self.database.write() as db:
            self._check_item(db, week, task, points, comment)
            changed = db.execute(update(rubric_items).where(
                rubric_items.c.week == week, rubric_items.c.task == task, rubric_items.c.number == number)
                .values(points=float(points), comment=comment.strip()))
            if changed.rowcount != 1:
                raise GradebookError.refusing(self.path, NO_RUBRIC_ITEM, task=task, week=week, numbers=number)
            of_task = (rubric_applied.c.week == week, rubric_applied.c.task == task)
            keys = list(db.execute(select(rubric_applied.c.key).where(*of_task, rubric_applied.c.number == number)
                                   .order_by(rubric_applied.c.key)).scalars())
            defined = {i.number: i for i in self._rubric(db, week, task)}
            for key in keys:
                adjustment, note, answer, marker = db.execute(select(
                    manual_marks.c.adjustment, manual_marks.c.note, manual_marks.c.answer_sha256,
                    manual_marks.c.marker).where(
                    manual_marks.c.week == week, manual_marks.c.key == key, manual_marks.c.task == task)).one()
                chosen = [defined[n] for n in db.execute(select(rubric_applied.c.number).where(
                    *of_task, rubric_applied.c.key == key).order_by(rubric_applied.c.number)).scalars()]
                maximum = self._manual_maximum(db, week, key, task)
                self._write_mark(db, week, key, task, points=rubric_points(chosen, adjustment or 0.0, maximum),
                                 comment=rubric_comment(chosen, note), answer_sha256=answer,
                                 rubric=(tuple(i.number for i in chosen), adjustment or 0.0, note), marker=marker)
        return keys

    def _check_item(self, db: Connection, week: str, task: int, points: float, comment: str) -> None:
        """Inside a transaction: an item fits a hand-graded task of a graded week, and says something."""
        key = db.execute(select(results.c.key).where(results.c.week == week).order_by(results.c.key).limit(1)).scalar()
        if key is None:
            raise GradebookError(f"{self.path}: no result in {week}: grade the week before writing its rubric")
        maximum = self._manual_maximum(db, week, key, task)
        if not -maximum <= points <= maximum:
            raise GradebookError.refusing(
                self.path, N_("a rubric item of {points} points for task {task} is outside -{maximum}..{maximum} "
                              "(the task's points, either way)"), points=format_points(points), task=task,
                maximum=format_points(maximum))
        if not comment.strip():
            raise GradebookError.refusing(
                self.path, N_("a rubric item for task {task} needs a comment: it is what the student reads"),
                task=task)
