"""An attempt's moments become typed columns (issue 39): ``attempts.submitted_at``,
``graded_at`` and ``claimed_at`` are ``timestamp with time zone`` on PostgreSQL; on SQLite,
which has no such type, each is rewritten in the one text the code now writes
(``autograder.database.types``: ISO 8601 in UTC to the microsecond), as revision 0009 did
for the outbox's and the syncs'.

Revision ID: 0010
"""

from __future__ import annotations

from autograder.database.migrations.moments import type_moments, untype_moments

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

MOMENTS = ("submitted_at", "graded_at", "claimed_at")


def upgrade() -> None:
    type_moments({"attempts": MOMENTS})


def downgrade() -> None:
    untype_moments({"attempts": MOMENTS})
