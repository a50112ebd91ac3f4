"""The service's rate limits, counted in its database so that every replica on one database
counts the same requests, and nothing grows with the number of addresses seen.

A limit of ``rate`` a minute is a sliding window over two minute-long counters (the way
Cloudflare's and nginx's limiters approximate one): a request is let through when this
minute's count plus the last minute's, weighted by how much of the last minute is still
inside the sliding minute, is at most ``rate``. Each request is one upsert that adds 1 to
its minute's row and returns the count (``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``,
atomic on SQLite and PostgreSQL alike), so two replicas counting at once never lose one.
A refused request counts too: a client that keeps knocking keeps waiting.

Rows older than the last minute are deleted whenever a key starts a new minute, so the
table holds at most two minutes of keys. A key is stored as its SHA-256, never as the
address or the user it stands for.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from autograder.database import Database
from autograder.database.tables import rate_limits

WINDOW_S = 60


class RateLimiter:
    """At most ``rate`` requests a minute per key in one bucket (``"user"``, ``"address"``...)."""

    def __init__(self, database: Database, bucket: str, rate: int, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self.bucket = bucket
        self.rate = rate
        self._clock = clock  # wall time: the replicas' clocks agree on the minute, monotonic ones do not

    def allow(self, *key: str) -> float:
        """0 when a request for ``key`` may go on, else the seconds to wait; counts the request."""
        now = self._clock()
        window = int(now // WINDOW_S)
        digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()
        dialect = sqlite if self.database.dialect == "sqlite" else postgresql
        insert = dialect.insert(rate_limits).values(bucket=self.bucket, key=digest, window=window, count=1)
        counted = insert.on_conflict_do_update(index_elements=["bucket", "key", "window"],
                                               set_={"count": rate_limits.c.count + 1}).returning(rate_limits.c.count)
        with self.database.write() as db:
            count = db.execute(counted).scalar_one()
            if count == 1:  # this key's first request this minute: the minutes before the last are done with
                db.execute(delete(rate_limits).where(rate_limits.c.window < window - 1))
            last = db.execute(select(rate_limits.c.count).where(
                rate_limits.c.bucket == self.bucket, rate_limits.c.key == digest,
                rate_limits.c.window == window - 1)).scalar() or 0
        return self._wait(count, last, now - window * WINDOW_S)

    def _wait(self, count: int, last: int, elapsed: float) -> float:
        """How long until the sliding minute holds fewer than ``rate`` requests (0: it does now)."""
        if count + last * (WINDOW_S - elapsed) / WINDOW_S <= self.rate:
            return 0.0
        if count >= self.rate or not last:  # this minute alone is full: the next one
            return WINDOW_S - elapsed
        # the last minute's share shrinks as the sliding minute moves past it
        return max(WINDOW_S * (1 - (self.rate - count) / last) - elapsed, 1.0)
