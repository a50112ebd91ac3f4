"""A slow LMS holds up its own launch, not every learner's page (issue 37).

A launch may fetch the platform's public keys (up to 10 s) and writes the database; run on
the event loop, that wait stalled every request the service had. Here the platform's JWKS
is a real HTTP server that holds its answer for 10 s while a launch waits on it, and other
learners' pages must still answer within a second."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from autograder.service.policy import WeekPolicy
from autograder.service.store import Store
from tests.service.lms import Lms
from tests.service.lti_platform import COURSE

pytestmark = pytest.mark.lms(grading=False)

HOLD_S = 10.0  # as long as the tool waits for a JWKS (lti.JwksCache)
ANSWER_S = 1.0


@contextmanager
def slow_jwks(body: bytes) -> Iterator[tuple[str, threading.Event, threading.Event]]:
    """A JWKS endpoint that answers ``body`` ``HOLD_S`` after it is asked (or once released):
    its URL, the event set when a request arrives, the event that releases it."""
    asked, release = threading.Event(), threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.set()
            release.wait(HOLD_S)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks", asked, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def timed_get(client: httpx.Client, url: str) -> tuple[int, float]:
    started = time.monotonic()
    status = client.get(url, timeout=HOLD_S + 5).status_code
    return status, time.monotonic() - started


def test_a_launch_waiting_on_a_slow_jwks_holds_up_no_other_learners_page(lms: Lms) -> None:
    waiting, page = lms.launch("s-meanwhile")
    assert page.status_code == 200
    store: Store = lms.app.state.store
    context = f"{lms.platform.base}|{lms.platform.registration().get_deployment_id()}|{COURSE}"
    attempt = store.submit(context=context, user="s-meanwhile", week="week01", content=b"{}", policy=WeekPolicy(),
                           now=datetime.now(UTC))
    platforms = lms.app.state.tool.platforms
    (registered,) = platforms.all()
    keys = httpx.get(registered.jwks_url).content
    with slow_jwks(keys) as (url, asked, release):
        platforms.add(dataclasses.replace(registered, jwks_url=url))  # a URL not cached yet: the launch fetches it
        launched: list[int] = []
        slow = threading.Thread(target=lambda: launched.append(lms.launch("s-slow-lms")[1].status_code))
        slow.start()
        try:
            assert asked.wait(20), "the launch never asked for the platform's keys"
            answers = [timed_get(waiting.client, f"{lms.tool_url}{path}")
                       for path in (f"/attempt/{attempt.id}", "/week/week01", "/lti/jwks")]
            still_waiting = slow.is_alive()
        finally:
            release.set()
            slow.join()
            platforms.add(registered)
    assert [status for status, _ in answers] == [200, 200, 200]
    assert max(took for _, took in answers) < ANSWER_S, answers
    assert still_waiting  # measured while the launch waited on the platform
    assert launched == [200]  # and the launch itself went through once the keys came
