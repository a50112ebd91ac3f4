"""The rate limits are counted in the service's database (issue 37): the replicas on one
database share a learner's budget, and counting many addresses leaves no more behind than
the keys of the last minutes. On SQLite and on PostgreSQL (the ``database_url`` fixture).
A refusal's ``Retry-After`` and its page say the real wait until the bucket has a token again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from autograder.course import Course
from autograder.database.tables import rate_limits
from autograder.service.app import create_app
from autograder.service.policy import policy_for
from autograder.service.rate_limit import WINDOW_S, RateLimiter
from autograder.service.settings import Settings
from autograder.service.store import Store
from autograder.service.tool import Tool
from tests.service.web import free_port, serving

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


def test_a_refusal_says_the_real_wait_until_a_token_is_back(tmp_path: Path, course: Course) -> None:
    """The 429's ``Retry-After`` and its page's "wait N s": the time until the bucket refills,
    rounded up (a client waiting that long gets through), not a fixed minute."""
    clock = Clock()
    settings = Settings(public_url="https://127.0.0.1", data=tmp_path / "service")
    with Store(settings.data) as store:
        app = create_app(settings, course=course, store=store, tool=Tool(settings),
                         policy_for=lambda week: policy_for(course.root, week), wake=lambda: None)
        parts = app.state.services  # the LTI routes' limit, per address, at 3 a minute on the test's clock
        app.state.services = replace(parts, limits=replace(
            parts.limits, per_address=RateLimiter(store.database, "address", 3, clock=clock)))
        with serving(app, free_port()) as url, httpx.Client(base_url=url) as client:
            assert [client.get("/lti/login").status_code for _ in range(3)].count(429) == 0
            clock.now += 5.5  # a token comes back every 20 s: 14.5 s to wait
            refused = client.get("/lti/login")
            clock.now += 14.5
            assert client.get("/lti/login").status_code != 429  # waiting that long was enough
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "15"
    assert "wait 15 s and try again" in refused.text
