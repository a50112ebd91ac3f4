"""An attempt says whether it is in its week's latest regrade (``attempts.regrade_requested_at``,
issue 40): a regrade no longer hides the scores it recomputes (each attempt keeps its last
result until the new one lands), so which attempts a regrade took, and how many of them are
done, is kept here for its progress ("212 of 300 regraded"). Attempts graded before this
runs were in no regrade: None.

Revision ID: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("attempts", sa.Column("regrade_requested_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("attempts", "regrade_requested_at")
