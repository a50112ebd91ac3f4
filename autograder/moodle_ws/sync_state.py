"""What ``autograder moodle sync`` remembers between runs, in the gradebook's SQLite file.

One row per Moodle user of one assignment on one site: which submission (by Moodle's
``timemodified``) was downloaded, and what was last pushed and confirmed: a signature of
grade, comment and feedback page, and the grade's ``timemodified`` Moodle showed right
after our push, with who Moodle says saved it (``grader``: the token's user) and the
grade it held. A grade whose time is later, or whose grader or value differ (a teacher
saving in the same second as our push), was changed by hand and is left alone. A push
sent but never answered (the network dropped mid-call) stays ``inflight`` until the next
run reads the grades back and learns whether it landed.

The table lives beside the gradebook's own tables, in the same database
(``autograder.database`` opens it and keeps its schema).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from sqlalchemy import ColumnElement, case, func, select, update

from autograder.database import open_database
from autograder.database.tables import moodle_sync


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


_COLUMNS = (moodle_sync.c.userid, moodle_sync.c.fullname, moodle_sync.c.attemptnumber, moodle_sync.c.modified,
            moodle_sync.c.downloaded, moodle_sync.c.files, moodle_sync.c.pushed, moodle_sync.c.pushed_attempt,
            moodle_sync.c.pushed_modified, moodle_sync.c.inflight, moodle_sync.c.inflight_grade,
            moodle_sync.c.pushed_grader, moodle_sync.c.pushed_grade)


class SyncState:
    """The sync's rows for one site and assignment; use as a context manager."""

    def __init__(self, gradebook: Path | str, *, site: str, assignment: int, week: str) -> None:
        self._database = open_database(gradebook)
        self._site, self._assignment = site, assignment
        self.week = week

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._database.close()

    def _mine(self, userid: int | None = None) -> list[ColumnElement[bool]]:
        """The WHERE clause of this site and assignment's rows (one user's with ``userid``)."""
        mine = [moodle_sync.c.site == self._site, moodle_sync.c.assignment == self._assignment]
        return mine if userid is None else [*mine, moodle_sync.c.userid == userid]

    def _update(self, userid: int, **values: object) -> None:
        with self._database.write() as db:
            db.execute(update(moodle_sync).where(*self._mine(userid)).values(**values))

    def users(self) -> dict[int, UserState]:
        with self._database.read() as db:
            rows = db.execute(select(*_COLUMNS).where(*self._mine()).order_by(moodle_sync.c.userid)).all()
        return {row[0]: UserState(
            userid=row[0], fullname=row[1], attemptnumber=row[2], modified=row[3], downloaded=row[4],
            files=row[5], pushed=row[6], pushed_attempt=row[7], pushed_modified=row[8],
            inflight=row[9], inflight_grade=row[10], pushed_grader=row[11], pushed_grade=row[12]) for row in rows}

    def since(self) -> int:
        """Where the next listing starts: the oldest submission still to download, else the
        newest seen (Moodle lists ``timemodified >= since``, so that one comes again, harmlessly)."""
        waiting = case((moodle_sync.c.downloaded.is_distinct_from(moodle_sync.c.modified), moodle_sync.c.modified))
        with self._database.read() as db:
            oldest, newest = db.execute(select(func.min(waiting), func.max(moodle_sync.c.modified))
                                        .where(*self._mine())).one()
        return int(oldest if oldest is not None else newest or 0)

    def listed(self, userid: int, *, attemptnumber: int, modified: int, files: list[str]) -> None:
        """Note a submission as Moodle lists it now (new, changed, or the same again)."""
        row = {"site": self._site, "assignment": self._assignment, "userid": userid, "week": self.week,
               "attemptnumber": attemptnumber, "modified": modified, "files": files}
        with self._database.write() as db:
            db.execute(self._database.upsert(moodle_sync, row, keys=("site", "assignment", "userid"),
                                             update=("attemptnumber", "modified", "files")))

    def downloaded(self, userid: int, modified: int) -> None:
        self._update(userid, downloaded=modified)

    def named(self, userid: int, fullname: str | None) -> None:
        self._update(userid, fullname=fullname)

    def sending(self, userid: int, signature: str, grade: float) -> None:
        """Written before the call: if no answer comes, the next run checks whether it landed."""
        self._update(userid, inflight=signature, inflight_grade=grade)

    def confirmed(self, userid: int, signature: str, *, attempt: int, moodle_modified: int, grader: int,
                  grade: float | None) -> None:
        """Our push landed: Moodle's grade record after it (time, grader, value) is ours."""
        self._update(userid, pushed=signature, pushed_attempt=attempt, pushed_modified=moodle_modified,
                     pushed_grader=grader, pushed_grade=grade, inflight=None, inflight_grade=None)
