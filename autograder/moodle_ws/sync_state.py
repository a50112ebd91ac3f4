"""What ``autograder moodle sync`` remembers between runs, in the gradebook's SQLite file.

One row per Moodle user of one assignment on one site: which submission (by Moodle's
``timemodified``) was downloaded, and what was last pushed and confirmed: a signature of
grade, comment and feedback page, and the grade's ``timemodified`` Moodle showed right
after our push, with who Moodle says saved it (``grader``: the token's user) and the
grade it held. A grade whose time is later, or whose grader or value differ (a teacher
saving in the same second as our push), was changed by hand and is left alone. A push
sent but never answered (the network dropped mid-call) stays ``inflight`` until the next
run reads the grades back and learns whether it landed.

The table lives beside the gradebook's own tables (``CREATE TABLE IF NOT EXISTS``), so the
gradebook's schema and its migrations stay the gradebook's.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from autograder.gradebook import BUSY_TIMEOUT_S

_SCHEMA = """
CREATE TABLE IF NOT EXISTS moodle_sync (
    site TEXT NOT NULL,                 -- the Moodle site's address (wwwroot)
    assignment INTEGER NOT NULL,        -- mod_assign instance id
    userid INTEGER NOT NULL,
    week TEXT NOT NULL,
    fullname TEXT,
    attemptnumber INTEGER NOT NULL,
    modified INTEGER NOT NULL,          -- the submission's timemodified as last listed
    downloaded INTEGER,                 -- the timemodified whose files are on disk; NULL: none yet
    files TEXT NOT NULL DEFAULT '[]',   -- JSON: every file name the submission holds
    pushed TEXT,                        -- signature of the last confirmed push
    pushed_attempt INTEGER,
    pushed_modified INTEGER,            -- the grade's timemodified Moodle showed after that push
    inflight TEXT,                      -- signature of a push sent but not confirmed
    inflight_grade REAL,
    pushed_grader INTEGER,              -- the grade's grader after that push (NULL: not recorded)
    pushed_grade REAL,                  -- the grade it held then (NULL: no grade)
    PRIMARY KEY (site, assignment, userid)
)
"""


@dataclass
class UserState:
    """One user's row; ``None`` fields mean "never happened"."""

    userid: int
    fullname: str | None
    attemptnumber: int
    modified: int
    downloaded: int | None
    files: list[str]
    pushed: str | None
    pushed_attempt: int | None
    pushed_modified: int | None
    inflight: str | None
    inflight_grade: float | None
    pushed_grader: int | None = None
    pushed_grade: float | None = None

    @property
    def needs_download(self) -> bool:
        return self.downloaded != self.modified


_COLUMNS = ("userid, fullname, attemptnumber, modified, downloaded, files, pushed, pushed_attempt, "
            "pushed_modified, inflight, inflight_grade, pushed_grader, pushed_grade")
_ADDED = {"pushed_grader": "INTEGER", "pushed_grade": "REAL"}  # columns a table made by an older version lacks


class SyncState:
    """The sync's rows for one site and assignment; use as a context manager."""

    def __init__(self, gradebook: Path, *, site: str, assignment: int, week: str) -> None:
        self._db = sqlite3.connect(gradebook, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        present = {row[1] for row in self._db.execute("PRAGMA table_info(moodle_sync)")}
        for column, kind in _ADDED.items():
            if column not in present:
                self._db.execute(f"ALTER TABLE moodle_sync ADD COLUMN {column} {kind}")
        self._key = (site, assignment)
        self.week = week

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._db.close()

    def users(self) -> dict[int, UserState]:
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM moodle_sync WHERE site = ? AND assignment = ? "
                                "ORDER BY userid", self._key).fetchall()
        return {row[0]: UserState(
            userid=row[0], fullname=row[1], attemptnumber=row[2], modified=row[3], downloaded=row[4],
            files=json.loads(row[5]), pushed=row[6], pushed_attempt=row[7], pushed_modified=row[8],
            inflight=row[9], inflight_grade=row[10], pushed_grader=row[11], pushed_grade=row[12]) for row in rows}

    def since(self) -> int:
        """Where the next listing starts: the oldest submission still to download, else the
        newest seen (Moodle lists ``timemodified >= since``, so that one comes again, harmlessly)."""
        waiting, newest = self._db.execute(
            "SELECT MIN(CASE WHEN downloaded IS NOT modified THEN modified END), MAX(modified) FROM moodle_sync "
            "WHERE site = ? AND assignment = ?", self._key).fetchone()
        return int(waiting if waiting is not None else newest or 0)

    def listed(self, userid: int, *, attemptnumber: int, modified: int, files: list[str]) -> None:
        """Note a submission as Moodle lists it now (new, changed, or the same again)."""
        self._db.execute(
            "INSERT INTO moodle_sync (site, assignment, userid, week, attemptnumber, modified, files) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site, assignment, userid) DO UPDATE SET "
            "attemptnumber = excluded.attemptnumber, modified = excluded.modified, files = excluded.files",
            (*self._key, userid, self.week, attemptnumber, modified, json.dumps(files)))

    def downloaded(self, userid: int, modified: int) -> None:
        self._db.execute("UPDATE moodle_sync SET downloaded = ? WHERE site = ? AND assignment = ? AND userid = ?",
                         (modified, *self._key, userid))

    def named(self, userid: int, fullname: str | None) -> None:
        self._db.execute("UPDATE moodle_sync SET fullname = ? WHERE site = ? AND assignment = ? AND userid = ?",
                         (fullname, *self._key, userid))

    def sending(self, userid: int, signature: str, grade: float) -> None:
        """Written before the call: if no answer comes, the next run checks whether it landed."""
        self._db.execute("UPDATE moodle_sync SET inflight = ?, inflight_grade = ? "
                         "WHERE site = ? AND assignment = ? AND userid = ?", (signature, grade, *self._key, userid))

    def confirmed(self, userid: int, signature: str, *, attempt: int, moodle_modified: int, grader: int,
                  grade: float | None) -> None:
        """Our push landed: Moodle's grade record after it (time, grader, value) is ours."""
        self._db.execute("UPDATE moodle_sync SET pushed = ?, pushed_attempt = ?, pushed_modified = ?, "
                         "pushed_grader = ?, pushed_grade = ?, inflight = NULL, inflight_grade = NULL "
                         "WHERE site = ? AND assignment = ? AND userid = ?",
                         (signature, attempt, moodle_modified, grader, grade, *self._key, userid))
