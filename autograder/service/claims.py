"""Claims that expire: what this process holds (an attempt it grades, a score post it sends)
is stamped in the database, and the stamp renewed while the process lives.

Several replicas share one database, so a row one of them works on is claimed (a
timestamp column set in the transaction that takes it). A process that dies stops renewing
its claims: once a claim is ``CLAIM_TTL_S`` old, any other process may take the row over.
``ClaimRenewer`` is the thread that keeps a live process's claims fresh, renewing them every
third of the time they last, so a long grading or a slow platform never loses its claim.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

log = logging.getLogger(__name__)

CLAIM_TTL_S = 30.0  # a claim not renewed this long is its dead replica's: another may take the row


class ClaimRenewer:
    """The ids of the rows this process holds, renewed by ``renew(ids)`` every ``ttl_s / 3``."""

    def __init__(self, renew: Callable[[list[int]], None], *, ttl_s: float = CLAIM_TTL_S, name: str) -> None:
        self.ttl_s = ttl_s
        self._renew_rows = renew
        self._name = name
        self._held: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, row_id: int) -> None:
        """This process now holds the row: its claim is renewed until ``let_go``."""
        with self._lock:
            self._held.add(row_id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def let_go(self, row_id: int) -> None:
        """This process no longer works on the row: its claim is not renewed any more."""
        with self._lock:
            self._held.discard(row_id)

    def held(self) -> list[int]:
        with self._lock:
            return sorted(self._held)

    def close(self) -> None:
        """Stop renewing (what is still held then expires, as if this process had died)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            held = self.held()
            if not held:
                continue
            try:
                self._renew_rows(held)
            except SQLAlchemyError:  # the database away for a moment: the next round tries again
                log.warning("could not renew the claims on %s", held, exc_info=True)
