"""Attempts and the grading queue: an upload becomes a queued attempt, a grader claims it,
grading ends it graded or failed.

Claims are safe with several processes on one database: on PostgreSQL each candidate is
taken with ``SELECT ... FOR UPDATE SKIP LOCKED`` (a row another claimer holds is passed
over, not waited for), on SQLite the write transaction holds the whole file. A claim
expires when the process holding it dies: while it lives, a thread renews its claims'
``claimed_at`` every third of ``claim_ttl_s``; a claim not renewed for ``claim_ttl_s`` goes
back in the queue (``requeue_interrupted``, and before ``queued_weeks`` answers), logged as
``taken over`` with the replica whose claim it was. Each claim
has its owner in ``claimed_by`` (``claims.py``): the renewal, the result, a release and a
failure only act on an attempt this process still holds, so one that stalled past the TTL
changes nothing its successor does. A student's upload checks the attempt limit under a
lock on that student's week (``Database.lock``), so two uploads at once cannot both pass it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Text,
    and_,
    case,
    exists,
    func,
    insert,
    literal,
    select,
    text,
    update,
)
from sqlalchemy import cast as sql_cast

from autograder.course import normalise_week_name
from autograder.database import Database, clock
from autograder.database.tables import attempts, results
from autograder.exceptions import AttemptRefused, CourseError
from autograder.formats import result_json
from autograder.gradebook import apply_marks, read_marks, read_overrides
from autograder.service.claims import CLAIM_TTL_S, ClaimRenewer, claim_owner, replica_claim_token, still_held
from autograder.service.events import event
from autograder.service.policy import WeekPolicy

MAX_TRIES = 3  # an attempt whose grading was interrupted this often is failed, not retried again
AttemptState = Literal["queued", "grading", "graded", "failed"]
WAITING = ("queued", "grading")  # the states of an attempt whose (next) result is still to come

# The queue, fair across learners: a learner's attempt waits behind every other learner's
# attempts that have had fewer turns. A turn is an attempt of theirs being graded, graded
# since the oldest waiting attempt was uploaded, or waiting ahead of it. One learner's ten
# uploads thus take every other learner's first in turn, and someone who uploads while they
# wait is graded next, not after the ten. An attempt a regrade queued again (it keeps its last
# result meanwhile) waits behind every new upload, which has none: a regrade of 300 attempts
# does not keep a student waiting for their first result of the week; the turns are counted
# from the oldest new upload then.
_FAIR_QUEUE = text("""
    WITH since AS (SELECT COALESCE(MIN(CASE WHEN regrade_requested_at IS NULL THEN submitted_at END),
                                   MIN(submitted_at)) AS t FROM attempts WHERE state = 'queued'),
    served AS (SELECT context, "user", COUNT(*) AS n FROM attempts, since
               WHERE state = 'grading' OR (state = 'graded' AND graded_at >= since.t) GROUP BY context, "user"),
    queue AS (SELECT id, week, context, "user", regrade_requested_at IS NOT NULL AS regrade,
                     ROW_NUMBER() OVER (PARTITION BY context, "user" ORDER BY id) - 1 AS ahead
              FROM attempts WHERE state = 'queued')
    SELECT q.id, q.week FROM queue q LEFT JOIN served s ON s.context = q.context AND s."user" = q."user"
    ORDER BY q.regrade, COALESCE(s.n, 0) + q.ahead, q.id""")


@dataclass(frozen=True)
class Attempt:
    """One upload of one student for one week, and what grading made of it.

    The row holds the queue's state; ``score``, ``max_score`` and ``pending`` are read from
    the gradebook's result of the attempt (key ``attempt-<id>``) with its marks applied, by
    ``read_attempts``, not kept twice. ``score`` is as graded (hand marks applied, pending
    tasks at 0), before the late ``penalty`` (a fraction of ``max_score``); ``pending`` is
    the points still to mark; all three stay None, 0 and 0 until a result is recorded."""

    id: int
    context: str
    user: str
    week: str
    number: int
    content_hash: str
    submitted_at: datetime
    state: AttemptState
    score: float | None
    max_score: float
    penalty: float
    pending: float = 0.0
    message: str | None = None
    counted_mode: Literal["best", "last"] = "best"  # the policy's choice when it was uploaded
    title: str | None = None  # the week's title as its grader gave it (for pages written again)
    regrade_requested_at: datetime | None = None  # in the week's latest regrade (``AttemptQueue.regrade``)

    @property
    def key(self) -> str:
        """Its key in the gradebook (results and manual marks)."""
        return attempt_key(self.id)

    @property
    def counted(self) -> float | None:
        """The score after the late penalty: what this attempt is worth in the gradebook."""
        if self.score is None:
            return None
        return round(max(0.0, self.score - self.penalty * self.max_score), 6)

    @property
    def scored(self) -> bool:
        """Whether it has a score that counts: graded, or queued again by a regrade (or an
        interrupted grading) with its last result standing until the new one lands."""
        return self.state != "failed" and self.score is not None

    @property
    def regrading(self) -> bool:
        """Waiting to be graded again (or being graded) while its last result still stands."""
        return self.state in WAITING and self.score is not None


def attempt_key(attempt_id: int) -> str:
    """An attempt's key in the gradebook."""
    return f"attempt-{attempt_id}"


# an attempt's row and its gradebook result's document (None before one is recorded), in one query;
# the document as its JSON text, decoded one row at a time by read_attempts: decoded by the driver
# in the fetch, a week's documents would all be held as dicts at once (3x the memory, 1.4x the time)
_KEY = literal("attempt-", Text) + sql_cast(attempts.c.id, Text)
SELECT_ATTEMPTS = select(
    attempts.c.id, attempts.c.context, attempts.c.user, attempts.c.week, attempts.c.number, attempts.c.content_hash,
    attempts.c.submitted_at, attempts.c.state, attempts.c.penalty, attempts.c.message, attempts.c.counted_mode,
    attempts.c.title, attempts.c.regrade_requested_at, sql_cast(results.c.document, Text).label("document"),
).select_from(attempts.outerjoin(results, and_(results.c.week == attempts.c.week, results.c.key == _KEY)))


# The state of an attempt whose grading could not produce a result: failed, unless it has one
# already (a regrade queued it): then its last result stands and it is graded, as it was.
_FAILED = case((exists().where(results.c.week == attempts.c.week, results.c.key == _KEY), "graded"),
               else_="failed")


@dataclass(frozen=True)
class RegradeStatus:
    """A week's regrade in one course: of the attempts its latest regrade took (``total``),
    how many are ``done`` (graded again, or failed); ``regradable``: how many a regrade
    asked for now would queue (those graded or failed)."""

    done: int
    total: int
    regradable: int

    @property
    def running(self) -> bool:
        return self.done < self.total


def read_attempts(db: Connection, query: Select[Any]) -> list[Attempt]:
    """Inside a transaction: the attempts of a ``SELECT_ATTEMPTS`` query, their scores from
    the gradebook (``result_json.decode``, marks and overrides applied as
    ``gradebook.marked_result`` does). The one way an attempt's score is read: a week of a
    course is three more queries (its marks and overrides), not one per attempt."""
    rows = db.execute(query).all()
    keys: dict[str, list[str]] = {}
    for row in rows:
        if row.document is not None:
            keys.setdefault(row.week, []).append(attempt_key(row.id))
    marks = {week: read_marks(db, week, of_week) for week, of_week in keys.items()}
    overrides = {week: read_overrides(db, week, of_week) for week, of_week in keys.items()}
    found = []
    for (id_, context, user, week, number, content_hash, submitted_at, state, penalty, message, counted_mode,
         title, regrade_requested_at, document) in rows:
        result = None if document is None else apply_marks(
            result_json.decode(document, where=f"the gradebook's result of attempt {id_}"),
            marks[week].get(attempt_key(id_), {}), overrides[week].get(attempt_key(id_), {}))
        found.append(Attempt(
            id=id_, context=context, user=user, week=week, number=number, content_hash=content_hash,
            submitted_at=submitted_at, state=state, penalty=penalty, message=message,
            counted_mode=counted_mode, title=title, score=None if result is None else result.score,
            max_score=0.0 if result is None else result.max_score,
            pending=0.0 if result is None else result.pending_points, regrade_requested_at=regrade_requested_at))
    return found


def owned_attempts(db: Connection, *, context: str, user: str, week: str) -> list[Attempt]:
    """Inside a transaction: a student's attempts at a week, first to last."""
    return read_attempts(db, SELECT_ATTEMPTS.where(
        attempts.c.context == context, attempts.c.user == user, attempts.c.week == week)
        .order_by(attempts.c.number))


class AttemptQueue:
    """The ``attempts`` table: uploads, who may read them, and the grading queue."""

    def __init__(self, database: Database, *, claim_ttl_s: float = CLAIM_TTL_S) -> None:
        self.database = database
        self.claim_ttl_s = claim_ttl_s
        self._claims = ClaimRenewer(self._renew, ttl_s=claim_ttl_s, name="claim-renewer")

    def close(self) -> None:
        """Stop renewing claims (what is still held then expires, as if this process had died)."""
        self._claims.close()

    def let_go(self, attempt_id: int) -> None:
        """This process no longer grades the attempt: its claim is not renewed any more."""
        self._claims.let_go(attempt_id)

    def claim_of(self, attempt_id: int) -> str | None:
        """The token of this process's claim on the attempt; None if it holds none."""
        return self._claims.token(attempt_id)

    def owned(self, attempt_id: int, claim: str | None) -> ColumnElement[bool]:
        """The condition of the attempt while ``claim`` holds it (None: while nobody does)."""
        return (attempts.c.id == attempt_id) & attempts.c.claimed_by.is_not_distinct_from(claim)

    def _renew(self, held: Mapping[int, str]) -> Collection[int]:
        """Renew the claims of ``held`` (attempt id -> token) this process still has; their ids."""
        with self.database.write() as db:
            return db.execute(update(attempts).where(
                still_held(attempts.c.id, attempts.c.claimed_by, held),
                attempts.c.state == "grading").values(claimed_at=clock.now())
                .returning(attempts.c.id)).scalars().all()

    def still_held(self, attempt_id: int) -> bool:
        """Whether this process may write the attempt's outcome now: it still holds the claim
        (renewed here, so the writes that follow have a whole ``claim_ttl_s`` before anyone
        may take the attempt over), or it holds none and nobody else does either."""
        claim = self.claim_of(attempt_id)
        if claim is not None:
            return attempt_id in self._renew({attempt_id: claim})
        with self.database.read() as db:
            return db.execute(select(attempts.c.id).where(self.owned(attempt_id, None))).first() is not None

    def queue_under_canonical_names(self) -> None:
        """Waiting attempts an older version stored under the week name as typed (``1``, ``week1``):
        renamed to the canonical week, numbered after that week's attempts, so its grader claims
        them (under the alias none ever did, and the dispatcher restarted graders for them every
        few seconds). One whose name is no week at all is failed, saying why."""
        with self.database.write() as db:
            waiting = db.execute(select(attempts.c.id, attempts.c.context, attempts.c.user, attempts.c.week)
                                 .where(attempts.c.state.in_(("queued", "grading"))).order_by(attempts.c.id)).all()
            for id_, context, user, week in waiting:
                try:
                    canonical = normalise_week_name(week)
                except CourseError:
                    db.execute(update(attempts).where(attempts.c.id == id_).values(
                        state="failed", claimed_at=None, claimed_by=None, message=(
                        f"uploaded under {week!r}, which names no week; it was not graded and does not count as "
                        "an attempt: open the week's activity from the LMS and upload it again.")))
                    continue
                if canonical != week:
                    number = db.execute(select(func.coalesce(func.max(attempts.c.number), 0) + 1).where(
                        attempts.c.context == context, attempts.c.user == user,
                        attempts.c.week == canonical)).scalar_one()
                    db.execute(update(attempts).where(attempts.c.id == id_).values(week=canonical, number=number))

    def add(self, *, context: str, user: str, week: str, content_hash: str, policy: WeekPolicy,
            now: datetime) -> Attempt:
        """Queue an upload whose file is stored, or raise ``AttemptRefused`` saying why; the
        policy is checked in the transaction that inserts the attempt."""
        with self.database.write() as db:
            self.database.lock(db, "attempts", context, user, week)
            earlier = owned_attempts(db, context=context, user=user, week=week)
            counting = [a for a in earlier if a.state != "failed"]
            why = policy.refusal(now=now, attempts_made=len(counting),
                                 last_submitted=counting[-1].submitted_at if counting else None)
            if why is None and counting and counting[-1].content_hash == content_hash:
                why = (f"This notebook is the same file as your attempt {counting[-1].number}: save your changes "
                       "in Jupyter, download the notebook again and upload that.")
            if why is not None:
                raise AttemptRefused(why)
            number = max((a.number for a in earlier), default=0) + 1
            attempt_id = db.execute(insert(attempts).values(
                context=context, user=user, week=week, number=number, content_hash=content_hash,
                submitted_at=now, state="queued", penalty=policy.penalty(now), counted_mode=policy.counted)
                .returning(attempts.c.id)).scalar_one()
            return read_attempts(db, SELECT_ATTEMPTS.where(attempts.c.id == attempt_id))[0]

    def attempt(self, attempt_id: int, *, context: str | None = None, user: str | None = None) -> Attempt | None:
        """One attempt; with ``context`` (and ``user``) only if it belongs to them."""
        query = SELECT_ATTEMPTS.where(attempts.c.id == attempt_id)
        if context is not None:
            query = query.where(attempts.c.context == context)
        if user is not None:
            query = query.where(attempts.c.user == user)
        with self.database.read() as db:
            found = read_attempts(db, query)
        return found[0] if found else None

    def attempts(self, *, context: str, user: str, week: str) -> list[Attempt]:
        """A student's attempts at a week, first to last."""
        with self.database.read() as db:
            return owned_attempts(db, context=context, user=user, week=week)

    def week_attempts(self, *, context: str, week: str) -> list[Attempt]:
        """Every attempt at a week in one course (for its instructors), oldest first."""
        with self.database.read() as db:
            return read_attempts(db, SELECT_ATTEMPTS.where(attempts.c.context == context, attempts.c.week == week)
                                 .order_by(attempts.c.id))

    def queue_position(self, attempt_id: int) -> int:
        """1 for the next attempt to be graded, 2 for the one after... in the fair order; 0 once
        grading started."""
        with self.database.read() as db:
            order = [row[0] for row in db.execute(_FAIR_QUEUE)]
        return order.index(attempt_id) + 1 if attempt_id in order else 0

    def claim(self, weeks: Sequence[str] | None = None) -> Attempt | None:
        """Take the next queued attempt (of ``weeks``, if given) in the fair order for grading,
        atomically, whoever else claims at the same time.

        An attempt whose grading already started ``MAX_TRIES`` times (each time the grader
        or the whole service died with it) is failed instead: it will not take the service
        down again. An attempt this process still works on (its claim taken over while it
        stalled) is left to the others."""
        held = set(self._claims.held())
        with self.database.write() as db:
            for id_, week in db.execute(_FAIR_QUEUE).all():
                if (weeks is not None and week not in weeks) or id_ in held:
                    continue
                tries = db.execute(select(attempts.c.tries).where(attempts.c.id == id_, attempts.c.state == "queued")
                                   .with_for_update(skip_locked=True)).scalar()
                if tries is None:  # another process is claiming it, or just did
                    continue
                if tries >= MAX_TRIES:
                    db.execute(update(attempts).where(attempts.c.id == id_).values(state=_FAILED, message=(
                        f"grading stopped unexpectedly {tries} times while this notebook was graded; it was not "
                        "graded and does not count as an attempt. Tell your instructor.")))
                    continue
                token = replica_claim_token()
                db.execute(update(attempts).where(attempts.c.id == id_)
                           .values(state="grading", tries=attempts.c.tries + 1, claimed_at=clock.now(),
                                   claimed_by=token))
                self._claims.hold(id_, token)
                return read_attempts(db, SELECT_ATTEMPTS.where(attempts.c.id == id_))[0]
        return None

    def queued_weeks(self) -> dict[str, int]:
        """How many attempts wait per week, for the runner to start graders where work is
        (claims that expired go back in the queue first)."""
        self.requeue_interrupted()
        with self.database.read() as db:
            return {week: n for week, n in db.execute(select(attempts.c.week, func.count()).where(
                attempts.c.state == "queued").group_by(attempts.c.week))}

    def waiting(self, *, context: str, week: str) -> int:
        """How many of a course's attempts at a week are queued or being graded."""
        with self.database.read() as db:
            return db.execute(select(func.count()).where(attempts.c.context == context, attempts.c.week == week,
                                                         attempts.c.state.in_(WAITING))).scalar_one()

    def oldest_queued_week(self) -> str | None:
        with self.database.read() as db:
            return db.execute(select(attempts.c.week).where(attempts.c.state == "queued")
                              .order_by(attempts.c.id).limit(1)).scalar()

    def requeue_interrupted(self) -> int:
        """Put attempts whose claim expired (their process stopped or died: the claim was not
        renewed for ``claim_ttl_s``) back in the queue; how many. Claims this process holds
        and those another live process renews stay. Each is logged as ``taken over``, naming
        the replica whose claim expired where its token says (the operator's trace of a
        replica that died or stalled mid-grading)."""
        expired = self._expired() & ~attempts.c.id.in_(self._claims.held())
        with self.database.read() as db:
            if db.execute(select(func.count()).where(expired)).scalar_one() == 0:
                return 0  # the usual answer, without taking the write lock
        with self.database.write() as db:
            # locked as they are read (SQLite's write transaction holds the whole file): a row
            # another replica is requeuing at once is skipped, so each is logged by one replica
            taken = db.execute(select(attempts.c.id, attempts.c.week, attempts.c.user, attempts.c.context,
                                      attempts.c.claimed_by).where(expired).order_by(attempts.c.id)
                               .with_for_update(skip_locked=True)).all()
            if not taken:
                return 0
            requeued = db.execute(update(attempts).where(attempts.c.id.in_([row.id for row in taken]))
                                  .values(state="queued", claimed_at=None, claimed_by=None)).rowcount
        for row in taken:
            owner = claim_owner(row.claimed_by)
            event("taken over", level=logging.WARNING, attempt=row.id, week=row.week, learner=row.user,
                  course=row.context, from_replica=owner, message=(
                      f"the claim of {owner or 'a replica'} on this attempt was not renewed for "
                      f"{self.claim_ttl_s:g} s (it died or stalled): queued again, for this replica or another "
                      "to grade"))
        return requeued

    def _expired(self) -> Any:
        """The condition of a claim not renewed for ``claim_ttl_s`` (or made before claims were)."""
        since = clock.now() - timedelta(seconds=self.claim_ttl_s)
        return (attempts.c.state == "grading") & (attempts.c.claimed_at.is_(None) | (attempts.c.claimed_at < since))

    def release(self, attempt_id: int, *, count_try: bool) -> bool:
        """Give an attempt whose grading was cut short back to the queue. ``count_try``: the
        grader died with it (it may be the cause: ``claim`` fails it after ``MAX_TRIES``);
        else the service is stopping and the try does not count. False if this process's
        claim was taken over: the attempt is its new owner's, and stays as it is."""
        claim = self.claim_of(attempt_id)
        self.let_go(attempt_id)
        with self.database.write() as db:
            return db.execute(update(attempts).where(self.owned(attempt_id, claim), attempts.c.state == "grading")
                              .values(state="queued", tries=attempts.c.tries - (0 if count_try else 1),
                                      claimed_at=None, claimed_by=None)).rowcount == 1

    def regrade(self, *, context: str, week: str, attempt_id: int | None = None) -> int:
        """Queue graded (and failed) attempts again: one, or the whole week's in this course;
        how many.

        Each keeps its last result until the new one is recorded: it still counts
        (``Attempt.scored``) and its pages still show it, and the score is posted again
        only if the new result changes it (``counting.refresh_score``), so the LMS never
        sees an empty or stale score in between. The attempts are stamped as this regrade's
        (``regrade_requested_at``) for its progress (``regrade_status``): a regrade asked
        for while one runs joins it, one asked for after the last finished starts anew."""
        where = (attempts.c.context == context, attempts.c.week == week)
        stamped = attempts.c.regrade_requested_at.is_not(None)
        query = update(attempts).where(*where, attempts.c.state.in_(("graded", "failed")))
        if attempt_id is not None:
            query = query.where(attempts.c.id == attempt_id)
        with self.database.write() as db:
            if db.execute(select(func.count()).where(*where, stamped, attempts.c.state.in_(WAITING))).scalar_one() == 0:
                db.execute(update(attempts).where(*where, stamped).values(regrade_requested_at=None))
            return db.execute(query.values(state="queued", tries=0, regrade_requested_at=clock.now())).rowcount

    def regrade_status(self, *, context: str, week: str) -> RegradeStatus:
        """How far the week's latest regrade in this course is, and how many attempts a new one
        would queue: one query, for the pages that show it while it runs."""
        stamped = attempts.c.regrade_requested_at.is_not(None)
        with self.database.read() as db:
            counts = db.execute(select(attempts.c.state, stamped.label("stamped"), func.count()).where(
                attempts.c.context == context, attempts.c.week == week).group_by(attempts.c.state, stamped)).all()
        return RegradeStatus(
            done=sum(n for state, was, n in counts if was and state not in WAITING),
            total=sum(n for _, was, n in counts if was),
            regradable=sum(n for state, _, n in counts if state not in WAITING))

    def fail(self, attempt_id: int, message: str) -> bool:
        """Grading could not produce a result: the attempt is failed (it does not count), or,
        if a regrade had queued it, graded again with its last result standing (``_FAILED``).
        False if this process's claim was taken over: the new owner's outcome stands."""
        claim = self.claim_of(attempt_id)
        self.let_go(attempt_id)
        with self.database.write() as db:
            return db.execute(update(attempts).where(self.owned(attempt_id, claim)).values(
                state=_FAILED, message=message, claimed_at=None, claimed_by=None)).rowcount == 1
