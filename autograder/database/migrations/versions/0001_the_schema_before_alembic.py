"""The schema as the package made it before Alembic: created where missing, so a file
written then (gradebook ``user_version`` 1 to 3, the service's tables and ``service_meta``,
``moodle_sync``, the LTI tables) is adopted as it is, and an empty database gets it whole.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TEXT, _REAL, _INT, _BIG = sa.Text, sa.Float, sa.Integer, sa.BigInteger


def _table(name: str, *columns: sa.Column[object] | sa.Constraint, **options: object) -> None:
    op.create_table(name, *columns, if_not_exists=True, **options)


def _columns_missing(table: str, *columns: sa.Column[object]) -> None:
    """Columns a table from an older version lacks (gradebook versions 1 and 2, the sync's first table)."""
    present = {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}
    for column in columns:
        if column.name not in present:
            op.add_column(table, column)


def upgrade() -> None:
    _table("runs", sa.Column("id", _INT, primary_key=True), sa.Column("week", _TEXT, nullable=False),
           sa.Column("grader_version", _TEXT, nullable=False), sa.Column("started", _TEXT, nullable=False),
           sa.Column("finished", _TEXT), sa.Column("counts", _TEXT, nullable=False, server_default="{}"))
    _table("results", sa.Column("week", _TEXT, primary_key=True), sa.Column("key", _TEXT, primary_key=True),
           sa.Column("submission_sha256", _TEXT), sa.Column("tests_sha256", _TEXT),
           sa.Column("grader_version", _TEXT, nullable=False), sa.Column("status", _TEXT, nullable=False),
           sa.Column("score", _REAL, nullable=False), sa.Column("max_score", _REAL, nullable=False),
           sa.Column("document", _TEXT, nullable=False), sa.Column("recorded", _TEXT, nullable=False),
           sa.Column("run_id", _INT, sa.ForeignKey("runs.id")))
    _table("manual_marks", sa.Column("week", _TEXT, primary_key=True), sa.Column("key", _TEXT, primary_key=True),
           sa.Column("task", _INT, primary_key=True, autoincrement=False), sa.Column("points", _REAL, nullable=False),
           sa.Column("comment", _TEXT, nullable=False), sa.Column("marked", _TEXT, nullable=False))
    _columns_missing("manual_marks", sa.Column("answer_sha256", _TEXT), sa.Column("adjustment", _REAL),
                     sa.Column("note", _TEXT, nullable=False, server_default=""))
    _table("rubric_items", sa.Column("week", _TEXT, primary_key=True),
           sa.Column("task", _INT, primary_key=True, autoincrement=False),
           sa.Column("number", _INT, primary_key=True, autoincrement=False),
           sa.Column("points", _REAL, nullable=False), sa.Column("comment", _TEXT, nullable=False))
    _table("rubric_applied", sa.Column("week", _TEXT, primary_key=True), sa.Column("key", _TEXT, primary_key=True),
           sa.Column("task", _INT, primary_key=True, autoincrement=False),
           sa.Column("number", _INT, primary_key=True, autoincrement=False),
           sa.ForeignKeyConstraint(["week", "task", "number"],
                                   ["rubric_items.week", "rubric_items.task", "rubric_items.number"]))

    _table("service_users", sa.Column("context", _TEXT, primary_key=True), sa.Column("user", _TEXT, primary_key=True),
           sa.Column("name", _TEXT, nullable=False), sa.Column("email", _TEXT))
    _table("service_lineitems", sa.Column("context", _TEXT, primary_key=True),
           sa.Column("week", _TEXT, primary_key=True), sa.Column("url", _TEXT, nullable=False))
    _table("attempts", sa.Column("id", _INT, primary_key=True), sa.Column("context", _TEXT, nullable=False),
           sa.Column("user", _TEXT, nullable=False), sa.Column("week", _TEXT, nullable=False),
           sa.Column("number", _INT, nullable=False), sa.Column("content_hash", _TEXT, nullable=False),
           sa.Column("submitted_at", _TEXT, nullable=False), sa.Column("state", _TEXT, nullable=False),
           sa.Column("score", _REAL), sa.Column("max_score", _REAL, nullable=False, server_default="0"),
           sa.Column("pending", _REAL, nullable=False, server_default="0"), sa.Column("penalty", _REAL, nullable=False),
           sa.Column("counted_mode", _TEXT, nullable=False),
           sa.Column("tries", _INT, nullable=False, server_default="0"), sa.Column("message", _TEXT),
           sa.Column("title", _TEXT), sa.Column("result_path", _TEXT), sa.Column("feedback_path", _TEXT),
           sa.Column("graded_at", _TEXT), sa.UniqueConstraint("context", "user", "week", "number"),
           sqlite_autoincrement=True)
    op.create_index("attempts_queue", "attempts", ["state", "week", "id"], if_not_exists=True)
    op.create_index("attempts_owner", "attempts", ["context", "user", "week"], if_not_exists=True)
    _table("service_scores", sa.Column("context", _TEXT, primary_key=True), sa.Column("user", _TEXT, primary_key=True),
           sa.Column("week", _TEXT, primary_key=True), sa.Column("score", _REAL, nullable=False),
           sa.Column("max_score", _REAL, nullable=False), sa.Column("progress", _TEXT, nullable=False),
           sa.Column("attempt_id", _INT, nullable=False), sa.Column("comment", _TEXT, nullable=False),
           sa.Column("last_timestamp", _TEXT))
    _table("posts", sa.Column("id", _INT, primary_key=True), sa.Column("context", _TEXT, nullable=False),
           sa.Column("user", _TEXT, nullable=False), sa.Column("week", _TEXT, nullable=False),
           sa.Column("lineitem", _TEXT, nullable=False), sa.Column("payload", _TEXT, nullable=False),
           sa.Column("state", _TEXT, nullable=False), sa.Column("tries", _INT, nullable=False, server_default="0"),
           sa.Column("next_try_at", _TEXT), sa.Column("last_error", _TEXT), sa.Column("posted_at", _TEXT),
           sa.Column("created_at", _TEXT, nullable=False), sa.Column("sending_since", _TEXT),
           sqlite_autoincrement=True)
    op.create_index("posts_due", "posts", ["state", "next_try_at"], if_not_exists=True)

    _table("moodle_sync", sa.Column("site", _TEXT, primary_key=True),
           sa.Column("assignment", _BIG, primary_key=True, autoincrement=False),
           sa.Column("userid", _BIG, primary_key=True, autoincrement=False), sa.Column("week", _TEXT, nullable=False),
           sa.Column("fullname", _TEXT), sa.Column("attemptnumber", _INT, nullable=False),
           sa.Column("modified", _BIG, nullable=False), sa.Column("downloaded", _BIG),
           sa.Column("files", _TEXT, nullable=False, server_default="[]"), sa.Column("pushed", _TEXT),
           sa.Column("pushed_attempt", _INT), sa.Column("pushed_modified", _BIG), sa.Column("inflight", _TEXT),
           sa.Column("inflight_grade", _REAL))
    _columns_missing("moodle_sync", sa.Column("pushed_grader", _BIG), sa.Column("pushed_grade", _REAL))

    _table("lti_state", sa.Column("state", _TEXT, primary_key=True), sa.Column("nonce", _TEXT, nullable=False),
           sa.Column("issuer", _TEXT, nullable=False), sa.Column("client_id", _TEXT, nullable=False),
           sa.Column("created", _REAL, nullable=False))
    _table("lti_nonce", sa.Column("issuer", _TEXT, primary_key=True), sa.Column("nonce", _TEXT, primary_key=True),
           sa.Column("used", _REAL, nullable=False))
    _table("lti_lineitem", sa.Column("lineitem", _TEXT, primary_key=True), sa.Column("issuer", _TEXT, nullable=False),
           sa.Column("client_id", _TEXT, nullable=False))
    _table("lti_registration", sa.Column("digest", _TEXT, primary_key=True),
           sa.Column("expires", _REAL, nullable=False))


def downgrade() -> None:
    for name in ("lti_registration", "lti_lineitem", "lti_nonce", "lti_state", "moodle_sync", "posts",
                 "service_scores", "attempts", "service_lineitems", "service_users", "rubric_applied",
                 "rubric_items", "manual_marks", "results", "runs"):
        op.drop_table(name, if_exists=True)
