"""A claim says whose it is (``attempts.claimed_by``, ``posts.claimed_by``): a replica that
stalled past the claim's lifetime finds its claim taken over and changes nothing, instead
of finishing a row another replica now works on (issue 27, ``service/claims.py``).

Rows claimed when this runs (an attempt being graded, a post being sent) were claimed
without an owner: they get the token ``ADOPTED``, which no process holds, so they are left
alone until their claim expires and another replica takes them over, as before.

Revision ID: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

ADOPTED = "claimed before claims had owners"


def upgrade() -> None:
    op.add_column("attempts", sa.Column("claimed_by", sa.Text))
    op.add_column("posts", sa.Column("claimed_by", sa.Text))
    attempts = sa.table("attempts", sa.column("state", sa.Text), sa.column("claimed_by", sa.Text))
    posts = sa.table("posts", sa.column("state", sa.Text), sa.column("sending_since", sa.Text),
                     sa.column("claimed_by", sa.Text))
    bind = op.get_bind()
    bind.execute(attempts.update().where(attempts.c.state == "grading").values(claimed_by=ADOPTED))
    bind.execute(posts.update().where(posts.c.state == "pending", posts.c.sending_since.is_not(None))
                 .values(claimed_by=ADOPTED))


def downgrade() -> None:
    op.drop_column("posts", "claimed_by")
    op.drop_column("attempts", "claimed_by")
