"""``GET /metrics``: the queue, the attempts and the score posts in Prometheus' text format,
read from the database, so two replicas on one database report the same; only for who
sends the data folder's metrics token. On SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from autograder.course import Course
from autograder.service.app import create_app
from autograder.service.policy import WeekPolicy
from autograder.service.settings import Settings
from autograder.service.store import Store
from autograder.service.tool import Tool
from tests.service.test_store import A, grade, notebook
from tests.service.web import free_port, serving

OPEN = WeekPolicy()


@contextmanager
def replica(data: Path, database: str | None, course: Course) -> Iterator[tuple[FastAPI, str]]:
    """One replica's web app on ``database`` (its own store and connections), served on
    loopback: the app and its URL."""
    settings = Settings(public_url="https://grader.example.edu", data=data, database=database)
    with Store(data, course, database=database) as store:
        app = create_app(settings, course=course, store=store, tool=Tool(settings), policy_for=lambda week: OPEN,
                         wake=lambda: None)
        with serving(app, free_port()) as url:
            yield app, url


def scrape(url: str, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(reply.text) for sample in family.samples}


def test_metrics_say_the_queue_attempts_and_posts_the_same_on_every_replica(
        tmp_path: Path, database_url: str | None, course: Course) -> None:
    data = tmp_path / "data"
    with ExitStack() as running:
        (app, first), (_, second) = (running.enter_context(replica(data, database_url, course)) for _ in range(2))
        check_the_same(app.state.services.store, first, second, (data / "keys" / "metrics.token").read_text())


def check_the_same(store: Store, first: str, second: str, token: str) -> None:
    """Attempts and posts made through ``store``; the replicas at ``first`` and ``second`` say them."""
    waited = timedelta(minutes=7)
    now = datetime.now(UTC)
    graded = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=now - waited)
    store.submit(context=A, user="bob", week="week01", content=notebook("2"), policy=OPEN, now=now - waited / 2)
    store.submit(context=A, user="cat", week="week01", content=notebook("3"), policy=OPEN, now=now)
    store.submit(context=A, user="ann", week="week02", content=notebook("4"), policy=OPEN, now=now)
    store.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
    grade(store, graded.id, 7)  # the score's post is enqueued: pending
    [post] = store.posts(context=A)
    store.post_failed(post.id, "the platform answered 400")
    before = datetime.now(UTC)
    seen, also = scrape(second, token), scrape(first, token)
    oldest = ("autograder_oldest_queued_attempt_age_seconds", ())
    assert abs(seen.pop(oldest) - also.pop(oldest)) < 5 and seen == also  # what one replica says, the other too
    seen[oldest] = scrape(second, token)[oldest]
    assert seen[("autograder_queued_attempts", (("week", "week01"),))] == 2
    assert seen[("autograder_queued_attempts", (("week", "week02"),))] == 1
    age = seen[("autograder_oldest_queued_attempt_age_seconds", ())]
    # the oldest waiting is bob's (ann's older one is graded), uploaded 3.5 minutes ago
    assert waited.total_seconds() / 2 <= age <= (datetime.now(UTC) - before + waited / 2).total_seconds() + 1
    assert {s: seen[("autograder_attempts", (("state", s),))] for s in ("queued", "grading", "graded", "failed")} \
        == {"queued": 3, "grading": 0, "graded": 1, "failed": 0}
    assert seen[("autograder_score_posts", (("state", "failed"),))] == 1
    assert seen[("autograder_score_posts", (("state", "pending"),))] == 0
    store.retry_post(post.id, context=A)
    assert scrape(second, token)[("autograder_score_posts", (("state", "pending"),))] == 1


def test_metrics_need_the_token(tmp_path: Path, course: Course) -> None:
    with replica(tmp_path / "data", None, course) as (_, url):
        token = (tmp_path / "data" / "keys" / "metrics.token").read_text()
        assert oct((tmp_path / "data" / "keys" / "metrics.token").stat().st_mode & 0o777) == "0o600"
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token},
                        {"Authorization": f"Bearer {token}x"}):
            reply = httpx.get(f"{url}/metrics", headers=headers)
            assert reply.status_code == 401 and "keys/metrics.token" in reply.text
            assert "autograder_" not in reply.text
        assert httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    # the token stays what the monitoring system was given across restarts
    assert Tool(Settings(public_url="https://grader.example.edu", data=tmp_path / "data")).metrics_token == token
