"""The gradebook's moments become typed columns and its run counts JSON (issue 39):
``runs.started``, ``runs.finished``, ``results.recorded`` and ``manual_marks.marked``,
written until now as ISO 8601 text to the second, are ``timestamp with time zone`` on
PostgreSQL, and ``runs.counts`` is ``json``. On SQLite, which has no such types, each
moment is rewritten in the one text the code now writes (``autograder.database.types``:
ISO 8601 in UTC to the microsecond); the counts' text is already what ``JSON`` reads.

Revision ID: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from autograder.database.migrations.moments import type_moments, untype_moments

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

MOMENTS = {"runs": ("started", "finished"), "results": ("recorded",), "manual_marks": ("marked",)}


def upgrade() -> None:
    type_moments(MOMENTS)
    if op.get_bind().dialect.name == "postgresql":  # SQLite: the counts' text already is what JSON reads
        op.alter_column("runs", "counts", server_default=None)  # a text default cannot be cast with the column
        op.alter_column("runs", "counts", type_=sa.JSON, postgresql_using='"counts"::json',
                        server_default=sa.text("'{}'"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("runs", "counts", server_default=None)
        op.alter_column("runs", "counts", type_=sa.Text, postgresql_using='"counts"::text', server_default="{}")
    untype_moments(MOMENTS, microseconds=False)  # to the second, as the older code wrote them
