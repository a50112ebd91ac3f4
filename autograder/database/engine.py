"""Opening a database: a URL becomes an engine, and SQLite's needs are met in one place.

A location is a URL (``sqlite:///path``, ``postgresql+psycopg://user@host/name``) or a
file path, which means SQLite. Everything else in the package writes SQLAlchemy Core
against ``Database.write`` and ``Database.read``, so a second engine is a URL, not code.

SQLite, as the grader has always used it: WAL (readers never wait for the writer, and
the web app, the grading threads and the outbox write at once), a busy timeout of
``BUSY_TIMEOUT_S`` for a writer waiting on another process, foreign keys enforced, and
``BEGIN IMMEDIATE`` for every write transaction: it takes the write lock up front, so
concurrent writers queue instead of failing when a read would have to become a write,
and checks made inside see no other writer in between. Switching a new file to WAL can
report "database is locked" at once, without waiting, when two processes open the same
new file together: ``while_locked`` retries that.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import URL, Connection, Engine, Table, create_engine, event, make_url, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.dml import Insert

from autograder.exceptions import GradebookError

BUSY_TIMEOUT_S = 30.0  # how long a SQLite writer waits for another process's transaction
_READ = "autograder_read"  # execution option: a read-only transaction (SQLite: a plain BEGIN)
T = TypeVar("T")


def database_url(location: Path | str) -> URL:
    """The URL for ``location``: a URL as given, a file path as SQLite's (built, not parsed,
    so a folder name with ``?`` or ``#`` stays a folder name)."""
    if isinstance(location, str) and "://" in location:
        try:
            return make_url(location)
        except ArgumentError as exc:
            raise GradebookError(f"{location!r} is not a database URL ({exc}); give a file path, sqlite:///path "
                                 "or postgresql+psycopg://user@host/name") from exc
    return URL.create("sqlite", database=str(Path(location).resolve()))


def while_locked(step: Callable[[], T]) -> T:
    """Run ``step``, again while another process holds a SQLite file's lock without the busy
    timeout applying (switching a new file to WAL, or its first schema, opened by two at once)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return step()
        except OperationalError as exc:
            if "locked" not in str(exc.orig) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_connect(dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry) -> None:
    """Each new SQLite connection: transactions are ours (``_sqlite_begin``), WAL, foreign keys."""
    dbapi_connection.isolation_level = None  # pysqlite: no implicit BEGIN
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    """Writes take the lock up front (BEGIN IMMEDIATE); reads take none (WAL)."""
    read = connection.get_execution_options().get(_READ, False)
    connection.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")


class Database:
    """An engine and how this package uses it: ``write()`` and ``read()`` transactions.

    Thread-safe: each transaction takes its own connection from the engine's pool, so the
    grading threads, the web app's requests and the outbox never share one."""

    def __init__(self, engine: Engine, where: str) -> None:
        self.engine = engine
        self.where = where  # for messages: the file, or the URL without its password

    @classmethod
    def connect(cls, location: Path | str) -> Database:
        """An engine for ``location`` (a URL, or a file path for SQLite), not yet migrated:
        ``autograder.database.open_database`` also brings the schema up to date."""
        url = database_url(location)
        if url.get_backend_name() == "sqlite":
            if url.database in (None, "", ":memory:"):
                raise GradebookError(f"{url}: the gradebook must be a file (an in-memory database is gone when "
                                     "its connection closes)")
            path = Path(url.database)
            path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False})
            event.listen(engine, "connect", _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
            return cls(engine, str(path))
        try:
            engine = create_engine(url, pool_pre_ping=True)
        except (ArgumentError, ImportError) as exc:
            raise GradebookError(f"{url.render_as_string(hide_password=True)}: no driver for this database "
                                 f"({exc}); PostgreSQL's is postgresql+psycopg://") from exc
        return cls(engine, url.render_as_string(hide_password=True))

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql`` (the engine's backend)."""
        return self.engine.dialect.name

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self.engine.begin() as connection:
            yield connection

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """One read-only transaction (a consistent snapshot on both engines)."""
        with self.engine.connect() as connection:
            connection = connection.execution_options(**{_READ: True})
            with connection.begin():
                yield connection

    def lock(self, connection: Connection, *name: object) -> None:
        """Inside a write transaction: wait for, then hold until it ends, the lock named
        ``name`` (e.g. a student's attempts at a week), so a check and the write it allows
        see no other writer of the same thing. SQLite's write transaction already holds the
        whole file; PostgreSQL takes a transaction-scoped advisory lock."""
        if self.dialect == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:name))"),
                               {"name": "\x1f".join(map(str, name))})

    def upsert(self, table: Table, values: Mapping[str, Any], keys: Sequence[str],
               update: Sequence[str] | None = None) -> Insert:
        """INSERT ``values``, or on a row with the same ``keys`` update its ``update`` columns
        (None: all the others) from them (SQLite's and PostgreSQL's ``ON CONFLICT ... DO UPDATE``)."""
        dialect = sqlite if self.dialect == "sqlite" else postgresql
        statement = dialect.insert(table).values(**values)
        changed = {name: statement.excluded[name] for name in (update if update is not None else values)
                   if name not in keys}
        if not changed:
            return cast(Insert, statement.on_conflict_do_nothing(index_elements=list(keys)))
        return cast(Insert, statement.on_conflict_do_update(index_elements=list(keys), set_=changed))
