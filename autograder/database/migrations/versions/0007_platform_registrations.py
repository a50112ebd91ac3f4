"""The platforms registered with the LTI tool move into the database (``lti_platforms``:
one row per issuer and client id, its deployment ids a JSON list), beside the login states,
so that every replica reads and adds them in one transaction instead of rewriting a JSON
file in the data folder under a file lock (issue 39).

A data folder's ``platforms.json`` is imported by the service when it opens the folder
(``autograder.service.lti.Platforms.import_file``), which needs the folder, not this
revision: a migration sees only the database.

Revision ID: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lti_platforms",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("issuer", sa.Text, nullable=False),
        sa.Column("client_id", sa.Text, nullable=False),
        sa.Column("auth_login_url", sa.Text, nullable=False),
        sa.Column("token_url", sa.Text, nullable=False),
        sa.Column("jwks_url", sa.Text, nullable=False),
        sa.Column("deployment_ids", sa.JSON, nullable=False),
        sa.Column("name", sa.Text, nullable=False, server_default=""),
        sa.UniqueConstraint("issuer", "client_id"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("lti_platforms")
