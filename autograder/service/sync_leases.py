"""Which replica runs a scheduled Moodle sync, and what its last run did: one row per synced
assignment in the service's database (``service_syncs``), shared by every replica (issue 27).

A replica runs an entry only while it holds the row's lease. ``take`` sets ``owner`` (the
replica's host and pid and a token of this claim, ``claims.replica_claim_token``) and
``claimed_at`` in one UPDATE whose WHERE says the lease is free (or expired) and the run
due (``next_run`` passed), so of several replicas looking at once exactly one gets it:
PostgreSQL checks the WHERE again on a row another transaction just changed, and SQLite's
write transaction holds the whole file. While the run lasts, ``claims.ClaimRenewer``
renews ``claimed_at`` every third of the claims' lifetime, as for attempts and score
posts. ``finish`` records the outcome, when the run ended and when the next is due, and
frees the lease, in one UPDATE that applies only while this process still holds it. A
replica that dies stops renewing: once its lease is ``ttl_s`` old, another replica takes
the entry at its next turn (a sync is built to be cut anywhere: ``moodle_ws.sync_state``).
As the schedule is in the row, a replica starting after another's run waits for the
``next_run`` recorded there instead of running again on its own clock, and every replica's
instructor page shows the same status.

The row is keyed by the Moodle site and assignment, what a run pushes to (as the sync's own
state, ``moodle_sync``, is): two replicas never push to one assignment at once.

Why a row rather than ``Database.lock`` (a PostgreSQL advisory lock): that lock lasts as
long as its transaction, and a run lasts minutes of grading, so each run would hold a
transaction open that long (idle in transaction, holding back VACUUM) and pin one of the
pool's connections for nothing but the lock. A session-level advisory lock is tied to its
connection instead: a connection the server drops (a restart, a network cut, the pool's
pre-ping replacing it) takes the lock with it without a word while the run goes on, and a
second replica could start the same run. And a lock holds no schedule or status, which the
other replicas need anyway. The row holds all of it, expires on its own when its replica
dies, and is the same code on SQLite (where one service runs alone).

Times are the replicas' clocks, as for every claim: keep them in step (NTP).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, select, update

from autograder.database import Database, clock
from autograder.database.tables import service_syncs
from autograder.service.claims import CLAIM_TTL_S, ClaimRenewer, replica_claim_token, still_held


@dataclass(frozen=True)
class SyncRecord:
    """One entry's row as read: who runs it now (``owner``, None: nobody) and its last run."""

    owner: str | None
    claimed_at: datetime | None  # when the owner last renewed its lease
    started: datetime | None
    finished: datetime | None
    next_run: datetime | None  # None: never run
    succeeded: datetime | None
    report: dict[str, Any] | None  # the last run's counts; None before the first, or when it failed
    error: str | None

    def expires(self, ttl_s: float) -> datetime | None:
        """When the owner's lease runs out unless it is renewed (None: nobody holds it)."""
        if self.owner is None:
            return None
        return None if self.claimed_at is None else self.claimed_at + timedelta(seconds=ttl_s)

    def live(self, ttl_s: float, now: datetime) -> bool:
        """Whether a replica holds the lease now (a lease not renewed for ``ttl_s`` is its dead replica's)."""
        expires = self.expires(ttl_s)
        return self.owner is not None and expires is not None and expires > now

    def due(self, ttl_s: float, now: datetime) -> datetime:
        """When a replica should next try to take the run: at ``next_run`` (now if never run),
        not before a live lease would expire (looked at again then: a live one is renewed)."""
        planned = self.next_run or now
        expires = self.expires(ttl_s)
        if expires is None or not self.live(ttl_s, now):
            return planned
        return expires if planned <= now else min(planned, expires)


class SyncLeases:
    """The ``service_syncs`` rows as one replica uses them; ``close`` stops renewing its leases."""

    def __init__(self, database: Database, *, ttl_s: float = CLAIM_TTL_S) -> None:
        self.database = database
        self.ttl_s = ttl_s
        self._renewer = ClaimRenewer(self._renew, ttl_s=ttl_s, name="autograder-sync-leases")

    def close(self) -> None:
        """Stop renewing (a lease still held then expires, as if this process had died)."""
        self._renewer.close()

    def register(self, site: str, assignment: int) -> int:
        """The row of ``assignment`` on ``site`` (made if no replica made it yet): its id."""
        key = {"site": site, "assignment": assignment}
        with self.database.write() as db:
            db.execute(self.database.upsert(service_syncs, key, keys=("site", "assignment"), update=()))
            row_id: int = db.execute(select(service_syncs.c.id).where(
                service_syncs.c.site == site, service_syncs.c.assignment == assignment)).scalar_one()
        return row_id

    def records(self, row_ids: list[int]) -> dict[int, SyncRecord]:
        """The rows ``row_ids`` as they are now, by id (one snapshot)."""
        with self.database.read() as db:
            rows = db.execute(select(service_syncs).where(service_syncs.c.id.in_(row_ids))).all()
        return {row.id: _record(row) for row in rows}

    def take(self, row_id: int, *, now: datetime, next_run: datetime) -> bool:
        """Take the lease of a run due at ``now``, if it is free or its holder's expired; True
        when this process got it (then renewed until ``finish``). ``next_run`` is when the
        following run is due if this one ends sooner."""
        expired = now - timedelta(seconds=self.ttl_s)
        token = replica_claim_token()  # names this replica, for the instructor's page and the logs
        with self.database.write() as db:
            taken = db.execute(update(service_syncs).where(
                service_syncs.c.id == row_id,
                service_syncs.c.owner.is_(None) | service_syncs.c.claimed_at.is_(None)
                | (service_syncs.c.claimed_at < expired),
                service_syncs.c.next_run.is_(None) | (service_syncs.c.next_run <= now),
            ).values(owner=token, claimed_at=now, started=now, next_run=next_run)).rowcount
        if taken:
            self._renewer.hold(row_id, token)
        return bool(taken)

    def finish(self, row_id: int, *, now: datetime, next_run: datetime, report: dict[str, Any] | None,
               error: str | None) -> bool:
        """Record a run this process took (``report`` None: it failed, ``error`` says why) with the
        next one due at ``next_run``, and free the lease; False if the lease was no longer ours
        (another replica took it over after our renewals stopped): nothing is written then."""
        token = self._renewer.token(row_id)
        self._renewer.let_go(row_id)
        if token is None:
            return False
        values: dict[str, Any] = {"owner": None, "claimed_at": None, "finished": now, "next_run": next_run,
                                  "error": error, "report": report}
        if report is not None:
            values["succeeded"] = now
        with self.database.write() as db:
            return bool(db.execute(update(service_syncs).where(
                service_syncs.c.id == row_id, service_syncs.c.owner == token).values(**values)).rowcount)

    def _renew(self, held: Mapping[int, str]) -> Collection[int]:
        """Renew the leases of ``held`` (row id -> token) still this process's; their ids."""
        with self.database.write() as db:
            return db.execute(update(service_syncs).where(
                still_held(service_syncs.c.id, service_syncs.c.owner, held))
                .values(claimed_at=clock.now()).returning(service_syncs.c.id)).scalars().all()


def _record(row: Row[Any]) -> SyncRecord:
    return SyncRecord(owner=row.owner, claimed_at=row.claimed_at, started=row.started, finished=row.finished,
                      next_run=row.next_run, succeeded=row.succeeded, report=row.report, error=row.error)
