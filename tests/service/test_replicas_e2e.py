"""Two ``autograder serve`` replicas on one PostgreSQL database and one data folder, behind
a round-robin load balancer that keeps no sessions (``tests.helpers.RoundRobinProxy``),
driven by the stand-in LMS (issue 27): with no connection kept alive, the registration, the
deep link, a student's login, launch and upload go to one replica and the next, so each step
finds what the one before it stored on the other replica (login states, sessions); the
feedback page is read through each replica, and the score reaches the LMS exactly once though
both replicas' outboxes send."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import PostgresServer
from tests.service.test_replicas import replicas_behind_a_proxy, upload_through_the_lms
from tests.service.web import wait_until

pytestmark = pytest.mark.sandbox


def test_two_replicas_behind_a_load_balancer_grade_show_feedback_and_post_the_score_once(
        tmp_path: Path, postgres: PostgresServer) -> None:
    with replicas_behind_a_proxy(tmp_path, postgres.new_database()) as replicas:
        proxy, state = replicas.proxy, replicas.lms.platform
        # no connection kept alive: each request of the registration, the deep link, the login, the
        # launch and the upload reaches the other replica than the one before it (no sticky sessions)
        replicas.lms.keep_alive, at_start = False, list(proxy.served)
        browser, attempt = upload_through_the_lms(replicas.lms, replicas.registration_url, "s-both")
        assert all(after - then >= 4 for after, then in zip(proxy.served, at_start, strict=True)), proxy.served
        pages, before = [], list(proxy.served)
        for _ in replicas.processes:  # a fresh connection each: the proxy hands them to one replica, then the other
            with httpx.Client(verify=replicas.verify, cookies=browser.client.cookies, timeout=30) as client:
                pages.append(wait_until(lambda c=client: (s := c.get(f"{attempt}/state").json())["state"]
                                        in ("graded", "failed") and s))
                feedback = client.get(f"{attempt}/feedback")
                assert feedback.status_code == 200 and "The perceptron" in feedback.text
        browser.close()
        assert all(after > then for after, then in zip(proxy.served, before, strict=True)), proxy.served
        assert [p["state"] for p in pages] == ["graded", "graded"] and pages[0]["score"] == pages[1]["score"]
        score = wait_until(lambda: next((s for s in state.scores if s["userId"] == "s-both"), None))
        time.sleep(3)  # both outboxes poll twice a second: a second send would have come by now
        assert [s["userId"] for s in state.scores].count("s-both") == 1
        assert not [b for _, b in state.refused_scores if b.get("userId") == "s-both"]
        assert score["scoreGiven"] == pages[0]["score"]
    assert all(replica.returncode == 0 for replica in replicas.processes), replicas.errors
    assert all(n >= 2 for n in proxy.served), proxy.served  # each replica took connections
