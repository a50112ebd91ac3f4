"""An instructor's override of an autograded task's score (issue 40): ``score_overrides``
holds, per result and task, the points that replace what the hidden tests gave, the reason
the student reads, who gave it and when. Its own table, beside ``manual_marks``, so a
regrade that records the result anew keeps it, and removing it brings the tests' points back.

Revision ID: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "score_overrides",
        sa.Column("week", sa.Text, primary_key=True),
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("task", sa.Integer, primary_key=True),
        sa.Column("points", sa.Float, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("by", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False)  # database.types.UtcDateTime,
    )


def downgrade() -> None:
    op.drop_table("score_overrides")
