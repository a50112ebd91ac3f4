"""Bringing a database to the schema of ``tables.py``, at every open.

The migrations are Alembic's, shipped in ``migrations/versions/`` and run in one write
transaction (PostgreSQL: under an advisory lock, so two processes opening one database
migrate it once). A database made before them (a gradebook versioned by SQLite's
``user_version``, the service's tables with their ``service_meta`` row, the sync's and
the logins' tables made as needed) has no ``alembic_version`` table: the first revision
creates only what such a file lacks, so it is adopted, not lost.

A database a newer autograder migrated is refused rather than written with a schema this
one does not know. On SQLite, ``user_version`` is set to ``SQLITE_USER_VERSION``, one past
the last hand-rolled scheme (3), so an older autograder refuses such a file in turn.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from autograder.database.engine import Database, while_locked
from autograder.exceptions import GradebookError

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
LAST_USER_VERSION = 3  # the gradebook's last version before Alembic (PRAGMA user_version)
SQLITE_USER_VERSION = LAST_USER_VERSION + 1


@cache
def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@cache
def head() -> str:
    """The newest revision this autograder knows."""
    revision = ScriptDirectory.from_config(_config()).get_current_head()
    assert revision is not None
    return revision


def open_database(location: Path | str) -> Database:
    """Open ``location`` (a URL, or a file path for SQLite) with its schema up to date;
    ``GradebookError`` says why a database cannot be used."""
    database = Database.connect(location)
    try:
        while_locked(lambda: _upgrade(database))
    except GradebookError:
        database.close()
        raise
    except Exception as exc:  # the driver's own errors (not a database file, refused login, ...)
        database.close()
        raise GradebookError(f"{database.where}: cannot open the gradebook: {exc}") from exc
    return database


def _upgrade(database: Database) -> None:
    with database.write() as connection:
        database.lock(connection, "autograder schema")
        current = MigrationContext.configure(connection).get_current_revision()
        if current == head():
            return
        _refuse_newer(connection, current, database.where)
        config = _config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        if database.dialect == "sqlite":
            connection.exec_driver_sql(f"PRAGMA user_version = {SQLITE_USER_VERSION}")


def _refuse_newer(connection: Connection, current: str | None, where: str) -> None:
    """Raise if a newer autograder made or migrated this database."""
    if current is not None:
        known = {script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()}
        if current not in known:
            raise GradebookError.newer_schema(where, current, head())
    elif connection.dialect.name == "sqlite":
        version = connection.exec_driver_sql("PRAGMA user_version").scalar_one()
        if version > LAST_USER_VERSION:
            raise GradebookError.newer_schema(where, version, LAST_USER_VERSION)
