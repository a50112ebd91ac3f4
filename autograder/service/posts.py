"""The outbox's rows: AGS score posts waiting, sent, failed or superseded, and the line item
each week's scores go to.

A post is enqueued in the transaction that changes a counted score (``counting.py``), so
no score change is lost; ``outbox.py`` sends them, each claimed first (``claim_due``), so
of several replicas on one database exactly one sends it. A claim names its owner
(``claimed_by``, ``claims.py``): what a send's outcome writes (``post_done``, ``post_retry``,
``post_failed``, ``post_superseded``) and its renewals act only while the sender still holds
the post, and say False when it was taken over. A post's 409s in a row are counted in
its ``conflicts`` column (the outbox gives up after ``outbox.MAX_CONFLICTS``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, exists, insert, select, update

from autograder.database import Database, clock
from autograder.database.tables import posts, service_lineitems, service_scores
from autograder.service.ags import dated, next_moment, score_payload
from autograder.service.claims import CLAIM_TTL_S, claim_token, still_held

PostState = Literal["pending", "posted", "failed", "superseded"]


@dataclass(frozen=True)
class Post:
    """One AGS score post in the outbox and how sending it went."""

    id: int
    context: str
    user: str
    week: str
    lineitem: str
    payload: dict[str, Any]
    state: PostState
    tries: int
    next_try_at: datetime | None
    last_error: str | None
    posted_at: datetime | None
    sending_since: datetime | None = None
    conflicts: int = 0  # 409s in a row
    # the token of the claim on it (``claims.py``): from ``claim_due``, the previous sender's,
    # whose replica the one taking the post over names in its log
    claimed_by: str | None = field(default=None, compare=False)

    @property
    def status(self) -> str:
        """For the instructor: posted, sending, retrying, failed or superseded (with ``last_error``)."""
        if self.state == "pending":
            return "retrying" if self.tries else "sending"
        return self.state


_SELECT = select(posts.c.id, posts.c.context, posts.c.user, posts.c.week, posts.c.lineitem, posts.c.payload,
                 posts.c.state, posts.c.tries, posts.c.next_try_at, posts.c.last_error, posts.c.posted_at,
                 posts.c.sending_since, posts.c.conflicts, posts.c.claimed_by)


def _post(row: Sequence[Any]) -> Post:
    (id_, context, user, week, lineitem, payload, state, tries, next_try_at, last_error, posted_at,
     sending_since, conflicts, claimed_by) = row
    return Post(id=id_, context=context, user=user, week=week, lineitem=lineitem, payload=payload, state=state,
                tries=tries, next_try_at=next_try_at, last_error=last_error, posted_at=posted_at,
                sending_since=sending_since, conflicts=conflicts, claimed_by=claimed_by)


def _score_of(context: str, user: str, week: str) -> tuple[Any, ...]:
    return service_scores.c.context == context, service_scores.c.user == user, service_scores.c.week == week


def lock_scores(database: Database, db: Connection, context: str, week: str) -> None:
    """Inside a write transaction: one writer at a time of a week's scores and their posts'
    timestamps (every process agrees on "one second after the last")."""
    database.lock(db, "scores", context, week)


def enqueue(database: Database, db: Connection, context: str, user: str, week: str, lineitem: str) -> None:
    """Inside a write transaction (under ``lock_scores``): the post of the user's current
    score, dated after the last one (``ags.next_moment``); older posts not sent yet are
    superseded by it."""
    score, max_score, progress, comment, last = db.execute(select(
        service_scores.c.score, service_scores.c.max_score, service_scores.c.progress, service_scores.c.comment,
        service_scores.c.last_timestamp).where(*_score_of(context, user, week))).one()
    now = clock.now()
    when = next_moment(now, last)
    payload = score_payload(user=user, score=score, max_score=max_score, progress=progress, comment=comment,
                            moment=when)
    db.execute(update(service_scores).where(*_score_of(context, user, week)).values(last_timestamp=when))
    post_id = db.execute(insert(posts).values(context=context, user=user, week=week, lineitem=lineitem,
                                              payload=payload, state="pending", next_try_at=now,
                                              created_at=now).returning(posts.c.id)).scalar_one()
    db.execute(update(posts).where(posts.c.context == context, posts.c.user == user, posts.c.lineitem == lineitem,
                                   posts.c.state == "pending", posts.c.id < post_id, posts.c.sending_since.is_(None))
               .values(state="superseded", next_try_at=None,
                       last_error=f"replaced by post {post_id} before it was sent"))


def lineitem_of(db: Connection, context: str, week: str) -> str | None:
    """Inside a transaction: where a week's scores go, if a launch said."""
    return db.execute(select(service_lineitems.c.url).where(service_lineitems.c.context == context,
                                                            service_lineitems.c.week == week)).scalar()


class Posts:
    """The ``posts`` and ``service_lineitems`` tables, as the web app and the outbox use them."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def set_lineitem(self, context: str, week: str, url: str) -> None:
        """Remember where a week's scores go; a new line item gets every current score."""
        with self.database.write() as db:
            lock_scores(self.database, db, context, week)
            if lineitem_of(db, context, week) == url:
                return
            db.execute(self.database.upsert(service_lineitems, {"context": context, "week": week, "url": url},
                                            keys=("context", "week")))
            for user in db.execute(select(service_scores.c.user).where(service_scores.c.context == context,
                                                                       service_scores.c.week == week)).scalars().all():
                enqueue(self.database, db, context, user, week, url)

    def lineitem(self, context: str, week: str) -> str | None:
        with self.database.read() as db:
            return lineitem_of(db, context, week)

    def posts(self, *, context: str, week: str | None = None) -> list[Post]:
        """The score posts of a course (one week, or all), newest first."""
        query = _SELECT.where(posts.c.context == context).order_by(posts.c.id.desc())
        if week is not None:
            query = query.where(posts.c.week == week)
        with self.database.read() as db:
            return [_post(r) for r in db.execute(query)]

    def claim_due(self, now: datetime, *, ttl_s: float = CLAIM_TTL_S, limit: int = 50,
                  owner: str | None = None) -> list[Post]:
        """Claim the posts due at ``now`` that this process may send, oldest first, as they were
        before the claim (``sending_since`` set: an earlier send's outcome is unknown).
        ``owner`` is the claim's token (``claims.claim_token``), which the caller passes to
        the step that ends the send; by default a fresh one nobody holds (a send cut off).

        A post is claimed by stamping its ``sending_since`` and ``claimed_by`` (and counting
        the try), in one write transaction; on PostgreSQL each candidate row is taken ``FOR
        UPDATE SKIP LOCKED``, so two replicas never claim one post. A claim older than ``ttl_s`` is a
        dead process's and may be taken over (``renew_claims`` keeps a live one's fresh).
        Each student's posts to a line item go one at a time, in order: a post waits while
        an earlier one of the same queue is due or claimed."""
        since = now - timedelta(seconds=ttl_s)
        earlier = posts.alias("earlier")
        blocked = exists().where(
            earlier.c.context == posts.c.context, earlier.c.user == posts.c.user,
            earlier.c.lineitem == posts.c.lineitem, earlier.c.id < posts.c.id, earlier.c.state == "pending",
            (earlier.c.next_try_at <= now) | (earlier.c.sending_since >= since))
        with self.database.write() as db:
            due = [_post(r) for r in db.execute(
                _SELECT.where(posts.c.state == "pending", posts.c.next_try_at <= now,
                              posts.c.sending_since.is_(None) | (posts.c.sending_since < since), ~blocked)
                .order_by(posts.c.id).limit(limit).with_for_update(skip_locked=True, of=posts))]
            if due:
                db.execute(update(posts).where(posts.c.id.in_([p.id for p in due]))
                           .values(sending_since=now, tries=posts.c.tries + 1,
                                   claimed_by=owner or claim_token()))
            return due

    def renew_claims(self, held: Mapping[int, str]) -> Collection[int]:
        """Keep this process's claims on the posts it is sending fresh (``claims.ClaimRenewer``):
        of ``held`` (post id -> token), those still this process's; their ids."""
        with self.database.write() as db:
            return db.execute(update(posts).where(
                still_held(posts.c.id, posts.c.claimed_by, held),
                posts.c.state == "pending").values(sending_since=clock.now())
                .returning(posts.c.id)).scalars().all()

    @staticmethod
    def _held(post_id: int, claim: str | None) -> tuple[Any, ...]:
        """The post while ``claim`` holds it (None: while nobody does), still to be sent."""
        return posts.c.id == post_id, posts.c.state == "pending", posts.c.claimed_by.is_not_distinct_from(claim)

    def _set(self, post_id: int, claim: str | None, **values: Any) -> bool:
        with self.database.write() as db:
            return db.execute(update(posts).where(*self._held(post_id, claim))
                              .values(claimed_by=None, **values)).rowcount == 1

    # The steps that end a send: ``claim`` is the token the post was claimed with. Each
    # returns False, changing nothing, if the claim was taken over (another replica sends it).

    def post_done(self, post_id: int, now: datetime, note: str | None = None, *, claim: str | None = None) -> bool:
        return self._set(post_id, claim, state="posted", posted_at=now, next_try_at=None, sending_since=None,
                         last_error=note)

    def post_retry(self, post_id: int, error: str, at: datetime, payload: dict[str, Any] | None = None, *,
                   conflict: bool = False, claim: str | None = None) -> bool:
        """Try again at ``at`` (with a new ``payload``, e.g. a later timestamp after a 409);
        ``conflict``: this answer was a 409 (counted), else the count of 409s in a row ends."""
        with self.database.write() as db:
            context, user, week = db.execute(select(posts.c.context, posts.c.user, posts.c.week)
                                             .where(posts.c.id == post_id)).one()
            lock_scores(self.database, db, context, week)
            if db.execute(update(posts).where(*self._held(post_id, claim)).values(
                    next_try_at=at, last_error=error, sending_since=None, claimed_by=None,
                    conflicts=posts.c.conflicts + 1 if conflict else 0)).rowcount != 1:
                return False
            if payload is not None:
                db.execute(update(posts).where(posts.c.id == post_id).values(payload=payload))
                moment = dated(payload)
                last = db.execute(select(service_scores.c.last_timestamp)
                                  .where(*_score_of(context, user, week))).scalar()
                if last is None or moment > last:
                    db.execute(update(service_scores).where(*_score_of(context, user, week))
                               .values(last_timestamp=moment))
            return True

    def post_failed(self, post_id: int, error: str, *, claim: str | None = None) -> bool:
        return self._set(post_id, claim, state="failed", next_try_at=None, sending_since=None, last_error=error)

    def post_superseded(self, post_id: int, why: str, *, claim: str | None = None) -> bool:
        return self._set(post_id, claim, state="superseded", next_try_at=None, sending_since=None, last_error=why)

    def retry_post(self, post_id: int, *, context: str) -> bool:
        """An instructor's "send again" for a failed post of their course; False if there is none."""
        with self.database.write() as db:
            return db.execute(update(posts).where(posts.c.id == post_id, posts.c.context == context,
                                                  posts.c.state == "failed")
                              .values(state="pending", next_try_at=clock.now(), tries=0)).rowcount == 1

    def newer_post_exists(self, post: Post) -> bool:
        """Whether a later post for the same user and line item exists (this one is outdated)."""
        with self.database.read() as db:
            return bool(db.execute(select(exists().where(
                posts.c.context == post.context, posts.c.user == post.user, posts.c.lineitem == post.lineitem,
                posts.c.id > post.id))).scalar())
