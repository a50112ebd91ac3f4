"""Revision 0015 (markers): a database at 0014 with a hand mark and a course user, opened by
this version, keeps both, the mark naming no marker (given before markers were kept) and the
user with no roles until their next launch; a downgrade to 0014 drops what 0015 added and
keeps the rows, and the database comes back up. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Float, Integer, Text, column, insert, inspect, table

from autograder.database import Database
from autograder.database.migrate import MIGRATIONS, head
from autograder.database.types import UtcDateTime
from autograder.gradebook import FILENAME
from autograder.service.lti import INSTRUCTOR_ROLES
from autograder.service.store import Store

CONTEXT = "https://moodle.example|3|course-1"
MARKED = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
MARK_0014 = table("manual_marks", column("week", Text), column("key", Text), column("task", Integer),
                  column("points", Float), column("comment", Text), column("marked", UtcDateTime),
                  column("answer_sha256", Text), column("note", Text))
USER_0014 = table("service_users", column("context", Text), column("user", Text), column("name", Text),
                  column("email", Text))


def migrate(database: Database, to: str, *, down: bool = False) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with database.write() as db:
        config.attributes["connection"] = db
        (command.downgrade if down else command.upgrade)(config, to)


def columns(database: Database, name: str) -> set[str]:
    return {c["name"] for c in inspect(database.engine).get_columns(name)}


def test_0015_keeps_the_marks_and_users_before_it_and_comes_down_and_up_again(
        tmp_path: Path, database_url: str | None) -> None:
    location = database_url or tmp_path / FILENAME
    database = Database.connect(location)
    try:
        migrate(database, "0014")
        with database.write() as db:
            db.execute(insert(MARK_0014).values(week="week01", key="attempt-1", task=2, points=3.0, comment="ok",
                                                marked=MARKED, answer_sha256="a", note=""))
            db.execute(insert(USER_0014).values(context=CONTEXT, user="t-1", name="Tess", email=None))
    finally:
        database.close()
    with Store(tmp_path, database=database_url) as store:  # the same database: tmp_path's file, or the URL
        [mark] = store.gradebook.manual_marks("week01")["attempt-1"].values()
        assert (mark.points, mark.comment, mark.marked, mark.marker) == (3.0, "ok", MARKED, None)
        assert store.user_name(CONTEXT, "t-1") == "Tess" and store.users.markers(CONTEXT) == {}  # no roles yet
        store.remember_user(CONTEXT, "t-1", "Tess", None, [INSTRUCTOR_ROLES[0]])  # the next launch
        assert store.users.markers(CONTEXT) == {"t-1": "Tess"}
        migrate(store.database, "0014", down=True)
        assert "marker" not in columns(store.database, "manual_marks")
        assert "roles" not in columns(store.database, "service_users")
        assert "marker_assignments" not in inspect(store.database.engine).get_table_names()
        migrate(store.database, head())
        assert "marker_assignments" in inspect(store.database.engine).get_table_names()
        assert store.gradebook.manual_marks("week01")["attempt-1"][2].marker is None
        assert store.user_name(CONTEXT, "t-1") == "Tess"
