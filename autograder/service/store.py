"""The grading service's memory: attempts, the grading queue, counted scores and the AGS outbox.

Everything lives in the gradebook's SQLite file in the service's data folder (WAL, so the
web app, the grading threads and the outbox write at once), beside the gradebook's own
tables: each graded attempt is also a gradebook result (key ``attempt-<id>``), so manual
marks are the gradebook's marks (tied to the answer they were given to) and the CLI's
report and marking tools read the same file. Each state change is one transaction, and
the score post it causes is enqueued in that same transaction: a process killed at any
moment restarts with no attempt graded twice into the record and no score change lost.

Uploads are stored once per content (``uploads/<sha256[:2]>/<sha256>.ipynb``), written
before the attempt that names them. Every query a student's request can reach filters by
``(context, user)``; ``context`` is the launch's ``"<iss>|<deployment_id>|<context id>"``,
``user`` its ``sub``. Instructors' queries filter by ``context``.

Interface notes for the web app (D1), beyond /work/briefs/D-service-interface.md:
``attempt(id, context=..., user=...)`` filters in SQL (pass them on student routes);
``mark(...)`` stores a hand mark and re-posts the score; ``regrade(...)`` re-queues;
``result(...)`` gives the stored result with marks applied (the marking form's data);
``Post.state`` may also be ``"superseded"`` (a newer score for the same user replaced it
before it was sent); ``Attempt.penalty`` is a fraction of ``max_score``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, cast

from autograder.course import Course, Week, normalise_week_name
from autograder.exceptions import AttemptRefused, CourseError, GradebookError
from autograder.formats.result_json import from_dict, to_dict
from autograder.gradebook import FILENAME, Gradebook, transaction
from autograder.report import render_feedback
from autograder.results import SubmissionResult
from autograder.service.policy import WeekPolicy

SERVICE_SCHEMA = 1
MAX_TRIES = 3  # an attempt whose grading was interrupted this often is failed, not retried again
AttemptState = Literal["queued", "grading", "graded", "failed"]
PostState = Literal["pending", "posted", "failed", "superseded"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS service_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS service_users (
        context TEXT NOT NULL, user TEXT NOT NULL, name TEXT NOT NULL, email TEXT,
        PRIMARY KEY (context, user))""",
    """CREATE TABLE IF NOT EXISTS service_lineitems (
        context TEXT NOT NULL, week TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (context, week))""",
    """CREATE TABLE IF NOT EXISTS attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        context TEXT NOT NULL, user TEXT NOT NULL, week TEXT NOT NULL, number INTEGER NOT NULL,
        content_hash TEXT NOT NULL, submitted_at TEXT NOT NULL,
        state TEXT NOT NULL,                 -- queued, grading, graded, failed
        score REAL, max_score REAL NOT NULL DEFAULT 0, pending REAL NOT NULL DEFAULT 0,
        penalty REAL NOT NULL,               -- fraction of max_score taken off (late)
        counted_mode TEXT NOT NULL,          -- best or last, from the policy at upload
        tries INTEGER NOT NULL DEFAULT 0,    -- times grading started
        message TEXT,                        -- why grading failed
        title TEXT,                          -- the week's title, for feedback pages
        result_path TEXT, feedback_path TEXT, graded_at TEXT,
        UNIQUE (context, user, week, number))""",
    "CREATE INDEX IF NOT EXISTS attempts_queue ON attempts (state, week, id)",
    "CREATE INDEX IF NOT EXISTS attempts_owner ON attempts (context, user, week)",
    """CREATE TABLE IF NOT EXISTS service_scores (   -- the last score enqueued per user and week
        context TEXT NOT NULL, user TEXT NOT NULL, week TEXT NOT NULL,
        score REAL NOT NULL, max_score REAL NOT NULL, progress TEXT NOT NULL, attempt_id INTEGER NOT NULL,
        comment TEXT NOT NULL, last_timestamp TEXT,
        PRIMARY KEY (context, user, week))""",
    """CREATE TABLE IF NOT EXISTS posts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        context TEXT NOT NULL, user TEXT NOT NULL, week TEXT NOT NULL, lineitem TEXT NOT NULL,
        payload TEXT NOT NULL, state TEXT NOT NULL, tries INTEGER NOT NULL DEFAULT 0,
        next_try_at TEXT, last_error TEXT, posted_at TEXT, created_at TEXT NOT NULL,
        sending_since TEXT)                  -- set while a send is under way: its outcome is unknown""",
    "CREATE INDEX IF NOT EXISTS posts_due ON posts (state, next_try_at)",
)

# The queue, fair across learners: a learner's attempt waits behind every other learner's
# attempts that have had fewer turns. A turn is an attempt of theirs being graded, graded
# since the oldest waiting attempt was uploaded, or waiting ahead of it. One learner's ten
# uploads thus take every other learner's first in turn, and someone who uploads while they
# wait is graded next, not after the ten.
_FAIR_QUEUE = """
    WITH since AS (SELECT MIN(submitted_at) AS t FROM attempts WHERE state = 'queued'),
    served AS (SELECT context, user, COUNT(*) AS n FROM attempts, since
               WHERE state = 'grading' OR (state = 'graded' AND graded_at >= since.t) GROUP BY context, user),
    queue AS (SELECT id, tries, week, context, user,
                     ROW_NUMBER() OVER (PARTITION BY context, user ORDER BY id) - 1 AS ahead
              FROM attempts WHERE state = 'queued')
    SELECT q.id, q.tries, q.week FROM queue q LEFT JOIN served s ON s.context = q.context AND s.user = q.user
    ORDER BY COALESCE(s.n, 0) + q.ahead, q.id"""




@dataclass(frozen=True)
class Attempt:
    """One upload of one student for one week, and what grading made of it.

    ``score`` is as graded (hand marks applied, pending tasks at 0), before the late
    ``penalty`` (a fraction of ``max_score``); ``pending`` is the points still to mark."""

    id: int
    context: str
    user: str
    week: str
    number: int
    content_hash: str
    submitted_at: datetime
    state: AttemptState
    score: float | None
    max_score: float
    penalty: float
    result_path: Path | None
    feedback_path: Path | None
    pending: float = 0.0
    message: str | None = None
    counted_mode: Literal["best", "last"] = "best"  # the policy's choice when it was uploaded

    @property
    def key(self) -> str:
        """Its key in the gradebook (results and manual marks)."""
        return f"attempt-{self.id}"

    @property
    def counted(self) -> float | None:
        """The score after the late penalty: what this attempt is worth in the gradebook."""
        if self.score is None:
            return None
        return round(max(0.0, self.score - self.penalty * self.max_score), 6)


@dataclass(frozen=True)
class Post:
    """One AGS score post in the outbox and how sending it went."""

    id: int
    context: str
    user: str
    week: str
    lineitem: str
    payload: dict[str, Any]
    state: PostState
    tries: int
    next_try_at: datetime | None
    last_error: str | None
    posted_at: datetime | None
    sending_since: datetime | None = None

    @property
    def status(self) -> str:
        """For the instructor: posted, sending, retrying, failed or superseded (with ``last_error``)."""
        if self.state == "pending":
            return "retrying" if self.tries else "sending"
        return self.state


@dataclass(frozen=True)
class CountedScore:
    """What the gradebook should show for a user and week, and whether it is final."""

    score: float
    max_score: float
    progress: Literal["FullyGraded", "PendingManual"]
    attempt: Attempt


def stamp(moment: datetime) -> str:
    """How times are stored: UTC ISO 8601 with microseconds (sorts as text)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def ags_timestamp(moment: datetime) -> str:
    """An AGS timestamp: ISO 8601 UTC with milliseconds."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _now() -> datetime:
    return datetime.now(UTC)


_ATTEMPT_COLUMNS = ("id, context, user, week, number, content_hash, submitted_at, state, score, max_score, penalty, "
                    "result_path, feedback_path, pending, message, counted_mode")
_POST_COLUMNS = ("id, context, user, week, lineitem, payload, state, tries, next_try_at, last_error, posted_at, "
                 "sending_since")


def _attempt(row: Sequence[Any]) -> Attempt:
    (id_, context, user, week, number, content_hash, submitted_at, state, score, max_score, penalty,
     result_path, feedback_path, pending, message, counted_mode) = row
    return Attempt(id=id_, context=context, user=user, week=week, number=number, content_hash=content_hash,
                   submitted_at=cast(datetime, _when(submitted_at)), state=state, score=score, max_score=max_score,
                   penalty=penalty, result_path=Path(result_path) if result_path else None,
                   feedback_path=Path(feedback_path) if feedback_path else None, pending=pending, message=message,
                   counted_mode=counted_mode)


def _queue_under_canonical_names(db: sqlite3.Connection) -> None:
    """Waiting attempts an older version stored under the week name as typed (``1``, ``week1``):
    renamed to the canonical week, numbered after that week's attempts, so its grader claims
    them (under the alias none ever did, and the dispatcher restarted graders for them every
    few seconds). One whose name is no week at all is failed, saying why."""
    rows = db.execute("SELECT id, context, user, week FROM attempts WHERE state IN ('queued', 'grading') "
                      "ORDER BY id").fetchall()
    for id_, context, user, week in rows:
        try:
            canonical = normalise_week_name(week)
        except CourseError:
            db.execute("UPDATE attempts SET state = 'failed', message = ? WHERE id = ?", (
                f"uploaded under {week!r}, which names no week; it was not graded and does not count as an "
                "attempt: open the week's activity from the LMS and upload it again.", id_))
            continue
        if canonical != week:
            (number,) = db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE context = ? AND "
                                   "user = ? AND week = ?", (context, user, canonical)).fetchone()
            db.execute("UPDATE attempts SET week = ?, number = ? WHERE id = ?", (canonical, number, id_))


def _post(row: Sequence[Any]) -> Post:
    (id_, context, user, week, lineitem, payload, state, tries, next_try_at, last_error, posted_at,
     sending_since) = row
    return Post(id=id_, context=context, user=user, week=week, lineitem=lineitem, payload=json.loads(payload),
                state=state, tries=tries, next_try_at=_when(next_try_at), last_error=last_error,
                posted_at=_when(posted_at), sending_since=_when(sending_since))


class Store:
    """The service's data folder: ``gradebook.sqlite``, ``uploads/`` and ``results/``."""

    def __init__(self, root: Path, course: Course | None = None) -> None:
        self.root = Path(root)
        self.course = course  # for feedback pages in the student's language (the week's catalogs)
        self.root.mkdir(parents=True, exist_ok=True)
        self.gradebook = Gradebook.open(self.root / FILENAME)  # creates or migrates its own tables
        self._db = sqlite3.connect(self.root / FILENAME, timeout=30, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._transaction() as db:
                for statement in _SCHEMA:
                    db.execute(statement)
                row = db.execute("SELECT value FROM service_meta WHERE name = 'schema'").fetchone()
                if row is not None and int(row[0]) > SERVICE_SCHEMA:
                    raise GradebookError(f"{self.root / FILENAME}: service schema {row[0]} is newer than this "
                                         f"autograder's ({SERVICE_SCHEMA}); upgrade the autograder")
                db.execute("INSERT OR IGNORE INTO service_meta VALUES ('schema', ?)", (str(SERVICE_SCHEMA),))
                _queue_under_canonical_names(db)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._db.close()
        self.gradebook.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        # checks and writes inside see no other writer: two uploads cannot both pass ``max_attempts``
        return transaction(self._db, self._lock)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    # --- users and line items -------------------------------------------------------------

    def remember_user(self, context: str, user: str, name: str, email: str | None) -> None:
        """Keep the name and email a launch gave (shown to instructors, put on results)."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO service_users VALUES (?, ?, ?, ?)", (context, user, name, email))

    def user_name(self, context: str, user: str) -> str | None:
        rows = self._read("SELECT name FROM service_users WHERE context = ? AND user = ?", (context, user))
        return rows[0][0] if rows else None

    def set_lineitem(self, context: str, week: str, url: str) -> None:
        """Remember where a week's scores go; a new line item gets every current score."""
        with self._transaction() as db:
            old = db.execute("SELECT url FROM service_lineitems WHERE context = ? AND week = ?",
                             (context, week)).fetchone()
            if old is not None and old[0] == url:
                return
            db.execute("INSERT OR REPLACE INTO service_lineitems VALUES (?, ?, ?)", (context, week, url))
            for (user,) in db.execute("SELECT user FROM service_scores WHERE context = ? AND week = ?",
                                      (context, week)).fetchall():
                self._enqueue(db, context, user, week, url)

    def lineitem(self, context: str, week: str) -> str | None:
        rows = self._read("SELECT url FROM service_lineitems WHERE context = ? AND week = ?", (context, week))
        return rows[0][0] if rows else None

    # --- uploads and attempts -------------------------------------------------------------

    def upload_path(self, content_hash: str) -> Path:
        return self.root / "uploads" / content_hash[:2] / f"{content_hash}.ipynb"

    def content(self, attempt: Attempt) -> bytes:
        """The notebook an attempt uploaded."""
        return self.upload_path(attempt.content_hash).read_bytes()

    def submit(self, *, context: str, user: str, week: str, content: bytes, policy: WeekPolicy,
               now: datetime) -> Attempt:
        """Record an upload as a queued attempt, or raise ``AttemptRefused`` saying why.

        The file is stored (once per content) before the attempt names it, and the policy
        is checked in the transaction that inserts the attempt. ``week`` is the canonical name
        (``week01``): an alias would be a queue no grader claims and a count no limit sees."""
        if week != normalise_week_name(week):
            raise CourseError(f"{week!r} is not a canonical week name (week01 ...): normalise it before submitting")
        content_hash = hashlib.sha256(content).hexdigest()
        path = self.upload_path(content_hash)
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{threading.get_ident()}.partial")
            partial.write_bytes(content)
            partial.replace(path)
        with self._transaction() as db:
            rows = db.execute(f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE context = ? AND user = ? AND week = ? "
                              "ORDER BY number", (context, user, week)).fetchall()
            attempts = [_attempt(r) for r in rows]
            counting = [a for a in attempts if a.state != "failed"]
            why = policy.refusal(now=now, attempts_made=len(counting),
                                 last_submitted=counting[-1].submitted_at if counting else None)
            if why is None and counting and counting[-1].content_hash == content_hash:
                why = (f"This notebook is the same file as your attempt {counting[-1].number}: save your changes "
                       "in Jupyter, download the notebook again and upload that.")
            if why is not None:
                raise AttemptRefused(why)
            number = max((a.number for a in attempts), default=0) + 1
            cursor = db.execute(
                "INSERT INTO attempts (context, user, week, number, content_hash, submitted_at, state, penalty, "
                "counted_mode) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                (context, user, week, number, content_hash, stamp(now), policy.penalty(now), policy.counted))
            attempt_id = cursor.lastrowid
        found = self.attempt(cast(int, attempt_id))
        assert found is not None
        return found

    def attempt(self, attempt_id: int, *, context: str | None = None, user: str | None = None) -> Attempt | None:
        """One attempt; with ``context`` (and ``user``) only if it belongs to them."""
        sql = f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE id = ?"
        params: list[Any] = [attempt_id]
        if context is not None:
            sql, params = sql + " AND context = ?", [*params, context]
        if user is not None:
            sql, params = sql + " AND user = ?", [*params, user]
        rows = self._read(sql, params)
        return _attempt(rows[0]) if rows else None

    def attempts(self, *, context: str, user: str, week: str) -> list[Attempt]:
        """A student's attempts at a week, first to last."""
        return [_attempt(r) for r in self._read(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE context = ? AND user = ? AND week = ? ORDER BY number",
            (context, user, week))]

    def week_attempts(self, *, context: str, week: str) -> list[Attempt]:
        """Every attempt at a week in one course (for its instructors), oldest first."""
        return [_attempt(r) for r in self._read(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE context = ? AND week = ? ORDER BY id", (context, week))]

    def queue_position(self, attempt_id: int) -> int:
        """1 for the next attempt to be graded, 2 for the one after... in the fair order; 0 once
        grading started."""
        order = [row[0] for row in self._read(_FAIR_QUEUE)]
        return order.index(attempt_id) + 1 if attempt_id in order else 0

    def result(self, attempt_id: int, *, context: str, user: str | None = None) -> SubmissionResult | None:
        """A graded attempt's result with hand marks applied; None if not graded or not theirs."""
        attempt = self.attempt(attempt_id, context=context, user=user)
        if attempt is None or attempt.state != "graded" or attempt.result_path is None:
            return None
        return from_dict(json.loads(attempt.result_path.read_text(encoding="utf-8")))

    # --- the queue (the runner's side) ------------------------------------------------------

    def claim(self, weeks: Sequence[str] | None = None) -> Attempt | None:
        """Take the next queued attempt (of ``weeks``, if given) in the fair order for grading,
        atomically.

        An attempt whose grading already started ``MAX_TRIES`` times (each time the grader
        or the whole service died with it) is failed instead: it will not take the service
        down again."""
        with self._transaction() as db:
            for id_, tries, week in db.execute(_FAIR_QUEUE).fetchall():
                if weeks is not None and week not in weeks:
                    continue
                if tries >= MAX_TRIES:
                    db.execute("UPDATE attempts SET state = 'failed', message = ? WHERE id = ?", (
                        (f"grading stopped unexpectedly {tries} times while this notebook was graded; it was not "
                        "graded and does not count as an attempt. Tell your instructor."),
                        id_))
                    continue
                db.execute("UPDATE attempts SET state = 'grading', tries = tries + 1 WHERE id = ?", (id_,))
                return _attempt(db.execute(f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE id = ?",
                                           (id_,)).fetchone())
        return None

    def queued_weeks(self) -> dict[str, int]:
        """How many attempts wait per week, for the runner to start graders where work is."""
        return dict(self._read("SELECT week, COUNT(*) FROM attempts WHERE state = 'queued' GROUP BY week"))

    def oldest_queued_week(self) -> str | None:
        rows = self._read("SELECT week FROM attempts WHERE state = 'queued' ORDER BY id LIMIT 1")
        return rows[0][0] if rows else None

    def requeue_interrupted(self) -> int:
        """Put attempts left in ``grading`` by a stopped service back in the queue (at start)."""
        with self._transaction() as db:
            return db.execute("UPDATE attempts SET state = 'queued' WHERE state = 'grading'").rowcount

    def release(self, attempt_id: int, *, count_try: bool) -> None:
        """Give an attempt whose grading was cut short back to the queue. ``count_try``: the
        grader died with it (it may be the cause: ``claim`` fails it after ``MAX_TRIES``);
        else the service is stopping and the try does not count."""
        with self._transaction() as db:
            db.execute("UPDATE attempts SET state = 'queued', tries = tries - ? WHERE id = ? AND state = 'grading'",
                       (0 if count_try else 1, attempt_id))

    def regrade(self, *, context: str, week: str, attempt_id: int | None = None) -> int:
        """Queue graded attempts again (one, or the whole week's in this course); how many."""
        sql = "UPDATE attempts SET state = 'queued', tries = 0 WHERE context = ? AND week = ? AND state IN " \
              "('graded', 'failed')"
        params: list[Any] = [context, week]
        if attempt_id is not None:
            sql, params = sql + " AND id = ?", [*params, attempt_id]
        with self._transaction() as db:
            return db.execute(sql, params).rowcount

    def seed_for(self, attempt: Attempt) -> int | None:
        """The seed an earlier grading of this very attempt drew, so a regrade reproduces it."""
        return self.gradebook.recorded_seed(attempt.week, attempt.key, submission_sha256=attempt.content_hash)

    def record_result(self, attempt_id: int, result: SubmissionResult, *, week_title: str) -> Attempt:
        """Store a graded attempt: gradebook result, JSON and feedback page, then in one
        transaction the attempt's score and, if the counted score changed, its AGS post.

        Marks given to the same student's earlier attempts carry over to this one where
        the answer is the same text (the gradebook ties each mark to its answer)."""
        attempt = self.attempt(attempt_id)
        if attempt is None:
            raise GradebookError(f"no attempt {attempt_id} in {self.root / FILENAME}")
        result.key, result.week = attempt.key, attempt.week
        self.gradebook.record(result)
        self._carry_marks(attempt, result)
        marked = self.gradebook.lookup(attempt.week, attempt.key, submission_sha256=result.submission_sha256,
                                       tests_sha256=result.tests_sha256, grader_version=result.grader_version)
        final = marked if marked is not None else result
        json_path, html_path = self._write_pages(attempt, final, week_title)
        with self._transaction() as db:
            db.execute(
                "UPDATE attempts SET state = 'graded', score = ?, max_score = ?, pending = ?, title = ?, "
                "result_path = ?, feedback_path = ?, graded_at = ?, message = NULL WHERE id = ?",
                (final.score, final.max_score, final.pending_points, week_title, str(json_path), str(html_path),
                 stamp(_now()), attempt_id))
            self._refresh_score(db, attempt.context, attempt.user, attempt.week)
        updated = self.attempt(attempt_id)
        assert updated is not None
        return updated

    def fail(self, attempt_id: int, message: str) -> None:
        """Grading could not produce a result: the attempt is failed (it does not count)."""
        with self._transaction() as db:
            db.execute("UPDATE attempts SET state = 'failed', message = ? WHERE id = ?", (message, attempt_id))

    def mark(self, attempt_id: int, *, context: str, task: int, points: float, comment: str = "") -> Attempt:
        """An instructor's points for a hand-graded task of a graded attempt in their course.

        Stored as the gradebook's manual mark (checked there: a manual task, points within
        its maximum), the feedback page rewritten with it, and the score posted again when
        the counted score or its progress changes (e.g. PendingManual -> FullyGraded)."""
        attempt, answer = self._markable(attempt_id, context=context, task=task)
        self.gradebook.set_manual(attempt.week, attempt.key, task, points=points, comment=comment,
                                  answer_sha256=answer)
        return self._apply_marks(attempt)

    def rubric_mark(self, attempt_ids: Sequence[int], *, context: str, task: int, items: Sequence[int],
                    adjustment: float = 0.0, note: str = "") -> list[Attempt]:
        """One decision for many answers: rubric ``items`` (numbers), an ``adjustment`` and a
        ``note`` for ``task`` of each attempt (``autograder.rubric`` defines the mark);
        each attempt's page and score follow as with ``mark``. Every attempt is checked
        before any is marked."""
        checked = [self._markable(attempt_id, context=context, task=task) for attempt_id in attempt_ids]
        for attempt, answer in checked:
            self.gradebook.set_rubric_mark(attempt.week, attempt.key, task, items=items, adjustment=adjustment,
                                           note=note, answer_sha256=answer)
        return [self._apply_marks(attempt) for attempt, _ in checked]

    def edit_rubric_item(self, week: str, task: int, number: int, *, points: float, comment: str) -> list[Attempt]:
        """Change a rubric item; every attempt whose mark uses it gets its new result,
        feedback page and score post (``Gradebook.edit_rubric_item`` recomputes the marks)."""
        keys = self.gradebook.edit_rubric_item(week, task, number, points=points, comment=comment)
        attempts = [self.attempt(int(key.removeprefix("attempt-"))) for key in keys if key.startswith("attempt-")]
        return [self._apply_marks(a) for a in attempts if a is not None and a.result_path is not None]

    def _markable(self, attempt_id: int, *, context: str, task: int) -> tuple[Attempt, str | None]:
        """A graded attempt of the course and the fingerprint of its answer to ``task``, or why not."""
        attempt = self.attempt(attempt_id, context=context)
        if attempt is None or attempt.state != "graded" or attempt.result_path is None:
            raise GradebookError(f"attempt {attempt_id} is not a graded attempt of this course: nothing to mark")
        stored = from_dict(json.loads(attempt.result_path.read_text(encoding="utf-8")))
        try:
            return attempt, stored.task(task).answer_sha256
        except KeyError:
            raise GradebookError(f"{attempt.week} has no task {task}") from None

    def _apply_marks(self, attempt: Attempt) -> Attempt:
        """Rewrite an attempt's result and page with the gradebook's marks, then its score and post."""
        assert attempt.result_path is not None
        stored = from_dict(json.loads(attempt.result_path.read_text(encoding="utf-8")))
        marked = self.gradebook.lookup(attempt.week, attempt.key, submission_sha256=stored.submission_sha256,
                                       tests_sha256=stored.tests_sha256, grader_version=stored.grader_version)
        if marked is None:  # regraded since with other tests: the new result will carry the marks
            return attempt
        title = self._read("SELECT title FROM attempts WHERE id = ?", (attempt.id,))[0][0] or attempt.week
        json_path, html_path = self._write_pages(attempt, marked, title)
        with self._transaction() as db:
            db.execute("UPDATE attempts SET score = ?, pending = ?, result_path = ?, feedback_path = ? WHERE id = ?",
                       (marked.score, marked.pending_points, str(json_path), str(html_path), attempt.id))
            self._refresh_score(db, attempt.context, attempt.user, attempt.week)
        updated = self.attempt(attempt.id)
        assert updated is not None
        return updated

    def reconcile_marks(self) -> int:
        """Apply marks the gradebook holds but an attempt does not show yet; how many attempts changed.

        A service killed between storing a mark and posting its score, or marks merged into
        the data folder's gradebook with ``autograder merge-manual`` (keys ``attempt-<id>``),
        leave such attempts; the service calls this when it starts."""
        changed = 0
        for week in self.gradebook.weeks():
            marks = self.gradebook.manual_marks(week)
            rows = self._read(f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE week = ? AND state = 'graded'", (week,))
            for attempt in (_attempt(r) for r in rows):
                if attempt.key not in marks or attempt.result_path is None:
                    continue
                shown = from_dict(json.loads(attempt.result_path.read_text(encoding="utf-8")))
                tasks = {t.task: t for t in shown.tasks}
                if any(n not in tasks or (tasks[n].score, tasks[n].comment, tasks[n].marked)
                       != (m.points, m.comment, True) for n, m in marks[attempt.key].items()
                       if not (n in tasks and tasks[n].stale)):
                    self._apply_marks(attempt)
                    changed += 1
        return changed

    def _carry_marks(self, attempt: Attempt, result: SubmissionResult) -> None:
        answers = {t.task: t.answer_sha256 for t in result.tasks if t.manual and t.answer_sha256}
        if not answers:
            return
        earlier = [a for a in self.attempts(context=attempt.context, user=attempt.user, week=attempt.week)
                   if a.id != attempt.id]
        marks = self.gradebook.manual_marks(attempt.week)
        for task, answer in answers.items():
            if task in marks.get(attempt.key, {}):
                continue
            for other in reversed(earlier):
                mark = marks.get(other.key, {}).get(task)
                if mark is not None and mark.answer_sha256 == answer and mark.by_rubric:
                    # still made of its items, so a later change of an item reaches this attempt too
                    self.gradebook.set_rubric_mark(attempt.week, attempt.key, task, items=mark.items,
                                                   adjustment=mark.adjustment or 0.0, note=mark.note,
                                                   answer_sha256=answer)
                    break
                if mark is not None and mark.answer_sha256 == answer:
                    self.gradebook.set_manual(attempt.week, attempt.key, task, points=mark.points,
                                              comment=mark.comment, answer_sha256=answer)
                    break

    def _write_pages(self, attempt: Attempt, result: SubmissionResult, week_title: str) -> tuple[Path, Path]:
        folder = self.root / "results" / attempt.week
        folder.mkdir(parents=True, exist_ok=True)
        json_path, html_path = folder / f"{attempt.key}.json", folder / f"{attempt.key}.html"
        _write_atomically(json_path, json.dumps(to_dict(result), ensure_ascii=False, indent=1) + "\n")
        try:  # the page in the student's language needs the week's catalogs
            week: Week | None = self.course.week(attempt.week) if self.course is not None else None
        except CourseError:
            week = None
        _write_atomically(html_path, render_feedback(result, week_title=week_title, week=week))
        return json_path, html_path

    # --- counted scores ---------------------------------------------------------------------

    def counted_score(self, *, context: str, user: str, week: str) -> float | None:
        """The score the gradebook gets for this student and week (late penalty applied); None
        before any attempt is graded."""
        counted = self.counted(context=context, user=user, week=week)
        return None if counted is None else counted.score

    def counted(self, *, context: str, user: str, week: str) -> CountedScore | None:
        """The counted score with the attempt it comes from and whether it is final."""
        return self._counted(self.attempts(context=context, user=user, week=week))

    @staticmethod
    def _counted(attempts: list[Attempt]) -> CountedScore | None:
        """Best or last graded attempt (as the latest upload's policy said). For "best",
        pending hand-graded tasks count 0 and a tie goes to the later attempt."""
        graded = [a for a in attempts if a.state == "graded" and a.counted is not None]
        if not graded:
            return None
        chosen = graded[-1]
        if attempts[-1].counted_mode == "best":
            chosen = max(graded, key=lambda a: (a.counted, a.number))
        progress: Literal["FullyGraded", "PendingManual"] = "PendingManual" if chosen.pending > 0 else "FullyGraded"
        return CountedScore(score=cast(float, chosen.counted), max_score=chosen.max_score, progress=progress,
                            attempt=chosen)

    def _refresh_score(self, db: sqlite3.Connection, context: str, user: str, week: str) -> None:
        """Inside a transaction: if the counted score (or whether it is final) changed, note
        it and enqueue its post (when the week's line item is known)."""
        counted = self._counted([_attempt(r) for r in db.execute(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE context = ? AND user = ? AND week = ? ORDER BY number",
            (context, user, week)).fetchall()])
        if counted is None:
            return
        old = db.execute("SELECT score, max_score, progress, attempt_id FROM service_scores WHERE context = ? "
                         "AND user = ? AND week = ?", (context, user, week)).fetchone()
        new = (counted.score, counted.max_score, counted.progress, counted.attempt.id)
        if old is not None and tuple(old) == new:
            return
        late = f" after a late penalty of {counted.attempt.penalty:.0%}" if counted.attempt.penalty else ""
        pending = " Hand-graded tasks are not marked yet." if counted.progress == "PendingManual" else ""
        comment = (f"Attempt {counted.attempt.number}: {counted.score:g} of {counted.max_score:g} points"
                   f"{late}.{pending}")
        db.execute("INSERT INTO service_scores (context, user, week, score, max_score, progress, attempt_id, comment) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (context, user, week) DO UPDATE SET "
                   "score = excluded.score, max_score = excluded.max_score, progress = excluded.progress, "
                   "attempt_id = excluded.attempt_id, comment = excluded.comment", (context, user, week, *new, comment))
        url = db.execute("SELECT url FROM service_lineitems WHERE context = ? AND week = ?",
                         (context, week)).fetchone()
        if url is not None:
            self._enqueue(db, context, user, week, url[0])

    def _enqueue(self, db: sqlite3.Connection, context: str, user: str, week: str, lineitem: str) -> None:
        """Inside a transaction: the post of the user's current score, timestamped strictly
        after the last one (Moodle refuses an equal or older one with 409, to the second);
        older posts not sent yet are superseded by it."""
        row = db.execute("SELECT score, max_score, progress, comment, last_timestamp FROM service_scores "
                         "WHERE context = ? AND user = ? AND week = ?", (context, user, week)).fetchone()
        score, max_score, progress, comment, last = row
        now = _now()
        last_time = _when(last)
        moment = now if last_time is None or now >= last_time + timedelta(seconds=1) else last_time + timedelta(
            seconds=1)
        payload = {"userId": user, "scoreGiven": score, "scoreMaximum": max_score, "activityProgress": "Completed",
                   "gradingProgress": progress, "timestamp": ags_timestamp(moment), "comment": comment}
        db.execute("UPDATE service_scores SET last_timestamp = ? WHERE context = ? AND user = ? AND week = ?",
                   (stamp(moment), context, user, week))
        cursor = db.execute("INSERT INTO posts (context, user, week, lineitem, payload, state, next_try_at, "
                            "created_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
                            (context, user, week, lineitem, json.dumps(payload), stamp(now), stamp(now)))
        db.execute("UPDATE posts SET state = 'superseded', next_try_at = NULL, last_error = ? WHERE context = ? "
                   "AND user = ? AND lineitem = ? AND state = 'pending' AND id < ? AND sending_since IS NULL",
                   (f"replaced by post {cursor.lastrowid} before it was sent", context, user, lineitem,
                    cursor.lastrowid))

    # --- the outbox's side ------------------------------------------------------------------

    def posts(self, *, context: str, week: str | None = None) -> list[Post]:
        """The score posts of a course (one week, or all), newest first."""
        sql = f"SELECT {_POST_COLUMNS} FROM posts WHERE context = ?"
        params: list[Any] = [context]
        if week is not None:
            sql, params = sql + " AND week = ?", [*params, week]
        return [_post(r) for r in self._read(sql + " ORDER BY id DESC", params)]

    def due_posts(self, now: datetime, limit: int = 50) -> list[Post]:
        """Pending posts whose time has come, oldest first."""
        return [_post(r) for r in self._read(
            f"SELECT {_POST_COLUMNS} FROM posts WHERE state = 'pending' AND next_try_at <= ? ORDER BY id LIMIT ?",
            (stamp(now), limit))]

    def post_sending(self, post_id: int, now: datetime) -> None:
        """Note a send is under way: if the process dies now, its outcome is unknown."""
        with self._transaction() as db:
            db.execute("UPDATE posts SET sending_since = ?, tries = tries + 1 WHERE id = ?", (stamp(now), post_id))

    def post_done(self, post_id: int, now: datetime, note: str | None = None) -> None:
        with self._transaction() as db:
            db.execute("UPDATE posts SET state = 'posted', posted_at = ?, next_try_at = NULL, sending_since = NULL, "
                       "last_error = ? WHERE id = ?", (stamp(now), note, post_id))

    def post_retry(self, post_id: int, error: str, at: datetime, payload: dict[str, Any] | None = None) -> None:
        """Try again at ``at`` (with a new ``payload``, e.g. a later timestamp after a 409)."""
        with self._transaction() as db:
            db.execute("UPDATE posts SET next_try_at = ?, last_error = ?, sending_since = NULL WHERE id = ?",
                       (stamp(at), error, post_id))
            if payload is not None:
                db.execute("UPDATE posts SET payload = ? WHERE id = ?", (json.dumps(payload), post_id))
                row = db.execute("SELECT context, user, week FROM posts WHERE id = ?", (post_id,)).fetchone()
                db.execute("UPDATE service_scores SET last_timestamp = MAX(COALESCE(last_timestamp, ''), ?) "
                           "WHERE context = ? AND user = ? AND week = ?",
                           (stamp(_when(payload["timestamp"]) or _now()), *row))

    def post_failed(self, post_id: int, error: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE posts SET state = 'failed', next_try_at = NULL, sending_since = NULL, last_error = ? "
                       "WHERE id = ?", (error, post_id))

    def post_superseded(self, post_id: int, why: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE posts SET state = 'superseded', next_try_at = NULL, sending_since = NULL, "
                       "last_error = ? WHERE id = ?", (why, post_id))

    def retry_post(self, post_id: int, *, context: str) -> bool:
        """An instructor's "send again" for a failed post of their course; False if there is none."""
        with self._transaction() as db:
            return db.execute("UPDATE posts SET state = 'pending', next_try_at = ?, tries = 0 WHERE id = ? "
                              "AND context = ? AND state = 'failed'", (stamp(_now()), post_id, context)).rowcount == 1

    def newer_post_exists(self, post: Post) -> bool:
        """Whether a later post for the same user and line item exists (this one is outdated)."""
        rows = self._read("SELECT 1 FROM posts WHERE context = ? AND user = ? AND lineitem = ? AND id > ? LIMIT 1",
                          (post.context, post.user, post.lineitem, post.id))
        return bool(rows)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
