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

import sqlalchemy as sa
from alembic import op

from autograder.database.migrations.moments import type_moments, untype_moments

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

MOMENTS = {"posts": ("next_try_at", "posted_at", "created_at", "sending_since"),
           "service_scores": ("last_timestamp",),
           "service_syncs": ("claimed_at", "started", "finished", "next_run", "succeeded")}
DOCUMENTS = {"posts": "payload", "service_syncs": "report"}


def upgrade() -> None:
    type_moments(MOMENTS)
    if op.get_bind().dialect.name == "postgresql":  # SQLite: the text already is what JSON reads
        for table, column in DOCUMENTS.items():
            op.alter_column(table, column, type_=sa.JSON, postgresql_using=f'"{column}"::json')


def downgrade() -> None:
    untype_moments(MOMENTS)
    if op.get_bind().dialect.name == "postgresql":
        for table, column in DOCUMENTS.items():
            op.alter_column(table, column, type_=sa.Text, postgresql_using=f'"{column}"::text')
