"""The column type of every moment a table holds: ``UtcDateTime``.

``DateTime(timezone=True)`` on both engines, written and read as an aware datetime in UTC.
PostgreSQL keeps a ``timestamp with time zone``. SQLite has no time type: it keeps the
moment as ISO 8601 text in UTC to the microsecond (``2026-09-10T12:00:00.123456+00:00``,
the text the service's claims were stamped with before the columns were typed), a fixed
width, so that text compares as the moments do and comparisons in SQL (a claim's expiry,
the outbox's due posts) stay right; read back, it is made aware again. A naive datetime is
refused when written: which zone it meant is a guess.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect
from sqlalchemy.dialects import sqlite
from sqlalchemy.types import TypeDecorator, TypeEngine

SQLITE_FORMAT = "%(year)04d-%(month)02d-%(day)02dT%(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d+00:00"
SQLITE_PATTERN = r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})\+00:00"


class UtcDateTime(TypeDecorator[datetime]):
    """A moment: aware UTC in, aware UTC out, on SQLite as on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            text = sqlite.DATETIME(storage_format=SQLITE_FORMAT, regexp=SQLITE_PATTERN)  # type: ignore[no-untyped-call]
            return dialect.type_descriptor(text)
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"{value!r} is a naive datetime: store an aware one (autograder.database.clock.now())")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
