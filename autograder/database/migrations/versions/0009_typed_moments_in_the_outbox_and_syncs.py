"""The score outbox's and the scheduled syncs' moments become typed columns, their documents
JSON (issue 39): ``posts.next_try_at``, ``posted_at``, ``created_at``, ``sending_since``,
``service_scores.last_timestamp`` and ``service_syncs``' ``claimed_at``, ``started``,
``finished``, ``next_run`` and ``succeeded`` are ``timestamp with time zone`` on
PostgreSQL; ``posts.payload`` and ``service_syncs.report`` are ``json``.

SQLite has no such types: its columns keep their declared type, and each moment is
rewritten in the one text the code now writes (``autograder.database.types``: ISO 8601 in
UTC to the microsecond), whatever ISO 8601 form and offset it was written in. The text
of a JSON document is already what SQLAlchemy's ``JSON`` reads there.

Revision ID: 0009
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

MOMENTS = {"posts": ("next_try_at", "posted_at", "created_at", "sending_since"),
           "service_scores": ("last_timestamp",),
           "service_syncs": ("claimed_at", "started", "finished", "next_run", "succeeded")}
DOCUMENTS = {"posts": "payload", "service_syncs": "report"}


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
        for table, column in DOCUMENTS.items():
            op.alter_column(table, column, type_=sa.JSON, postgresql_using=f'"{column}"::json')
        return
    for table, columns in MOMENTS.items():
        rows = sa.table(table, sa.column("rowid", sa.Integer), *(sa.column(c, sa.Text) for c in columns))
        for row in bind.execute(sa.select(rows)).mappings().all():
            changed = {c: _sqlite_text(row[c]) for c in columns if row[c] is not None}
            if changed:
                bind.execute(rows.update().where(rows.c.rowid == row["rowid"]).values(**changed))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return  # SQLite's text is the form the older code wrote and reads
    for table, columns in MOMENTS.items():
        for column in columns:
            op.alter_column(table, column, type_=sa.Text, postgresql_using=(
                f"""to_char("{column}" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')"""))
    for table, column in DOCUMENTS.items():
        op.alter_column(table, column, type_=sa.Text, postgresql_using=f'"{column}"::text')
