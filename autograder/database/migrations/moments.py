"""What the revisions that typed the moments written as ISO 8601 text share (0009, 0010,
0012): on PostgreSQL each column becomes ``timestamp with time zone``; on SQLite, which has
no such type, each value is rewritten in the one text the code now writes
(``autograder.database.types``: ISO 8601 in UTC to the microsecond). Down again, PostgreSQL's
columns go back to that text, which the older code reads; SQLite's text already is.

A revision keeps its own list of columns: this module only says how one is converted, so a
later change here must keep converting what those revisions' databases hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

# a moment as older code reads it back from PostgreSQL's text: ISO 8601 in UTC
_AS_TEXT = """to_char("{column}" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS{fraction}"+00:00"')"""


def sqlite_text(value: str) -> str:
    """A moment as the code now keeps it on SQLite (aware UTC, microseconds)."""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:  # never written so, but then it was UTC as every stamp was
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def type_moments(moments: Mapping[str, Sequence[str]]) -> None:
    """Each ``table: columns`` moment written as ISO 8601 text, typed (PostgreSQL) or rewritten
    in the one text (SQLite)."""
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table, columns in moments.items():
            for column in columns:
                op.alter_column(table, column, type_=sa.DateTime(timezone=True),
                                postgresql_using=f'"{column}"::timestamptz')
        return
    for table, columns in moments.items():
        rows = sa.table(table, sa.column("rowid", sa.Integer), *(sa.column(c, sa.Text) for c in columns))
        for row in bind.execute(sa.select(rows)).mappings().all():
            changed = {c: sqlite_text(row[c]) for c in columns if row[c] is not None}
            if changed:
                bind.execute(rows.update().where(rows.c.rowid == row["rowid"]).values(**changed))


def untype_moments(moments: Mapping[str, Sequence[str]], *, microseconds: bool = True) -> None:
    """``type_moments`` undone: PostgreSQL's columns back to ISO 8601 text (SQLite's are text),
    to the microsecond or, where the older code wrote them so, to the second."""
    if op.get_bind().dialect.name != "postgresql":
        return
    fraction = ".US" if microseconds else ""
    for table, columns in moments.items():
        for column in columns:
            op.alter_column(table, column, type_=sa.Text,
                            postgresql_using=_AS_TEXT.format(column=column, fraction=fraction))
