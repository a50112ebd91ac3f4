"""A result's document and a Moodle sync's file list become ``JSON`` columns (issue 39):
``results.document`` (``result_json.to_dict``'s dict) and ``moodle_sync.files`` (a list of
file names), written until now as JSON text by the modules that own them, are ``json`` on
PostgreSQL. On SQLite the ``JSON`` type keeps JSON text, which those columns already hold:
nothing is rewritten.

Revision ID: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.alter_column("results", "document", type_=sa.JSON, postgresql_using='"document"::json')
    op.alter_column("moodle_sync", "files", server_default=None)  # a text default cannot be cast with the column
    op.alter_column("moodle_sync", "files", type_=sa.JSON, postgresql_using='"files"::json',
                    server_default=sa.text("'[]'"))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.alter_column("moodle_sync", "files", server_default=None)
    op.alter_column("moodle_sync", "files", type_=sa.Text, postgresql_using='"files"::text', server_default="[]")
    op.alter_column("results", "document", type_=sa.Text, postgresql_using='"document"::text')
