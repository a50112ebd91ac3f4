"""The gradebook: every result a run produced, in one SQLite file in the output folder.

Why SQLite: each result is committed in its own transaction, so a run killed halfway
keeps everything it finished and a re-run picks up where it stopped (``lookup`` returns
the stored result when the submission, the hidden tests and the grader are unchanged).
WAL mode and a busy timeout let two processes write at once without corrupting the file.

Manual marks live in their own table and are applied when results are read, so
re-grading a submission replaces its autograded points but never a marker's work.
Results are stored as the JSON document of ``autograder.formats.result_json``, the same
document ``grade --json`` prints; nothing is pickled.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from autograder.exceptions import GradebookError
from autograder.formats import result_json
from autograder.formats.points import format_points
from autograder.manual import apply_marks
from autograder.results import SubmissionResult
from autograder.rubric import RubricItem, rubric_comment, rubric_points

FILENAME = "gradebook.sqlite"  # its name inside a week's output folder
SCHEMA_VERSION = 3
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another process's transaction

_SCHEMA = (
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        week TEXT NOT NULL,
        grader_version TEXT NOT NULL,
        started TEXT NOT NULL,
        finished TEXT,                      -- NULL: still running, or the run was killed
        counts TEXT NOT NULL DEFAULT '{}'   -- JSON: results recorded per status, and "reused"
    )
    """,
    """
    CREATE TABLE results (
        week TEXT NOT NULL,
        key TEXT NOT NULL,
        submission_sha256 TEXT,
        tests_sha256 TEXT,
        grader_version TEXT NOT NULL,
        status TEXT NOT NULL,
        score REAL NOT NULL,
        max_score REAL NOT NULL,
        document TEXT NOT NULL,             -- result_json.to_dict as recorded; marks apply on read
        recorded TEXT NOT NULL,
        run_id INTEGER REFERENCES runs(id),
        PRIMARY KEY (week, key)
    )
    """,
    """
    CREATE TABLE manual_marks (
        week TEXT NOT NULL,
        key TEXT NOT NULL,
        task INTEGER NOT NULL,
        points REAL NOT NULL,
        comment TEXT NOT NULL,
        marked TEXT NOT NULL,
        PRIMARY KEY (week, key, task)
    )
    """,
)
_MIGRATIONS = {  # from version N to N + 1
    1: ("ALTER TABLE manual_marks ADD COLUMN answer_sha256 TEXT",),  # the answer marked; NULL: unknown
    2: (  # rubric items (autograder.rubric), and which marks use them
        """
        CREATE TABLE rubric_items (
            week TEXT NOT NULL,
            task INTEGER NOT NULL,
            number INTEGER NOT NULL,        -- from 1 within the task: what markers write and see
            points REAL NOT NULL,           -- negative: a deduction
            comment TEXT NOT NULL,
            PRIMARY KEY (week, task, number)
        )
        """,
        """
        CREATE TABLE rubric_applied (
            week TEXT NOT NULL,
            key TEXT NOT NULL,
            task INTEGER NOT NULL,
            number INTEGER NOT NULL,
            PRIMARY KEY (week, key, task, number),
            FOREIGN KEY (week, task, number) REFERENCES rubric_items (week, task, number)
        )
        """,
        # NULL: points given directly; else the mark is a rubric mark and this its adjustment
        "ALTER TABLE manual_marks ADD COLUMN adjustment REAL",
        "ALTER TABLE manual_marks ADD COLUMN note TEXT NOT NULL DEFAULT ''",  # a rubric mark's own comment
    ),
}


@dataclass(frozen=True)
class ManualMark:
    """A marker's points and comment for one manual task of one submission."""

    points: float
    comment: str
    marked: str  # ISO 8601 UTC time of the last change
    answer_sha256: str | None = None  # the answer the marker saw; None for marks from before this was kept
    items: tuple[int, ...] = ()  # the rubric items it uses (numbers within the task); () for direct points
    adjustment: float | None = None  # a rubric mark's adjustment; None: points given directly
    note: str = ""  # a rubric mark's own comment (``comment`` holds the items' comments too)

    @property
    def by_rubric(self) -> bool:
        """Whether the mark is made of rubric items (its points and comment are computed)."""
        return self.adjustment is not None


@dataclass(frozen=True)
class RunRecord:
    """One ``grade`` run as the gradebook saw it; ``finished`` is None if it never ended."""

    id: int
    week: str
    grader_version: str
    started: str
    finished: str | None
    counts: dict[str, int] = field(default_factory=dict)


def _while_locked(step: Callable[[], object]) -> None:
    """Retry ``step`` while another process holds the file. Switching a new file to WAL
    (and creating the schema) can report "database is locked" at once, without waiting on
    the busy timeout, when two processes open the same new gradebook together."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@contextmanager
def transaction(db: sqlite3.Connection, lock: AbstractContextManager[Any]) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``db`` under ``lock`` (the connection is shared by threads).
    BEGIN IMMEDIATE takes the write lock up front, so concurrent writers queue on the busy
    timeout instead of failing when a read would have to become a write, and checks made
    inside see no other writer in between."""
    with lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


class Gradebook:
    """An open gradebook file; use ``Gradebook.open(path)`` as a context manager."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path
        # Results may be recorded from an executor's callback threads; one lock keeps
        # the connection's transactions from interleaving.
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: Path | str) -> Gradebook:
        """Open (creating if needed) the gradebook at ``path``, in WAL mode."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            _while_locked(lambda: db.execute("PRAGMA journal_mode=WAL"))
            db.execute("PRAGMA foreign_keys=ON")
            book = cls(db, path)
            _while_locked(book._migrate)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise GradebookError(f"{path}: cannot open the gradebook: {exc}") from exc
        except BaseException:
            db.close()
            raise
        return book

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._db, self._lock)

    def _read(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one query under the lock, so it never reads another thread's open transaction."""
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _migrate(self) -> None:
        with self._transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise GradebookError.newer_schema(self.path, version, SCHEMA_VERSION)
            if version == 0:
                for statement in _SCHEMA:
                    db.execute(statement)
                version = 1
            for step in range(version, SCHEMA_VERSION):
                for statement in _MIGRATIONS[step]:
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # --- runs -------------------------------------------------------------------------

    def begin_run(self, week: str, *, grader_version: str) -> int:
        """Note that a run started; returns the id to pass to ``record`` and ``finish_run``."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO runs (week, grader_version, started) VALUES (?, ?, ?)",
                (week, grader_version, _now()),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def finish_run(self, run_id: int, *, reused: int = 0) -> RunRecord:
        """Close a run: counts the results it recorded per status, plus ``reused``
        (submissions skipped because ``lookup`` found them unchanged)."""
        with self._transaction() as db:
            counts = dict(
                db.execute(
                    "SELECT status, COUNT(*) FROM results WHERE run_id = ? GROUP BY status ORDER BY status",
                    (run_id,),
                ).fetchall()
            )
            counts["reused"] = reused
            updated = db.execute(
                "UPDATE runs SET finished = ?, counts = ? WHERE id = ?", (_now(), json.dumps(counts), run_id)
            )
            if updated.rowcount != 1:
                raise GradebookError(f"{self.path}: no run {run_id} to finish")
        return next(r for r in self.runs() if r.id == run_id)

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first (a killed run shows ``finished`` None)."""
        rows = self._read("SELECT id, week, grader_version, started, finished, counts FROM runs ORDER BY id")
        return [
            RunRecord(id=i, week=w, grader_version=v, started=s, finished=f, counts=json.loads(c))
            for i, w, v, s, f, c in rows
        ]

    # --- results ----------------------------------------------------------------------

    def record(self, result: SubmissionResult, *, run_id: int | None = None) -> None:
        """Store ``result``, replacing any earlier one for its (week, key), in one transaction."""
        if not result.week or not result.key:
            raise GradebookError(f"{self.path}: a result needs a week and a key to be recorded ({result.submission!r})")
        document = result_json.to_dict(result)
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO results (week, key, submission_sha256, tests_sha256, grader_version, "
                "status, score, max_score, document, recorded, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result.week,
                    result.key,
                    result.submission_sha256,
                    result.tests_sha256,
                    result.grader_version,
                    result.status.value,
                    result.score,
                    result.max_score,
                    json.dumps(document, ensure_ascii=False),
                    _now(),
                    run_id,
                ),
            )

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
        rows = self._read(
            "SELECT document FROM results WHERE week = ? AND key = ? AND submission_sha256 = ? "
            "AND tests_sha256 IS ? AND grader_version = ?",
            (week, key, submission_sha256, tests_sha256, grader_version),
        )
        if not rows:
            return None
        return apply_marks(result_json.from_dict(json.loads(rows[0][0])), self._marks_for(week, key))

    def recorded_seed(self, week: str, key: str, *, submission_sha256: str | None) -> int | None:
        """The seed the stored result of this very submission was graded with, else None.

        A regrade passes it back (``Submission.seed``) so the hidden tests draw the same
        data and the score is reproduced exactly. Only the same content gets it again: a
        changed hand-in under the same key draws a fresh seed, so resubmitting never
        replays inputs a student may have seen in feedback."""
        if submission_sha256 is None:
            return None
        rows = self._read(
            "SELECT document FROM results WHERE week = ? AND key = ? AND submission_sha256 = ?",
            (week, key, submission_sha256),
        )
        if not rows:
            return None
        seed = json.loads(rows[0][0]).get("seed")
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    def results(self, week: str) -> list[SubmissionResult]:
        """Every stored result of ``week``, ordered by key, with manual marks applied."""
        rows = self._read("SELECT key, document FROM results WHERE week = ? ORDER BY key", (week,))
        marks = self.manual_marks(week)
        return [apply_marks(result_json.from_dict(json.loads(doc)), marks.get(key, {})) for key, doc in rows]

    def weeks(self) -> list[str]:
        """The weeks that have results, sorted."""
        return [w for (w,) in self._read("SELECT DISTINCT week FROM results ORDER BY week")]

    # --- manual marks -----------------------------------------------------------------

    def set_manual(self, week: str, key: str, task: int, *, points: float, comment: str = "",
                   answer_sha256: str | None = None) -> None:
        """Store a marker's points for a manual task; checked against the stored result.

        ``answer_sha256`` ties the mark to the answer the marker read: when a regrade finds
        another answer, the mark is stale and not counted until given again. Points given
        directly replace a rubric mark (its items no longer apply to this answer)."""
        with self._transaction() as db:
            maximum = self._manual_maximum(db, week, key, task)
            if not 0 <= points <= maximum:
                raise GradebookError(
                    f"{self.path}: {points} points for task {task} of {key!r} is outside 0..{maximum}"
                )
            self._write_mark(db, week, key, task, points=float(points), comment=comment,
                             answer_sha256=answer_sha256)

    def set_rubric_mark(self, week: str, key: str, task: int, *, items: Sequence[int], adjustment: float = 0.0,
                        note: str = "", answer_sha256: str | None = None) -> ManualMark:
        """Mark a manual task with rubric ``items`` (numbers within the task), an
        ``adjustment`` and the marker's own ``note``; points and comment follow the
        definition of ``autograder.rubric`` and are kept up to date when an item changes."""
        with self._transaction() as db:
            maximum = self._manual_maximum(db, week, key, task)
            defined = {i.number: i for i in self._rubric(db, week, task)}
            unknown = sorted(set(items) - set(defined))
            if unknown:
                raise GradebookError(f"{self.path}: task {task} of {week} has no rubric item "
                                     f"{', '.join(map(str, unknown))}: define it first")
            if abs(adjustment) > maximum:
                raise GradebookError(f"{self.path}: an adjustment of {format_points(adjustment)} for task {task} is "
                                     f"larger than the task's {format_points(maximum)} points")
            chosen = [defined[n] for n in sorted(set(items))]
            self._write_mark(db, week, key, task, points=rubric_points(chosen, adjustment, maximum),
                             comment=rubric_comment(chosen, note), answer_sha256=answer_sha256,
                             rubric=(tuple(i.number for i in chosen), adjustment, note))
        return self._marks_for(week, key)[task]

    def _manual_maximum(self, db: sqlite3.Connection, week: str, key: str, task: int) -> float:
        """Inside a transaction: the points of ``key``'s hand-graded ``task``, or why it cannot be marked."""
        row = db.execute("SELECT document FROM results WHERE week = ? AND key = ?", (week, key)).fetchone()
        if row is None:
            raise GradebookError(f"{self.path}: no result for {key!r} in {week}: grade the week before marking it")
        stored = result_json.from_dict(json.loads(row[0]))
        try:
            target = stored.task(task)
        except KeyError:
            raise GradebookError(f"{self.path}: {key!r} in {week} has no task {task}") from None
        if not target.manual:
            raise GradebookError(f"{self.path}: task {task} of {week} is autograded, not marked by hand")
        return target.max_score

    @staticmethod
    def _write_mark(db: sqlite3.Connection, week: str, key: str, task: int, *, points: float, comment: str,
                    answer_sha256: str | None, rubric: tuple[tuple[int, ...], float, str] | None = None) -> None:
        """Inside a transaction: the mark row and the rubric items it uses (``rubric``:
        item numbers, adjustment, note; None for points given directly)."""
        items, adjustment, note = rubric if rubric is not None else ((), None, "")
        db.execute(
            "INSERT OR REPLACE INTO manual_marks (week, key, task, points, comment, marked, answer_sha256, "
            "adjustment, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (week, key, task, points, comment, _now(), answer_sha256, adjustment, note),
        )
        db.execute("DELETE FROM rubric_applied WHERE week = ? AND key = ? AND task = ?", (week, key, task))
        db.executemany("INSERT INTO rubric_applied (week, key, task, number) VALUES (?, ?, ?, ?)",
                       [(week, key, task, number) for number in items])

    def manual_marks(self, week: str) -> dict[str, dict[int, ManualMark]]:
        """``{key: {task: ManualMark}}`` for every marked submission of ``week``."""
        return self._marks("week = ?", (week,))

    def _marks_for(self, week: str, key: str) -> dict[int, ManualMark]:
        return self._marks("week = ? AND key = ?", (week, key)).get(key, {})

    def _marks(self, where: str, params: tuple[str, ...]) -> dict[str, dict[int, ManualMark]]:
        applied: dict[tuple[str, int], list[int]] = {}
        for key, task, number in self._read(
                f"SELECT key, task, number FROM rubric_applied WHERE {where} ORDER BY number", params):
            applied.setdefault((key, task), []).append(number)
        marks: dict[str, dict[int, ManualMark]] = {}
        for key, task, points, comment, marked, answer, adjustment, note in self._read(
            "SELECT key, task, points, comment, marked, answer_sha256, adjustment, note FROM manual_marks "
            f"WHERE {where} ORDER BY key, task", params
        ):
            marks.setdefault(key, {})[task] = ManualMark(points, comment, marked, answer,
                                                         tuple(applied.get((key, task), ())), adjustment, note)
        return marks

    # --- rubric items -----------------------------------------------------------------

    def rubric(self, week: str, task: int | None = None) -> list[RubricItem]:
        """The rubric items of ``week`` (of one ``task``), by task and number."""
        with self._lock:
            return self._rubric(self._db, week, task)

    @staticmethod
    def _rubric(db: sqlite3.Connection, week: str, task: int | None = None) -> list[RubricItem]:
        rows = db.execute("SELECT task, number, points, comment FROM rubric_items WHERE week = ? "
                          "AND (? IS NULL OR task = ?) ORDER BY task, number", (week, task, task)).fetchall()
        return [RubricItem(week, t, number, points, comment) for t, number, points, comment in rows]

    def add_rubric_item(self, week: str, task: int, *, points: float, comment: str,
                        number: int | None = None) -> RubricItem:
        """A new rubric item for a hand-graded task of ``week``, numbered ``number`` (None:
        after the last; a number in use is refused)."""
        with self._transaction() as db:
            self._check_item(db, week, task, points, comment)
            last = db.execute("SELECT COALESCE(MAX(number), 0) FROM rubric_items WHERE week = ? AND task = ?",
                              (week, task)).fetchone()[0]
            taken = number is not None and db.execute(
                "SELECT 1 FROM rubric_items WHERE week = ? AND task = ? AND number = ?",
                (week, task, number)).fetchone()
            if taken or (number is not None and number < 1):
                raise GradebookError(f"{self.path}: task {task} of {week} cannot have another item {number}")
            number = number if number is not None else last + 1
            db.execute("INSERT INTO rubric_items (week, task, number, points, comment) VALUES (?, ?, ?, ?, ?)",
                       (week, task, number, float(points), comment.strip()))
        return RubricItem(week, task, number, float(points), comment.strip())

    def edit_rubric_item(self, week: str, task: int, number: int, *, points: float, comment: str) -> list[str]:
        """Change an item's points and comment, and recompute every mark that uses it in the
        same transaction; the keys whose marks changed (their outputs must be written again)."""
        with self._transaction() as db:
            self._check_item(db, week, task, points, comment)
            changed = db.execute("UPDATE rubric_items SET points = ?, comment = ? WHERE week = ? AND task = ? "
                                 "AND number = ?", (float(points), comment.strip(), week, task, number))
            if changed.rowcount != 1:
                raise GradebookError(f"{self.path}: task {task} of {week} has no rubric item {number}")
            keys = [key for (key,) in db.execute(
                "SELECT key FROM rubric_applied WHERE week = ? AND task = ? AND number = ? ORDER BY key",
                (week, task, number)).fetchall()]
            defined = {i.number: i for i in self._rubric(db, week, task)}
            for key in keys:
                adjustment, note, answer = db.execute(
                    "SELECT adjustment, note, answer_sha256 FROM manual_marks WHERE week = ? AND key = ? AND task = ?",
                    (week, key, task)).fetchone()
                chosen = [defined[n] for (n,) in db.execute(
                    "SELECT number FROM rubric_applied WHERE week = ? AND key = ? AND task = ? ORDER BY number",
                    (week, key, task)).fetchall()]
                maximum = self._manual_maximum(db, week, key, task)
                self._write_mark(db, week, key, task, points=rubric_points(chosen, adjustment or 0.0, maximum),
                                 comment=rubric_comment(chosen, note), answer_sha256=answer,
                                 rubric=(tuple(i.number for i in chosen), adjustment or 0.0, note))
        return keys

    def _check_item(self, db: sqlite3.Connection, week: str, task: int, points: float, comment: str) -> None:
        """Inside a transaction: an item fits a hand-graded task of a graded week, and says something."""
        row = db.execute("SELECT key FROM results WHERE week = ? ORDER BY key LIMIT 1", (week,)).fetchone()
        if row is None:
            raise GradebookError(f"{self.path}: no result in {week}: grade the week before writing its rubric")
        maximum = self._manual_maximum(db, week, row[0], task)
        if not -maximum <= points <= maximum:
            raise GradebookError(f"{self.path}: a rubric item of {format_points(points)} points for task {task} is "
                                 f"outside -{format_points(maximum)}..{format_points(maximum)} (the task's points, "
                                 "either way)")
        if not comment.strip():
            raise GradebookError(f"{self.path}: a rubric item for task {task} needs a comment: it is what the "
                                 "student reads")
