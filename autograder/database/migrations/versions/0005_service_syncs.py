"""The scheduled Moodle syncs of ``autograder serve`` get a row each (``service_syncs``):
the lease that lets one replica at a time run the entry, its schedule and its last run's
outcome, shared by every replica on the database (issue 27).

Revision ID: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "service_syncs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("site", sa.Text, nullable=False),
        sa.Column("assignment", sa.BigInteger, nullable=False),
        sa.Column("owner", sa.Text),
        sa.Column("claimed_at", sa.Text),
        sa.Column("started", sa.Text),
        sa.Column("finished", sa.Text),
        sa.Column("next_run", sa.Text),
        sa.Column("succeeded", sa.Text),
        sa.Column("report", sa.Text),
        sa.Column("error", sa.Text),
        sa.UniqueConstraint("site", "assignment"),
    )


def downgrade() -> None:
    op.drop_table("service_syncs")
