"""The rate limits' token buckets move into the database (``rate_limits``: one row per
limit and key, deleted once full again), so every replica on one database counts the same
requests and no process keeps a bucket per address for ever; and a line item remembers
the AGS scopes its launch granted (``lti_lineitem.scopes``), so a score post to a platform
that did not grant the score scope fails at once, saying so (issue 37).

Line items bound before this revision have no scopes recorded (NULL): their posts are sent
as before, and the next launch into the activity records them.

Revision ID: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_limits",
        sa.Column("bucket", sa.Text, primary_key=True),
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("full_at", sa.Float, nullable=False),
    )
    op.create_index("rate_limits_full_at", "rate_limits", ["bucket", "full_at"])
    op.add_column("lti_lineitem", sa.Column("scopes", sa.Text))


def downgrade() -> None:
    op.drop_column("lti_lineitem", "scopes")
    op.drop_index("rate_limits_full_at", "rate_limits")
    op.drop_table("rate_limits")
