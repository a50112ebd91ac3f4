"""The LTI logins' moments become typed columns (issue 39): ``lti_state.created``,
``lti_nonce.used`` and ``lti_registration.expires``, epoch seconds until now, are
``timestamp with time zone`` on PostgreSQL; on SQLite, which has no such type, each is
rewritten in the one text the code now writes (``autograder.database.types``: ISO 8601 in
UTC to the microsecond), as revisions 0009 and 0010 did for the service's other moments.

Revision ID: 0011
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

MOMENTS = {"lti_state": "created", "lti_nonce": "used", "lti_registration": "expires"}


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table, column in MOMENTS.items():
            op.alter_column(table, column, type_=sa.DateTime(timezone=True),
                            postgresql_using=f'to_timestamp("{column}")')
        return
    for table, column in MOMENTS.items():
        rows = sa.table(table, sa.column("rowid", sa.Integer), sa.column(column, sa.Float))
        for rowid, seconds in bind.execute(sa.select(rows.c.rowid, rows.c[column])).all():
            moment = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")
            bind.execute(rows.update().where(rows.c.rowid == rowid).values({column: sa.literal(moment, sa.Text)}))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table, column in MOMENTS.items():
            op.alter_column(table, column, type_=sa.Float, postgresql_using=f'extract(epoch from "{column}")')
        return
    for table, column in MOMENTS.items():
        rows = sa.table(table, sa.column("rowid", sa.Integer), sa.column(column, sa.Text))
        for rowid, text in bind.execute(sa.select(rows.c.rowid, rows.c[column])).all():
            seconds = datetime.fromisoformat(text).timestamp()
            bind.execute(rows.update().where(rows.c.rowid == rowid).values({column: seconds}))
