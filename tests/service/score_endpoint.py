"""A line item's AGS scores endpoint on loopback HTTP, with Moodle's rules, and a plain sender.

``ScoreEndpoint`` answers ``POST <lineitem>/scores`` as Moodle 4.x does (docs/LMS.md,
"A score post"): the exact Content-Type, the required fields, 409 when the stored
score's time is the same second or newer, ``scoreGiven`` kept only with ``FullyGraded``
(else the grade is erased), 200 with an empty body. ``fail_next`` makes it answer an
error a given number of times first (a platform that is down); ``clock_ahead_s`` makes
it store its own clock, ahead of ours, as Moodle 4.1 stores ``time()``.

``HttpSender`` is the ``ScoreSender`` the tests use: a real httpx POST, no token (the
bearer token is the web app's part, tested with it).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from autograder.exceptions import ScorePostError

SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


@dataclass
class Accepted:
    user: str
    score: float | None  # what the gradebook keeps: None (erased) unless FullyGraded
    sent: float | None  # the scoreGiven we sent
    maximum: float
    progress: str
    timestamp: str


@dataclass
class EndpointState:
    accepted: list[Accepted] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)  # every status code sent, in order
    stored: dict[str, float] = field(default_factory=dict)  # user -> epoch second of the stored score
    grades: dict[str, float | None] = field(default_factory=dict)  # user -> the gradebook's value
    fail_next: list[int] = field(default_factory=list)  # statuses to answer before behaving
    clock_ahead_s: float | None = None  # store our own (ahead) clock instead of the timestamp
    delay_s: float = 0.0
    in_flight: int = 0
    most_in_flight: int = 0  # requests being answered at once, at most
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: ScoreEndpoint

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _reply(self, status: int, body: bytes = b"") -> None:
        self.server.state.answers.append(status)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        state = self.server.state
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with state.lock:
            state.in_flight += 1
            state.most_in_flight = max(state.most_in_flight, state.in_flight)
        try:
            if state.delay_s:
                threading.Event().wait(state.delay_s)
            self._answer(state, body)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(self, state: EndpointState, body: bytes) -> None:
        with state.lock:
            if state.fail_next:
                self._reply(state.fail_next.pop(0), b'{"status":500,"reason":"down"}')
                return
            if not self.path.split("?")[0].endswith("/scores") or self.headers.get("Content-Type") != SCORE_TYPE:
                self._reply(400, b'{"status":400,"reason":"No handler found"}')
                return
            try:
                score = json.loads(body)
                user, progress = str(score["userId"]), score["gradingProgress"]
                score["activityProgress"]
                moment = datetime.fromisoformat(score["timestamp"]).timestamp()
                if "scoreGiven" in score and "scoreMaximum" not in score:
                    raise KeyError("scoreMaximum")
            except (KeyError, ValueError, TypeError):
                self._reply(400, b"[]")
                return
            if user in state.stored and state.stored[user] >= int(moment):  # strtotime: whole seconds
                self._reply(409, b"[]")
                return
            given = float(score["scoreGiven"]) if progress == "FullyGraded" and "scoreGiven" in score else None
            state.stored[user] = int(moment) if state.clock_ahead_s is None else (
                datetime.now().timestamp() + state.clock_ahead_s)
            state.grades[user] = given
            sent = float(score["scoreGiven"]) if "scoreGiven" in score else None
            state.accepted.append(Accepted(user, given, sent, float(score.get("scoreMaximum", 1)), progress,
                                           score["timestamp"]))
            self._reply(200)


class ScoreEndpoint(ThreadingHTTPServer):
    """The platform's side, serving in a thread until ``close``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = EndpointState()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def lineitem(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mod/lti/services.php/2/lineitems/7/lineitem?type_id=1"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class HttpSender:
    """Posts a score over HTTP as the AGS sender does (scores URL, Content-Type, statuses)."""

    def __init__(self, timeout_s: float = 5.0) -> None:
        self.client = httpx.Client(timeout=timeout_s)

    def post_score(self, lineitem: str, payload: dict[str, Any]) -> None:
        base, _, query = lineitem.partition("?")
        url = base.rstrip("/") + "/scores" + (f"?{query}" if query else "")
        try:
            reply = self.client.post(url, content=json.dumps(payload), headers={"Content-Type": SCORE_TYPE})
        except httpx.HTTPError as exc:
            raise ScorePostError(None, True, f"the platform could not be reached ({exc})") from exc
        if reply.status_code >= 300:
            retryable = reply.status_code in (401, 408, 429) or reply.status_code >= 500
            raise ScorePostError(reply.status_code, retryable,
                                 f"the platform answered {reply.status_code}: {reply.text[:200]}")
