"""An attempt's moments become typed columns (issue 39): ``attempts.submitted_at``,
``graded_at`` and ``claimed_at`` are ``timestamp with time zone`` on PostgreSQL; on SQLite,
which has no such type, each is rewritten in the one text the code now writes
(``autograder.database.types``: ISO 8601 in UTC to the microsecond), as revision 0009 did
for the outbox's and the syncs'.

Revision ID: 0010
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

MOMENTS = ("submitted_at", "graded_at", "claimed_at")


def _sqlite_text(value: str) -> str:
    """A moment as the code now keeps it on SQLite (aware UTC, microseconds)."""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:  # never written so, but then it was UTC as every stamp was
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for column in MOMENTS:
            op.alter_column("attempts", column, type_=sa.DateTime(timezone=True),
                            postgresql_using=f'"{column}"::timestamptz')
        return
    rows = sa.table("attempts", sa.column("id", sa.Integer), *(sa.column(c, sa.Text) for c in MOMENTS))
    for row in bind.execute(sa.select(rows)).mappings().all():
        changed = {c: _sqlite_text(row[c]) for c in MOMENTS if row[c] is not None}
        if changed:
            bind.execute(rows.update().where(rows.c.id == row["id"]).values(**changed))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite's text is the form the older code wrote and reads
    for column in MOMENTS:
        op.alter_column("attempts", column, type_=sa.Text, postgresql_using=(
            f"""to_char("{column}" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')"""))
