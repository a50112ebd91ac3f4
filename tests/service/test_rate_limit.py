"""The rate limits are counted in the service's database (issue 37): the replicas on one
database share a learner's budget, and counting many addresses leaves no more behind than
the keys of the last minutes. On SQLite and on PostgreSQL (the ``database_url`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from autograder.database.tables import rate_limits
from autograder.service.rate_limit import WINDOW_S, RateLimiter
from autograder.service.store import Store

START = 1_800_000_000.0


class Clock:
    """Wall time a test sets (the limiter's is the wall clock, which the replicas share)."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def replicas(tmp_path: Path, database_url: str | None) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database, as two replicas of the service open it."""
    with Store(tmp_path / "data", database=database_url) as first, \
            Store(tmp_path / "data", database=database_url) as second:
        yield first, second


def test_a_burst_goes_through_then_the_limiter_says_how_long_to_wait(replicas: tuple[Store, Store]) -> None:
    clock = Clock()
    limiter = RateLimiter(replicas[0].database, "user", 3, clock=clock)
    assert [limiter.allow("moodle", "alice") for _ in range(3)] == [0.0, 0.0, 0.0]
    clock.now += 5
    assert limiter.allow("moodle", "alice") == pytest.approx(15)  # a token comes back every 20 s at 3 a minute
    assert limiter.allow("moodle", "bob") == 0.0  # per user
    assert limiter.allow("canvas", "alice") == 0.0  # another platform's user of the same id
    clock.now += 15
    assert limiter.allow("moodle", "alice") == 0.0  # refused requests took no token
    assert limiter.allow("moodle", "alice") > 0


def test_two_replicas_share_a_learners_upload_budget(replicas: tuple[Store, Store]) -> None:
    clock = Clock()
    first, second = (RateLimiter(store.database, "upload", 4, clock=clock) for store in replicas)
    # a load balancer sends a learner's uploads to one replica, then the other
    assert [limiter.allow("moodle", "s1") for limiter in (first, second, first, second)] == [0.0] * 4
    assert second.allow("moodle", "s1") == pytest.approx(WINDOW_S / 4)
    assert first.allow("moodle", "s1") == pytest.approx(WINDOW_S / 4)
    clock.now += WINDOW_S / 4  # one upload's worth later, one more upload, on either replica
    assert second.allow("moodle", "s1") == 0.0 and first.allow("moodle", "s1") > 0


def test_many_addresses_leave_only_the_last_minutes_rows(replicas: tuple[Store, Store]) -> None:
    clock = Clock()
    database = replicas[0].database
    limiter = RateLimiter(database, "address", 1200, clock=clock)
    for minute in range(3):
        for n in range(30):
            assert limiter.allow(f"10.{minute}.0.{n}") == 0.0
        clock.now += WINDOW_S
    assert limiter.allow("10.9.9.9") == 0.0  # a minute on: the last minute's addresses have full buckets again
    with database.read() as db:
        stored = db.execute(select(rate_limits.c.key)).scalars().all()
    assert len(stored) == 1  # only the address seen since
    assert not any("10." in key for key in stored)  # digests, not the addresses
    # and nothing per key in the process
    assert not [value for value in vars(limiter).values() if isinstance(value, dict | list | set)]
