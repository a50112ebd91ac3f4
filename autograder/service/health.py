"""How one replica rides out its database going away, and what it says about itself.

A PostgreSQL restart, a minor-version update or a failover cuts every connection for a few
seconds; a network cut can last longer. Nothing the service holds is lost then (an upload
is stored before its attempt is, a result is kept until it is recorded, a claim not
renewed expires and goes to another replica), so every background loop (the grading
runner, the outbox, the claim renewers, the Moodle syncs) treats such an error as a pause:
``Outage`` gives the loop its wait, 0.5 s doubling to 10 s, and logs one line per kind of
error per minute (not a traceback per try), then one line when the database answers again.

``Health`` is the replica's own state for ``/healthz`` and ``/readyz``: when its grading
loop last went round (a loop that died or hangs stops beating) and a trivial query on its
database within a short timeout. Neither says anything private: status words and booleans.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from autograder.database import Database

log = logging.getLogger(__name__)

FIRST_WAIT_S = 0.5  # a loop's first wait after a database error; doubled after each error in a row
MAX_WAIT_S = 10.0  # ... up to this: a database back after a 30 s stop is used within 10 s
LOG_EVERY_S = 60.0  # one log line per kind of error per this long, per loop (and for the web's requests)
BEAT_STALE_S = 30.0  # a grading loop that has not gone round for this long is not ready (it goes round every 1 s)
PROBE_TIMEOUT_S = 2.0  # /readyz's query on the database: longer is not ready


def database_away(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be used just now (a restart, a failover, a network
    cut, a full pool, SQLite's file locked): an error that waiting cures, as against one in a query."""
    if isinstance(exc, (OperationalError, InterfaceError, PoolTimeout)):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def describe(exc: BaseException) -> str:
    """One line saying what went wrong, without the statement or its parameters: the driver's
    error class and the first line of its message (``the database system is shutting down``)."""
    cause = getattr(exc, "orig", None) or exc
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


class LogLimit:
    """Says whether a line of a kind may be logged now: one per kind per ``every_s`` (thread-safe).
    The count of lines held back since the last one goes with the next."""

    def __init__(self, every_s: float = LOG_EVERY_S) -> None:
        self.every_s = every_s
        self._last: dict[str, tuple[float, int]] = {}  # kind -> (when logged, lines held back since)
        self._lock = threading.Lock()

    def allow(self, kind: str) -> int | None:
        """None: hold this line back; else log it (the number is how many were held back before it)."""
        now = time.monotonic()
        with self._lock:
            last, held = self._last.get(kind, (-self.every_s, 0))
            if now - last < self.every_s:
                self._last[kind] = (last, held + 1)
                return None
            self._last[kind] = (now, 0)
            return held


class Outage:
    """One loop's view of its database: ``failed`` after an error (logs a line if due, returns the
    wait before the next try), ``recovered`` after a success (logs once that the database is back)."""

    def __init__(self, what: str, *, first_s: float = FIRST_WAIT_S, max_s: float = MAX_WAIT_S,
                 every_s: float = LOG_EVERY_S) -> None:
        self.what = what
        self.first_s, self.max_s = first_s, max_s
        self._limit = LogLimit(every_s)
        self._wait = 0.0
        self._since: float | None = None  # monotonic time of the first error in a row
        self._errors = 0
        self._retry_at = 0.0

    @property
    def away(self) -> bool:
        """Whether the last try failed (the database has not answered since)."""
        return self._since is not None

    def due(self) -> bool:
        """Whether the loop may try the database now (its wait after the last error is over)."""
        return time.monotonic() >= self._retry_at

    def failed(self, exc: BaseException) -> float:
        """Note an error; the seconds to wait before trying again (0.5 s doubling to 10 s). A
        database that is away is logged as one line; anything else with its traceback (a bug
        to report), both at most once per kind per minute."""
        now = time.monotonic()
        if self._since is None:
            self._since = now
        self._errors += 1
        self._wait = min(self.max_s, self._wait * 2 if self._wait else self.first_s)
        self._retry_at = now + self._wait
        away = database_away(exc)
        kind = describe(exc) if away else type(exc).__name__
        held = self._limit.allow(kind)
        if held is not None:
            more = f" ({held} more since the last such line)" if held else ""
            if away:
                log.warning("%s: the database is unreachable (%s); waiting %.1f s and trying again%s", self.what,
                            kind, self._wait, more)
            else:
                log.error("%s: unexpected error; waiting %.1f s and trying again%s", self.what, self._wait, more,
                          exc_info=exc)
        return self._wait

    def recovered(self) -> None:
        """The database answered: the next error waits ``first_s`` again."""
        if self._since is not None:
            log.warning("%s: the database answers again after %.1f s (%d failed tries)", self.what,
                        time.monotonic() - self._since, self._errors)
        self._since, self._errors, self._wait, self._retry_at = None, 0, 0.0, 0.0


class Health:
    """What ``/readyz`` reports of one replica: its grading loop's last beat and its database."""

    def __init__(self, database: Database, *, stale_s: float = BEAT_STALE_S,
                 probe_timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.database = database
        self.stale_s = stale_s
        self.probe_timeout_s = probe_timeout_s
        self._beat: float | None = None
        self._probe = ThreadPoolExecutor(1, thread_name_prefix="autograder-readyz")

    def beat(self) -> None:
        """The grading loop went round (called by the runner at every turn)."""
        self._beat = time.monotonic()

    def grading_alive(self) -> bool:
        """Whether the grading loop went round within ``stale_s``."""
        return self._beat is not None and time.monotonic() - self._beat < self.stale_s

    def database_answers(self) -> bool:
        """Whether ``SELECT 1`` comes back within ``probe_timeout_s`` (a hung connection does not
        hold the probe up: the caller stops waiting, the query ends in its own thread)."""
        try:
            return self._probe.submit(self._select_one).result(timeout=self.probe_timeout_s)
        except FutureTimeout:
            return False

    def _select_one(self) -> bool:
        try:
            with self.database.read() as db:
                db.execute(text("SELECT 1"))
        except Exception:  # noqa: BLE001 - any error means not ready; /readyz says no more than that
            return False
        return True

    def close(self) -> None:
        self._probe.shutdown(wait=False, cancel_futures=True)
