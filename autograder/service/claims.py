"""Claims that expire and have an owner: what this process holds (an attempt it grades, a
score post it sends) is stamped in the database, and the stamp renewed while the process lives.

Several replicas share one database, so a row one of them works on is claimed: in the
transaction that takes it, a timestamp is set and an owner token (``claim_token``, fresh
for each claim) is written beside it. A process that dies stops renewing its claims: once
a claim is ``CLAIM_TTL_S`` old, any other process may take the row over, with a token of
its own. ``ClaimRenewer`` is the thread that keeps a live process's claims fresh, renewing
them every third of the time they last, so a long grading or a slow platform never loses
its claim.

The rule: renewing, finishing, retrying, releasing or failing a row acts only ``WHERE
claimed_by`` is this process's token (and the row is in the state the step expects). A
process that stalled past the TTL (a GC pause, a partition from the database, SIGSTOP)
and lost the row changes nothing: the step returns False (None for a result), the caller
logs that another replica took the row over and its outcome stands, and the new owner
finishes the row. A process holding no claim on a row acts only while nobody claims it.

A token names the replica that made it (``replica_claim_token``: host, pid, then the random
part), so the replica that takes a row over can log whose claim expired (``claim_owner``).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import threading
from collections.abc import Callable, Collection, Mapping

from sqlalchemy import ColumnElement, and_
from sqlalchemy.exc import SQLAlchemyError

from autograder.service.health import Outage

log = logging.getLogger(__name__)

CLAIM_TTL_S = 30.0  # a claim not renewed this long is its dead replica's: another may take the row


_RANDOM_PART = re.compile(r" [0-9a-f]{32}$")


def claim_token() -> str:
    """A fresh owner token for one claim (random: no two claims, in any replica, share one)."""
    return secrets.token_hex(16)


def replica() -> str:
    """This process as the logs name a replica: its host and pid (read at each call: a forked
    process is another replica)."""
    return f"{socket.gethostname()} (pid {os.getpid()})"


def replica_claim_token() -> str:
    """A fresh owner token that also names this replica, so whoever takes the row over after
    this process died can say whose claim it was (``claim_owner``)."""
    return f"{replica()} {claim_token()}"


def claim_owner(token: str | None) -> str | None:
    """The replica a ``replica_claim_token`` names; None for a token that names none (one from
    before tokens did, a migration's, a test's)."""
    if token is None or not _RANDOM_PART.search(token):
        return None
    return _RANDOM_PART.sub("", token) or None


def still_held(ids: ColumnElement[int], owners: ColumnElement[str | None],
               held: Mapping[int, str]) -> ColumnElement[bool]:
    """The rows of ``held`` (row id -> token) whose owner column still holds one of this
    process's tokens: what a ``ClaimRenewer``'s ``renew`` may refresh (tokens are random,
    so a row another replica took over carries none of them)."""
    return and_(ids.in_(list(held)), owners.in_(list(set(held.values()))))


class ClaimRenewer:
    """The rows this process holds and the token of each claim, renewed by ``renew`` every
    ``ttl_s / 3``: ``renew({row id: token})`` renews those still this process's and returns
    their ids; a row it leaves out was taken over, and is not renewed again (its token is
    kept until ``let_go``, so the step that ends the work still finds the claim lost)."""

    def __init__(self, renew: Callable[[Mapping[int, str]], Collection[int]], *, ttl_s: float = CLAIM_TTL_S,
                 name: str) -> None:
        self.ttl_s = ttl_s
        self._renew_rows = renew
        self._name = name
        self._held: dict[int, str] = {}
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._outage = Outage(f"{name}, renewing claims", max_s=ttl_s / 3)

    def hold(self, row_id: int, token: str) -> None:
        """This process now holds the row under ``token``: its claim is renewed until ``let_go``."""
        with self._lock:
            self._held[row_id] = token
            self._lost.discard(row_id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def let_go(self, row_id: int) -> None:
        """This process no longer works on the row: its claim is not renewed any more."""
        with self._lock:
            self._held.pop(row_id, None)
            self._lost.discard(row_id)

    def held(self) -> list[int]:
        """The rows this process works on (their claims renewed or, if lost, not yet let go)."""
        with self._lock:
            return sorted(self._held)

    def token(self, row_id: int) -> str | None:
        """The token of this process's claim on the row; None if it holds none."""
        with self._lock:
            return self._held.get(row_id)

    def close(self) -> None:
        """Stop renewing (what is still held then expires, as if this process had died)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        """Renew every ``ttl_s / 3``; after an error (the database away) sooner, 0.5 s doubling up
        to that, so the claims are renewed as soon as the database answers again (one log line
        per kind of error per minute)."""
        wait = self.ttl_s / 3
        while not self._stop.wait(wait):
            wait = self.ttl_s / 3
            with self._lock:
                due = {row: token for row, token in self._held.items() if row not in self._lost}
            if not due:
                continue
            try:
                renewed = set(self._renew_rows(due))
            except SQLAlchemyError as exc:  # the database away for a moment: tried again soon
                wait = min(self.ttl_s / 3, self._outage.failed(exc))
                continue
            self._outage.recovered()
            with self._lock:
                lost = {row for row in due if row not in renewed and self._held.get(row) == due[row]}
                self._lost |= lost
            for row in sorted(lost):
                log.warning("%s: the claim on row %s was taken over by another replica (this process did not "
                            "renew it for %g s); not renewed any more, and the other replica's outcome stands",
                            self._name, row, self.ttl_s)
