"""The outbox counts a post's 409s in a column (it was the number in ``last_error``'s
"409 conflict N: ..."); ``service_meta``'s schema row gives way to Alembic's version.

Revision ID: 0002
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_COUNTED = re.compile(r"409 conflict (\d+):")


def upgrade() -> None:
    op.add_column("posts", sa.Column("conflicts", sa.Integer, nullable=False, server_default="0"))
    posts = sa.table("posts", sa.column("id", sa.Integer), sa.column("last_error", sa.Text),
                     sa.column("conflicts", sa.Integer))
    bind = op.get_bind()
    for id_, error in bind.execute(sa.select(posts.c.id, posts.c.last_error)
                                   .where(posts.c.last_error.like("409 conflict %"))).all():
        counted = _COUNTED.match(error)
        if counted is not None:
            bind.execute(posts.update().where(posts.c.id == id_).values(conflicts=int(counted[1])))
    op.drop_table("service_meta", if_exists=True)


def downgrade() -> None:
    op.drop_column("posts", "conflicts")
