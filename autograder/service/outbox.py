"""Sending scores back: the persistent outbox of AGS score posts.

The store enqueues a post in the transaction that changes a counted score, so a score
change is never lost; this thread sends what is due, one post at a time, apart from
grading (a platform that is down slows nothing but itself). Each post is claimed in the
database before it is sent (``Posts.claim_due``), so of several replicas on one database
exactly one sends it, and one student's posts go one at a time, in order, whichever
replicas send them. The claim is renewed while the send lasts and expires
(``claims.CLAIM_TTL_S``) when the sending process dies: another then sends the post again,
knowing the platform may already hold that score. A send whose claim was taken over that
way while this process stalled writes nothing of its outcome (``claims.py``): the replica
that holds the post now finishes it, and a warning says so; the replica taking a post
over logs ``taken over``, naming the replica whose claim expired.

What each answer means (Moodle's behaviour, docs/LMS.md "What the tool relies on"):

- success: posted.
- 409: the platform holds a score with this timestamp or a newer one. After a send whose
  outcome was unknown (the process died, the connection broke mid-request) that is our
  own score: posted (logged ``score already there``). If a newer post for the same user
  exists, this one is superseded (``score superseded``). Both are normal, logged at info.
  Otherwise the platform's clock is ahead of ours or someone wrote the grade since:
  the post gets a later timestamp and goes again (``score retried``), at most
  ``MAX_CONFLICTS`` times, then fails (``score refused``).
- a retryable error (no answer, 5xx, 429, 401: a token to fetch again, and any refusal
  from the token endpoint but ``invalid_scope``: Moodle answers 400 there even for a clock
  a second off):
  tried again after ``base_delay_s * 2**(tries-1)`` (at most ``max_delay_s``), for as
  long as it takes.
- any other refusal of the score itself (400, 403, 404, a line item no platform owns), and
  a platform that did not grant the score scope (its launch's grant lacks it, or its token
  endpoint answers ``invalid_scope``; ``lti.AgsScoreSender``):
  failed, with the platform's answer kept for the instructor, whose page offers to send
  it again (``Store.retry_post``).

The database going away (a restart, a failover: ``health.py``) pauses the outbox, never
ends it: the thread waits 0.5 s doubling to 10 s between tries, logging one line per kind
of error per minute. A post sent while the database went away keeps its outcome until it
can be written (its claim renewed as soon as the database answers), so the platform is
not sent the score again by this replica or another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial
from types import TracebackType
from typing import Any, Protocol, Self

from sqlalchemy.exc import SQLAlchemyError

from autograder.database import clock
from autograder.exceptions import ScorePostError
from autograder.service.ags import redated
from autograder.service.claims import ClaimRenewer, claim_owner, replica_claim_token
from autograder.service.events import event
from autograder.service.health import Outage, database_away
from autograder.service.store import Post, Store

log = logging.getLogger(__name__)

BASE_DELAY_S = 2.0
MAX_DELAY_S = 3600.0
MAX_CONFLICTS = 5  # 409s in a row on the newest post before it is failed
POLL_S = 0.5  # how often the outbox looks for posts other threads or processes enqueued
SENDERS = 4  # posts in flight at once (each to another student)

class ScoreSender(Protocol):
    """Posts one score to a line item's scores endpoint; raises ``ScorePostError``."""

    def post_score(self, lineitem: str, payload: dict[str, Any]) -> None: ...


class Outbox:
    """A thread sending due posts (a context manager); ``send_due`` does one round by hand."""

    def __init__(self, store: Store, sender: ScoreSender, *, base_delay_s: float = BASE_DELAY_S,
                 max_delay_s: float = MAX_DELAY_S, poll_s: float = POLL_S, senders: int = SENDERS) -> None:
        self.store = store
        self.sender = sender
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.poll_s = poll_s
        self.senders = senders
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._claims = ClaimRenewer(store.renew_post_claims, ttl_s=store.queue.claim_ttl_s,
                                    name="autograder-outbox-claims")
        self._outage = Outage("score outbox")
        self._outcomes = Outage("score outbox, the outcome of a post sent")  # shared by the sending threads

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._run, name="autograder-outbox", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._claims.close()

    def wake(self) -> None:
        """Look for due posts now rather than at the next poll."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.send_due()
            except Exception as exc:  # noqa: BLE001 - the database away, or a bug: logged, the thread lives
                self._stop.wait(self._outage.failed(exc))
                continue
            self._outage.recovered()
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def send_due(self, now: datetime | None = None) -> int:
        """Claim and send every post due at ``now`` this process may send; how many were tried.

        Posts for different students go out side by side (``senders`` at once, so a slow
        platform answering in 300 ms still takes a deadline rush); one student's posts go
        one after the other, oldest first (``claim_due`` gives at most one of each student's
        queue at a time), so their timestamps arrive in order."""
        tried = 0
        with ThreadPoolExecutor(self.senders, thread_name_prefix="autograder-outbox-send") as pool:
            while not self._stop.is_set():
                claim = replica_claim_token()
                claimed = self.store.claim_due_posts(now or clock.now(), ttl_s=self._claims.ttl_s,
                                                     limit=10 * self.senders, owner=claim)
                if not claimed:
                    break
                for post in claimed:
                    self._claims.hold(post.id, claim)
                tried += sum(1 for _ in pool.map(partial(self._send, claim=claim), claimed))
        return tried

    def _send(self, post: Post, claim: str) -> None:
        try:
            if not self._send_claimed(post, claim):
                log.warning("score post %s: another replica took it over while this one sent it (this process did "
                            "not renew its claim for %g s); that replica's outcome stands, this one's is dropped",
                            post.id, self._claims.ttl_s)
        finally:
            self._claims.let_go(post.id)

    def _send_claimed(self, post: Post, claim: str) -> bool:
        """Send the post and store the outcome; False if the claim was lost (nothing stored)."""
        uncertain = post.sending_since is not None  # an earlier send of it may have arrived
        tries = post.tries + 1
        about: dict[str, Any] = {"post": post.id, "week": post.week, "learner": post.user, "course": post.context,
                                 "try": tries}
        if uncertain:
            owner = claim_owner(post.claimed_by)
            event("taken over", level=logging.WARNING, **about, from_replica=owner, message=(
                f"the claim of {owner or 'a replica'} on this score post was not renewed for "
                f"{self._claims.ttl_s:g} s (it died or stalled mid-send): this replica sends it again"))
        try:
            self.sender.post_score(post.lineitem, post.payload)
        except ScorePostError as exc:
            name, level, note, write = self._refused(post, claim, exc, tries, uncertain)
            event(name, level=level, **about, status=exc.status, message=note)
            return self._written(write)
        except Exception as exc:  # a sender bug must not stop the outbox: kept as the reason, retried
            if database_away(exc):  # the sender's own lookups (who owns the line item) found the database
                self._outcomes.failed(exc)  # away: nothing was sent; one line a minute, as for any outage
            else:
                log.exception("score sender failed on post %s", post.id)
            event("score retried", level=logging.WARNING, **about, error=type(exc).__name__)
            return self._written(partial(self._retry, post, claim, f"{type(exc).__name__}: {exc}", tries))
        event("score posted", **about, score=post.payload.get("scoreGiven"))
        return self._written(partial(self.store.post_done, post.id, clock.now(), claim=claim))

    def _written(self, write: Callable[[], bool]) -> bool:
        """``write`` (a sent post's outcome into the database), tried again while the database is
        away, until the outbox stops: the platform holds the score, and a post left as it was
        would be sent again once its claim expired."""
        while True:
            try:
                written = write()
            except SQLAlchemyError as exc:
                if not database_away(exc) or self._stop.is_set():
                    raise
                self._stop.wait(self._outcomes.failed(exc))
                continue
            self._outcomes.recovered()
            return written

    def _refused(self, post: Post, claim: str, exc: ScorePostError, tries: int,
                 uncertain: bool) -> tuple[str, int, str, Callable[[], bool]]:
        """What a refusal of the post means: the event to log (a 409 is mostly benign: the
        platform already holds this score, or a newer one), its level, the note saying why,
        and the write of the post's outcome."""
        if exc.status == 409:
            if uncertain:
                note = "the platform already held this score (409 after a send whose answer was lost)"
                return "score already there", logging.INFO, note, partial(
                    self.store.post_done, post.id, clock.now(), note=note, claim=claim)
            if self._written(partial(self.store.newer_post_exists, post)):
                note = "the platform holds a newer score (409); a later post carries the current one"
                return "score superseded", logging.INFO, note, partial(
                    self.store.post_superseded, post.id, note, claim=claim)
            if post.conflicts + 1 >= MAX_CONFLICTS:
                note = (f"the platform answered 409 {MAX_CONFLICTS} times: it holds a score newer than ours (was the "
                        f"grade changed in the LMS, or is its clock ahead?); last answer: {exc}")
                return "score refused", logging.WARNING, note, partial(
                    self.store.post_failed, post.id, note, claim=claim)
            now = clock.now()
            note = f"409 conflict {post.conflicts + 1}: {exc}"
            return "score retried", logging.WARNING, f"{note}; sent again with a later timestamp", partial(
                self.store.post_retry, post.id, note, now + timedelta(seconds=1), payload=redated(post.payload, now),
                conflict=True, claim=claim)
        if exc.retryable:
            return "score retried", logging.WARNING, str(exc), partial(self._retry, post, claim, str(exc), tries)
        return "score refused", logging.WARNING, str(exc), partial(self.store.post_failed, post.id, str(exc),
                                                                   claim=claim)

    def _retry(self, post: Post, claim: str, error: str, tries: int) -> bool:
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** max(tries - 1, 0))
        return self.store.post_retry(post.id, error, clock.now() + timedelta(seconds=delay), claim=claim)

