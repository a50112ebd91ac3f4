"""The rate limits are counted in the service's database (issue 37): the replicas on one
database share a learner's budget, and counting many addresses leaves no more behind than
the last two minutes' rows. On SQLite and on PostgreSQL (the ``database_url`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from autograder.database.tables import rate_limits
from autograder.service.rate_limit import WINDOW_S, RateLimiter
from autograder.service.store import Store

START = 1_800_000_000.0  # a whole minute since the epoch, so a test's requests share one


class Clock:
    """Wall time a test sets: the limiter's minutes are the wall clock's."""

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
    clock.now += 15
    assert limiter.allow("moodle", "alice") == pytest.approx(WINDOW_S - 15)  # this minute is full
    assert limiter.allow("moodle", "bob") == 0.0  # per user
    assert limiter.allow("canvas", "alice") == 0.0  # another platform's user of the same id


def test_two_replicas_share_a_learners_upload_budget(replicas: tuple[Store, Store]) -> None:
    clock = Clock()
    first, second = (RateLimiter(store.database, "upload", 4, clock=clock) for store in replicas)
    # a load balancer sends a learner's uploads to one replica, then the other
    assert [limiter.allow("moodle", "s1") for limiter in (first, second, first, second)] == [0.0] * 4
    assert second.allow("moodle", "s1") > 0 and first.allow("moodle", "s1") > 0
    # the next minute still carries most of this one (a sliding minute), a minute later it is free again
    clock.now += WINDOW_S + 1
    assert first.allow("moodle", "s1") > 0
    clock.now += WINDOW_S
    assert second.allow("moodle", "s1") == 0.0


def test_many_addresses_leave_only_the_last_two_minutes_rows(replicas: tuple[Store, Store]) -> None:
    clock = Clock()
    database = replicas[0].database
    limiter = RateLimiter(database, "address", 1200, clock=clock)
    for minute in range(3):
        for n in range(60):
            assert limiter.allow(f"10.{minute}.0.{n}") == 0.0
        clock.now += WINDOW_S
    with database.read() as db:
        windows = db.execute(select(rate_limits.c.window, func.count()).group_by(rate_limits.c.window)
                             .order_by(rate_limits.c.window)).all()
        stored = db.execute(select(rate_limits.c.key)).scalars().all()
    first_minute = int(START // WINDOW_S)
    assert [tuple(row) for row in windows] == [(first_minute + 1, 60), (first_minute + 2, 60)]
    assert not any("10." in key for key in stored)  # digests, not the addresses
    assert not vars(limiter).keys() - {"database", "bucket", "rate", "_clock"}  # nothing kept per key in memory
