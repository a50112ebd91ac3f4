"""Every table the package keeps, as SQLAlchemy Core: the schema as the code sees it now.

One schema for every database the package opens: a week's gradebook, the service's data
folder, the LTI login states. A table one of them does not use stays empty; in exchange
one database (a PostgreSQL server, say) can hold them all. Changing a table here means a
new migration in ``migrations/versions/`` (``docs/ARCHITECTURE.md``, "Storage").

Every moment is a ``types.UtcDateTime`` (aware UTC on both engines, ``clock.now()`` writes
it) but a rate limit's ``full_at``, epoch seconds for the arithmetic its upsert does in SQL;
every document is ``JSON`` (dicts and lists in and out, nothing encoded by hand): run
counts, result documents, score posts, sync reports, a Moodle sync's file lists.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

from autograder.database.types import UtcDateTime

metadata = MetaData()

# --- the gradebook (autograder.gradebook) ------------------------------------------------------

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("week", Text, nullable=False),
    Column("grader_version", Text, nullable=False),
    Column("started", UtcDateTime, nullable=False),
    Column("finished", UtcDateTime),  # None: still running, or the run was killed
    Column("counts", JSON, nullable=False, server_default="{}"),  # results per status, and "reused"
)

results = Table(
    "results", metadata,
    Column("week", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    Column("submission_sha256", Text),
    Column("tests_sha256", Text),
    Column("grader_version", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("score", Float, nullable=False),
    Column("max_score", Float, nullable=False),
    Column("document", JSON, nullable=False),  # result_json.to_dict as recorded; marks apply on read
    Column("recorded", UtcDateTime, nullable=False),
    Column("run_id", Integer, ForeignKey("runs.id")),
)

manual_marks = Table(
    "manual_marks", metadata,
    Column("week", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    Column("task", Integer, primary_key=True),
    Column("points", Float, nullable=False),
    Column("comment", Text, nullable=False),
    Column("marked", UtcDateTime, nullable=False),
    Column("answer_sha256", Text),  # the answer marked; None: unknown
    Column("adjustment", Float),  # None: points given directly; else a rubric mark and this its adjustment
    Column("note", Text, nullable=False, server_default=""),  # a rubric mark's own comment
    Column("marker", Text),  # who saved it: an LMS user (service), "sheet" (merge-manual); None: not kept then
)

rubric_items = Table(
    "rubric_items", metadata,
    Column("week", Text, primary_key=True),
    Column("task", Integer, primary_key=True),
    Column("number", Integer, primary_key=True),  # from 1 within the task: what markers write and see
    Column("points", Float, nullable=False),  # negative: a deduction
    Column("comment", Text, nullable=False),
)

rubric_applied = Table(
    "rubric_applied", metadata,
    Column("week", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    Column("task", Integer, primary_key=True),
    Column("number", Integer, primary_key=True),
    ForeignKeyConstraint(["week", "task", "number"], ["rubric_items.week", "rubric_items.task", "rubric_items.number"]),
)

score_overrides = Table(  # an instructor's points for an autograded task, in place of the tests'
    "score_overrides", metadata,
    Column("week", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    Column("task", Integer, primary_key=True),
    Column("points", Float, nullable=False),
    Column("reason", Text, nullable=False),  # shown to the student on the feedback page
    Column("by", Text, nullable=False),  # who overrode: an instructor's name, or the CLI's user
    Column("at", UtcDateTime, nullable=False),
)

# --- the grading service (autograder.service) --------------------------------------------------

service_users = Table(
    "service_users", metadata,
    Column("context", Text, primary_key=True),
    Column("user", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("email", Text),
    Column("roles", JSON, nullable=False, server_default="[]"),  # the LTI roles of their last launch
)

marker_assignments = Table(  # who marks a student's hand-in of a week (service/markers.py)
    "marker_assignments", metadata,
    Column("context", Text, primary_key=True),
    Column("week", Text, primary_key=True),
    Column("user", Text, primary_key=True),  # the student
    Column("marker", Text, nullable=False),  # the course user (LMS sub) who marks it
)

service_lineitems = Table(
    "service_lineitems", metadata,
    Column("context", Text, primary_key=True),
    Column("week", Text, primary_key=True),
    Column("url", Text, nullable=False),
)

attempts = Table(
    "attempts", metadata,
    Column("id", Integer, primary_key=True),
    Column("context", Text, nullable=False),
    Column("user", Text, nullable=False),
    Column("week", Text, nullable=False),
    Column("number", Integer, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("submitted_at", UtcDateTime, nullable=False),
    Column("state", Text, nullable=False),  # queued, grading, graded, failed; the score is the gradebook's result's
    Column("penalty", Float, nullable=False),  # fraction of the result's max_score taken off (late)
    Column("counted_mode", Text, nullable=False),  # best or last, from the policy at upload
    Column("tries", Integer, nullable=False, server_default="0"),  # times grading started
    Column("message", Text),  # why grading failed
    Column("title", Text),  # the week's title, for feedback pages
    Column("graded_at", UtcDateTime),
    Column("claimed_at", UtcDateTime),  # while grading: when its replica last renewed the claim
    Column("claimed_by", Text),  # while grading: the claim's owner token (service/claims.py)
    Column("regrade_requested_at", UtcDateTime),  # in the week's latest regrade: when it was asked for
    UniqueConstraint("context", "user", "week", "number"),
    Index("attempts_queue", "state", "week", "id"),
    Index("attempts_owner", "context", "user", "week"),
    sqlite_autoincrement=True,  # an id is never used twice (it names files and gradebook keys)
)

service_scores = Table(  # the last score enqueued per user and week
    "service_scores", metadata,
    Column("context", Text, primary_key=True),
    Column("user", Text, primary_key=True),
    Column("week", Text, primary_key=True),
    Column("score", Float, nullable=False),
    Column("max_score", Float, nullable=False),
    Column("progress", Text, nullable=False),
    Column("attempt_id", Integer, nullable=False),
    Column("comment", Text, nullable=False),
    Column("last_timestamp", UtcDateTime),
)

posts = Table(
    "posts", metadata,
    Column("id", Integer, primary_key=True),
    Column("context", Text, nullable=False),
    Column("user", Text, nullable=False),
    Column("week", Text, nullable=False),
    Column("lineitem", Text, nullable=False),
    Column("payload", JSON, nullable=False),  # the AGS score as sent
    Column("state", Text, nullable=False),
    Column("tries", Integer, nullable=False, server_default="0"),
    Column("next_try_at", UtcDateTime),
    Column("last_error", Text),
    Column("posted_at", UtcDateTime),
    Column("created_at", UtcDateTime, nullable=False),
    Column("sending_since", UtcDateTime),  # set while a send is under way: its outcome is unknown
    Column("conflicts", Integer, nullable=False, server_default="0"),  # 409s in a row on this post
    Column("claimed_by", Text),  # while a send is under way: the claim's owner token (service/claims.py)
    Index("posts_due", "state", "next_try_at"),
    sqlite_autoincrement=True,
)

service_syncs = Table(  # one row per [[sync]] assignment, shared by the replicas (service/sync_leases.py)
    "service_syncs", metadata,
    Column("id", Integer, primary_key=True),
    Column("site", Text, nullable=False),  # the Moodle site's address, as moodle_sync's
    Column("assignment", BigInteger, nullable=False),  # mod_assign instance id
    Column("owner", Text),  # the replica whose run holds the lease; None: nobody runs it
    Column("claimed_at", UtcDateTime),  # when the owner last renewed its lease
    Column("started", UtcDateTime),  # the run under way, or the last one
    Column("finished", UtcDateTime),
    Column("next_run", UtcDateTime),  # None: never run, due at once
    Column("succeeded", UtcDateTime),  # the last run that went through
    Column("report", JSON(none_as_null=True)),  # the last run's counts; None before the first or when it failed
    Column("error", Text),  # the last run's problem in words
    UniqueConstraint("site", "assignment"),
)

# --- autograder moodle sync (autograder.moodle_ws.sync_state) --------------------------------------

moodle_sync = Table(
    "moodle_sync", metadata,
    Column("site", Text, primary_key=True),  # the Moodle site's address (wwwroot)
    Column("assignment", BigInteger, primary_key=True),  # mod_assign instance id
    Column("userid", BigInteger, primary_key=True),
    Column("week", Text, nullable=False),
    Column("fullname", Text),
    Column("attemptnumber", Integer, nullable=False),
    Column("modified", BigInteger, nullable=False),  # the submission's timemodified as last listed
    Column("downloaded", BigInteger),  # the timemodified whose files are on disk; None: none yet
    Column("files", JSON, nullable=False, server_default="[]"),  # every file name the submission holds
    Column("pushed", Text),  # signature of the last confirmed push
    Column("pushed_attempt", Integer),
    Column("pushed_modified", BigInteger),  # the grade's timemodified Moodle showed after that push
    Column("inflight", Text),  # signature of a push sent but not confirmed
    Column("inflight_grade", Float),
    Column("pushed_grader", BigInteger),  # the grade's grader after that push (None: not recorded)
    Column("pushed_grade", Float),  # the grade it held then (None: no grade)
)

# --- LTI logins (autograder.service.lti.LoginStates) ---------------------------------------------

lti_state = Table(
    "lti_state", metadata,
    Column("state", Text, primary_key=True),
    Column("nonce", Text, nullable=False),
    Column("issuer", Text, nullable=False),
    Column("client_id", Text, nullable=False),
    Column("created", UtcDateTime, nullable=False),
)

lti_nonce = Table(
    "lti_nonce", metadata,
    Column("issuer", Text, primary_key=True),
    Column("nonce", Text, primary_key=True),
    Column("used", UtcDateTime, nullable=False),
)

lti_lineitem = Table(
    "lti_lineitem", metadata,
    Column("lineitem", Text, primary_key=True),
    Column("issuer", Text, nullable=False),
    Column("client_id", Text, nullable=False),
    Column("scopes", Text),  # the AGS scopes the last launch granted, space-separated; None: not recorded
)

lti_platforms = Table(  # the platforms registered with the tool (autograder.service.lti.Platforms)
    "lti_platforms", metadata,
    Column("id", Integer, primary_key=True),  # the order of registration
    Column("issuer", Text, nullable=False),
    Column("client_id", Text, nullable=False),
    Column("auth_login_url", Text, nullable=False),
    Column("token_url", Text, nullable=False),
    Column("jwks_url", Text, nullable=False),
    Column("deployment_ids", JSON, nullable=False),  # a list of strings, in the order they were registered
    Column("name", Text, nullable=False, server_default=""),
    UniqueConstraint("issuer", "client_id"),
    sqlite_autoincrement=True,
)

lti_registration = Table(
    "lti_registration", metadata,
    Column("digest", Text, primary_key=True),
    Column("expires", UtcDateTime, nullable=False),
)

# --- the service's rate limits (autograder.service.rate_limit) -----------------------------------

rate_limits = Table(  # one token bucket per limit and key (a SHA-256), shared by the replicas
    "rate_limits", metadata,
    Column("bucket", Text, primary_key=True),  # which limit: "user", "address", "upload"
    Column("key", Text, primary_key=True),
    Column("full_at", Float, nullable=False),  # when the bucket is full again (epoch seconds); past: a full one
    Index("rate_limits_full_at", "bucket", "full_at"),
)
