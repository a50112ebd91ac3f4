"""The service's rate limits, counted in its database so that every replica on one database
counts the same requests, and nothing grows with the number of addresses seen.

A limit of ``rate`` a minute is a token bucket that holds ``rate`` tokens and gets one back
every ``60 / rate`` s (a burst of ``rate`` requests goes through, then one every ``60 / rate``
s), kept as one number per key: the moment the bucket will be full again (the "theoretical
arrival time" of GCRA, the form of the token bucket network switches and Redis's
redis-cell use). A request is one upsert that moves that moment on by ``60 / rate`` s
unless it is already a whole minute ahead, and returns it (``INSERT ... ON CONFLICT DO
UPDATE ... WHERE ... RETURNING``, atomic on SQLite and PostgreSQL alike), so two replicas
counting at once never lose a request. A refused request changes nothing: a client polling
faster than the limit still gets ``rate`` requests a minute through. It is told the real time
until its bucket has a token again, in whole seconds rounded up (what ``Retry-After`` and the
page's "wait N s" say): a client that waits that long gets through.

A row whose moment has passed is a full bucket, the same as no row: each limiter deletes
its bucket's such rows once a minute, so the table holds the keys seen in the last two
minutes at most. A key is stored as its SHA-256, never as the address or user it stands for.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable

from sqlalchemy import case, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from autograder.database import Database
from autograder.database.tables import rate_limits

WINDOW_S = 60.0


class RateLimiter:
    """At most ``rate`` requests a minute per key in one bucket (``"user"``, ``"address"``...)."""

    def __init__(self, database: Database, bucket: str, rate: int, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self.bucket = bucket
        self.rate = rate
        self._clock = clock  # wall time: the replicas' clocks agree on it, their monotonic clocks do not
        self._interval = WINDOW_S / rate  # a token comes back this often
        self._swept = 0.0  # when this limiter last deleted its bucket's full buckets

    def allow(self, *key: str) -> int:
        """0 when a request for ``key`` may go on (it is counted), else the whole seconds until
        its bucket has a token again: rounded up, so that a client waiting them is let through,
        and so at least 1 (``Retry-After: 0`` would ask for the refused request again at once)."""
        now = self._clock()
        digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()
        full_at = rate_limits.c.full_at
        dialect = sqlite if self.database.dialect == "sqlite" else postgresql
        counted = dialect.insert(rate_limits).values(bucket=self.bucket, key=digest, full_at=now + self._interval)
        counted = counted.on_conflict_do_update(
            index_elements=["bucket", "key"],
            set_={"full_at": case((full_at > now, full_at), else_=now) + self._interval},
            where=full_at - now <= WINDOW_S - self._interval).returning(full_at)  # a token left: take it
        with self.database.write() as db:
            taken = db.execute(counted).first()
            if taken is None:
                held = float(db.execute(select(full_at).where(rate_limits.c.bucket == self.bucket,
                                                              rate_limits.c.key == digest)).scalar_one())
            if now - self._swept >= WINDOW_S:
                db.execute(delete(rate_limits).where(rate_limits.c.bucket == self.bucket, full_at < now))
                self._swept = now
        if taken is not None:
            return 0
        # to the millisecond first: the stored moment is a float near 2e9, whose last bits
        # would otherwise turn a wait of exactly 15 s into 16 (and a refusal is never 0)
        return max(1, math.ceil(round(held - now - (WINDOW_S - self._interval), 3)))
