"""Two replicas' outboxes on one database (SQLite and PostgreSQL, the ``database_url``
fixture) against one loopback scores endpoint: each post is claimed before it is sent, so
each score arrives exactly once, and each student's in order, while grades keep coming."""

from __future__ import annotations

from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import pytest

from autograder.service.outbox import Outbox
from autograder.service.store import Store
from tests.service.score_endpoint import HttpSender, ScoreEndpoint
from tests.service.test_outbox import CONTEXT, graded, until

pytestmark = pytest.mark.slow

USERS = ["ann", "bob", "cat", "dan", "eve", "fay"]
ROUNDS = 4


def test_two_outboxes_send_each_post_once_and_each_students_in_order(tmp_path: Path, database_url: str | None):
    database = database_url or f"sqlite:///{tmp_path / 'shared.sqlite'}"
    endpoint = ScoreEndpoint()
    endpoint.state.delay_s = 0.03  # sends overlap: each replica has posts in flight while the other claims
    try:
        with ExitStack() as stack:
            replicas = [stack.enter_context(Store(tmp_path / name, database=database)) for name in ("a", "b")]
            replicas[0].set_lineitem(CONTEXT, "week01", endpoint.lineitem)
            for store in replicas:
                stack.enter_context(Outbox(store, HttpSender(), poll_s=0.01, senders=3))
            for score in range(ROUNDS):  # grades recorded on either replica while both send
                for i, user in enumerate(USERS):
                    graded(replicas[(i + score) % 2], user, score + 1)
            until(lambda: all(p.state != "pending" for p in replicas[0].posts(context=CONTEXT)), timeout_s=60)
        posts = replicas[0].posts(context=CONTEXT)
    finally:
        endpoint.close()
    sent = [p for p in reversed(posts) if p.state == "posted"]  # oldest first
    assert {p.state for p in posts} <= {"posted", "superseded"}
    assert set(endpoint.state.answers) == {200}  # a post sent twice, or out of order, would get a 409
    received: dict[str, list[str]] = defaultdict(list)
    for score in endpoint.state.accepted:
        received[score.user].append(score.timestamp)
    expected: dict[str, list[str]] = defaultdict(list)
    for post in sent:
        expected[post.user].append(post.payload["timestamp"])
    assert received == expected  # each posted post received exactly once, each student's in order
    assert all(endpoint.state.grades[user] == ROUNDS + 5 for user in USERS)  # the last score is the LMS's
