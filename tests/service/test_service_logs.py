"""What ``autograder serve --log-format json`` writes while a learner's upload is graded and its
score posted (issue 38): one JSON object per line, an event for each step with the learner's
and the course's ids, the database's URL without its password, and no secret anywhere (the
password, the registration code, the session cookie, the form's CSRF token). And the events
an operator reads after trouble: which replica's attempt or score post another took over,
and a 409 from the platform told apart from a real refusal."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from autograder.service.claims import replica, replica_claim_token
from autograder.service.outbox import Outbox
from autograder.service.policy import WeekPolicy
from autograder.service.store import Store
from tests.helpers import PostgresServer
from tests.service.lms import register_and_add_week
from tests.service.score_endpoint import HttpSender, ScoreEndpoint
from tests.service.test_outbox import after_the_claim_expired, graded
from tests.service.test_replicas import CORRECT, replicas_behind_a_proxy
from tests.service.web import forms, wait_until

PASSWORD = "pw-not-for-logs-4711"
CONTEXT = "https://moodle.example|3|course-1"
TTL_S = 1.0  # the claims' lifetime here: a dead replica's claim expires this soon


@pytest.fixture
def endpoint() -> Iterator[ScoreEndpoint]:
    server = ScoreEndpoint()
    yield server
    server.close()


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == name]


@pytest.mark.sandbox
def test_serve_logs_one_json_line_per_event_of_an_upload_and_no_secret(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database().replace(f"{PostgresServer.USER}@", f"{PostgresServer.USER}:{PASSWORD}@")
    assert PASSWORD in url  # the server trusts local connections: the password is only there to be hidden
    with replicas_behind_a_proxy(tmp_path, url, "--log-format", "json", count=1) as replicas:
        lms = replicas.lms
        register_and_add_week(lms, registration_url=replicas.registration_url)
        browser, page = lms.launch("s-log")
        csrf = next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]
        cookies = [cookie.value for cookie in browser.client.cookies.jar]
        queued = browser.submit(page, "upload", files={"notebook": ("week01.ipynb", CORRECT,
                                                                    "application/x-ipynb+json")})
        assert queued.status_code == 200 and "/attempt/" in str(queued.url), queued.text
        wait_until(lambda: lms.platform.scores, timeout=180)
        browser.close()
    [log] = replicas.errors
    assert replicas.processes[0].returncode == 0, log
    lines = [json.loads(line) for line in log.splitlines()]  # every line one JSON object
    events = {line["event"]: line for line in lines}
    assert {"sandbox", "database", "listening", "queued", "graded", "score posted", "shutdown"} <= set(events), lines
    assert events["database"]["url"].startswith("postgresql+psycopg://autograder:***@")
    context = events["queued"]["course"]
    for name in ("queued", "graded", "score posted"):
        assert events[name]["learner"] == "s-log" and events[name]["course"] == context, events[name]
    assert events["graded"]["attempt"] == events["queued"]["attempt"] and events["graded"]["score"] > 0
    assert events["score posted"]["score"] == events["graded"]["score"]
    secrets = [PASSWORD, replicas.registration_url.rsplit("/", 1)[-1], csrf, *cookies]
    assert all(secret and secret not in log for secret in secrets)


def _replica_that_dies_holding_work(database: str, data: Path) -> None:
    """A replica that claims the queued attempt and the due score post, then dies (no
    release, no clean-up: its claims stay in the database until they expire)."""
    store = Store(data, database=database, claim_ttl_s=TTL_S)
    assert store.claim() is not None
    assert store.claim_due_posts(datetime.now(UTC), ttl_s=TTL_S, owner=replica_claim_token())
    os._exit(0)


@pytest.mark.slow  # the dead replica's claims expire first (TTL_S): 2 s on a loaded machine
def test_the_replica_taking_over_a_dead_replicas_attempt_and_score_post_logs_each_naming_it(
        tmp_path: Path, endpoint: ScoreEndpoint, caplog: pytest.LogCaptureFixture) -> None:
    database = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    with Store(tmp_path / "b", database=database, claim_ttl_s=TTL_S) as b:
        b.set_lineitem(CONTEXT, "week01", endpoint.lineitem)
        graded(b, "ann", 8)  # a score post due
        queued = b.submit(context=CONTEXT, user="bob", week="week01", content=b'{"x": 1}', policy=WeekPolicy(),
                          now=datetime.now(UTC))
        dying = multiprocessing.get_context("fork").Process(target=_replica_that_dies_holding_work,
                                                             args=(database, tmp_path / "a"))
        dying.start()
        dying.join(60)
        assert dying.exitcode == 0
        dead = replica().replace(f"(pid {os.getpid()})", f"(pid {dying.pid})")
        with caplog.at_level(logging.INFO, logger="autograder.events"):
            assert b.requeue_interrupted() == 0  # its claims live a while yet
            time.sleep(TTL_S + 0.2)
            assert b.requeue_interrupted() == 1
            assert Outbox(b, HttpSender()).send_due() == 1
        [post] = b.posts(context=CONTEXT)
    attempt, sent = events(caplog, "taken over")
    assert attempt.levelno == sent.levelno == logging.WARNING
    assert attempt.fields == {"attempt": queued.id, "week": "week01", "learner": "bob", "course": CONTEXT,
                              "from_replica": dead}, attempt.fields
    assert sent.fields == {"post": post.id, "week": "week01", "learner": "ann", "course": CONTEXT, "try": 2,
                           "from_replica": dead}, sent.fields
    assert all(dead in record.getMessage() for record in (attempt, sent))
    assert post.state == "posted" and [e.fields["post"] for e in events(caplog, "score posted")] == [post.id]


def test_a_409_that_means_nothing_is_wrong_is_logged_as_what_it_is_and_a_refusal_as_refused(
        tmp_path: Path, endpoint: ScoreEndpoint, caplog: pytest.LogCaptureFixture) -> None:
    """Three answers of the platform: a 409 to a post sent again after a send cut off (the
    platform has it: already there), a 409 to a post a newer one replaces (superseded), both
    at info; a 404 (the post fails for good: refused, a warning)."""
    with Store(tmp_path / "data") as store, caplog.at_level(logging.INFO, logger="autograder.events"):
        store.set_lineitem(CONTEXT, "week01", endpoint.lineitem)
        outbox = Outbox(store, HttpSender())

        graded(store, "ann", 8)
        [cut_off] = store.claim_due_posts(datetime.now(UTC))  # a send began ...
        HttpSender().post_score(cut_off.lineitem, cut_off.payload)  # ... arrived, and its process died
        outbox.send_due(after_the_claim_expired())

        endpoint.state.stored["bob"] = datetime.now().timestamp() + 3600  # the LMS holds a newer grade
        graded(store, "bob", 5)
        [older] = store.claim_due_posts(datetime.now(UTC), owner="sending")
        graded(store, "bob", 9)  # while the older post is on its way (so it is not superseded at once)
        assert store.post_retry(older.id, "the platform answered 503", datetime.now(UTC), claim="sending")
        outbox.send_due()

        endpoint.state.fail_next = [404]
        graded(store, "cat", 8)
        outbox.send_due()
        outcomes = {p.id: p.state for p in store.posts(context=CONTEXT)}
        [cat] = [p for p in store.posts(context=CONTEXT) if p.user == "cat"]

    def said(name: str) -> list[tuple[Any, int, int | None]]:
        return [(r.fields["post"], r.levelno, r.fields.get("status")) for r in events(caplog, name)]

    assert said("score already there") == [(cut_off.id, logging.INFO, 409)]
    assert said("score superseded") == [(older.id, logging.INFO, 409)]
    assert said("score refused") == [(cat.id, logging.WARNING, 404)]
    assert (outcomes[cut_off.id], outcomes[older.id], outcomes[cat.id]) == ("posted", "superseded", "failed")
