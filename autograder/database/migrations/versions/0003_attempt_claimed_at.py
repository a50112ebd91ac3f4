"""A claimed attempt says when its claim was last renewed (``attempts.claimed_at``), so a
claim whose replica died expires and the attempt goes back in the queue (issue 27).
Attempts being graded when this runs have none: they count as expired.

Revision ID: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("attempts", sa.Column("claimed_at", sa.Text))


def downgrade() -> None:
    op.drop_column("attempts", "claimed_at")
