"""Marking split among markers (issue 40): a mark says who gave it (``manual_marks.marker``:
the LMS user who saved it in the service, ``sheet`` for a mark merged from a marking sheet;
None for the marks given before this was kept), a course user's LTI roles from their last
launch are kept (``service_users.roles``: who may mark), and a week's students are assigned
to markers (``marker_assignments``, one row per course, week and student).

Revision ID: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("manual_marks", sa.Column("marker", sa.Text))
    op.add_column("service_users", sa.Column("roles", sa.JSON, nullable=False, server_default=sa.text("'[]'")))
    op.create_table(
        "marker_assignments",
        sa.Column("context", sa.Text, primary_key=True),
        sa.Column("week", sa.Text, primary_key=True),
        sa.Column("user", sa.Text, primary_key=True),
        sa.Column("marker", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("marker_assignments")
    with op.batch_alter_table("service_users") as batch:
        batch.drop_column("roles")
    with op.batch_alter_table("manual_marks") as batch:
        batch.drop_column("marker")
