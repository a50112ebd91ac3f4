"""The gradebook's moments become typed columns and its run counts JSON (issue 39):
``runs.started``, ``runs.finished``, ``results.recorded`` and ``manual_marks.marked``,
written until now as ISO 8601 text to the second, are ``timestamp with time zone`` on
PostgreSQL, and ``runs.counts`` is ``json``. On SQLite, which has no such types, each
moment is rewritten in the one text the code now writes (``autograder.database.types``:
ISO 8601 in UTC to the microsecond); the counts' text is already what ``JSON`` reads.

Revision ID: 0012
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

MOMENTS = {"runs": ("started", "finished"), "results": ("recorded",), "manual_marks": ("marked",)}


def _sqlite_text(value: str) -> str:
    """A moment as the code now keeps it on SQLite (aware UTC, microseconds)."""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:  # never written so, but then it was UTC as every stamp was
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table, columns in MOMENTS.items():
            for column in columns:
                op.alter_column(table, column, type_=sa.DateTime(timezone=True),
                                postgresql_using=f'"{column}"::timestamptz')
        op.alter_column("runs", "counts", server_default=None)  # a text default cannot be cast with the column
        op.alter_column("runs", "counts", type_=sa.JSON, postgresql_using='"counts"::json',
                        server_default=sa.text("'{}'"))
        return
    for table, columns in MOMENTS.items():
        rows = sa.table(table, sa.column("rowid", sa.Integer), *(sa.column(c, sa.Text) for c in columns))
        for row in bind.execute(sa.select(rows)).mappings().all():
            changed = {c: _sqlite_text(row[c]) for c in columns if row[c] is not None}
            if changed:
                bind.execute(rows.update().where(rows.c.rowid == row["rowid"]).values(**changed))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # ISO 8601 text with an offset, which the older code reads
    op.alter_column("runs", "counts", server_default=None)
    op.alter_column("runs", "counts", type_=sa.Text, postgresql_using='"counts"::text', server_default="{}")
    for table, columns in MOMENTS.items():
        for column in columns:
            op.alter_column(table, column, type_=sa.Text, postgresql_using=(
                f"""to_char("{column}" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')"""))
