"""An attempt's score, maximum, pending points and the paths of its result and feedback
files leave ``attempts``: the gradebook's result of the attempt (key ``attempt-<id>``, with
its marks) is the only record of them, read whenever an attempt is (issue 39). Nothing is
lost: the service recorded every graded attempt's result in the gradebook before it wrote
the row's copy.

A downgrade adds the columns back empty (scores NULL, maximum and pending 0): an older
version shows graded attempts without scores until they are graded again.

Revision ID: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_DROPPED = ("score", "max_score", "pending", "result_path", "feedback_path")


def upgrade() -> None:
    for column in _DROPPED:
        op.drop_column("attempts", column)


def downgrade() -> None:
    op.add_column("attempts", sa.Column("score", sa.Float))
    op.add_column("attempts", sa.Column("max_score", sa.Float, nullable=False, server_default="0"))
    op.add_column("attempts", sa.Column("pending", sa.Float, nullable=False, server_default="0"))
    op.add_column("attempts", sa.Column("result_path", sa.Text))
    op.add_column("attempts", sa.Column("feedback_path", sa.Text))
