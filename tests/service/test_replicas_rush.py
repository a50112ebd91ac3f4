"""A deadline rush on two ``autograder serve`` replicas (one PostgreSQL database, one data
folder, behind ``tests.helpers.RoundRobinProxy``), one of them SIGKILLed while both are
grading (issue 27): its graders die with it, the uploads that meet it are sent again as a
student would, and what it held goes to the other replica once its claims expire. In the
end every upload is graded exactly once in the record and every score reached the LMS
exactly once.

The replicas run with ``--claim-ttl 6`` (docs/LMS.md, "Running several replicas") so the
dead replica's claims expire in seconds rather than the production 30."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.helpers import PostgresServer, RoundRobinProxy, kill_alone
from tests.service.lms import Lms, register_and_add_week
from tests.service.lti_platform import PlatformState, create_platform
from tests.service.test_replicas import CORRECT, serve_command
from tests.service.web import Browser, free_port, make_certificate, serving, wait_for_server, wait_until

STUDENTS = 24
CLAIM_TTL_S = 6


def byte_unique(index: int) -> bytes:
    """The correct week-1 notebook, made unlike every other upload by its metadata."""
    notebook = json.loads(CORRECT)
    notebook["metadata"]["rush"] = index
    return json.dumps(notebook).encode()


def upload(browser: Browser, page: httpx.Response, index: int) -> None:
    """Upload until the service answers; a connection that met the dead replica is tried
    again. A 409 after a lost answer is the service saying it holds this very file."""
    while True:
        try:
            reply = browser.submit(page, "upload", files={
                "notebook": ("week01.ipynb", byte_unique(index), "application/x-ipynb+json")})
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if reply.status_code == 200 and "/attempt/" in str(reply.url) or reply.status_code == 409:
            return
        assert reply.status_code >= 500, reply.text  # a refusal other than the dead replica's is a failure


def test_a_rush_on_two_replicas_survives_one_killed_grading_each_upload_and_posting_each_score_once(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    certificate = make_certificate(tmp_path)
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    state = PlatformState()
    platform_port, ports = free_port(), [free_port(), free_port()]
    state.base = f"http://127.0.0.1:{platform_port}"
    proxy = RoundRobinProxy(ports)
    tool_url = f"https://127.0.0.1:{proxy.port}"
    data = tmp_path / "data"
    replicas = [subprocess.Popen(serve_command(data, "--database", url, "--public-url", tool_url, "--port", str(port),
                                               "--jobs", "1", "--claim-ttl", str(CLAIM_TTL_S),
                                               "--tls-cert", str(certificate[0]), "--tls-key", str(certificate[1])),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for port in ports]
    engine = create_engine(url)

    def count(query: str) -> int:
        with engine.connect() as db:
            return int(db.execute(text(query)).scalar_one())

    try:
        with pytest.MonkeyPatch.context() as patch, serving(create_platform(state), platform_port) as platform_url:
            patch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))  # the LMS fetches the tool's JWKS over https
            for port, replica in zip(ports, replicas, strict=True):
                wait_for_server(f"https://127.0.0.1:{port}/lti/jwks", replica, verify=verify)
            code = subprocess.run(serve_command(data, "--database", url, "--public-url", tool_url,
                                                "--registration-url"), capture_output=True, text=True, check=True)
            lms = Lms(platform=state, platform_url=platform_url, tool_url=tool_url, certificate=certificate[0],
                      app=None)
            register_and_add_week(lms, registration_url=code.stdout.strip())
            students = [lms.launch(f"s{i:02d}") for i in range(STUDENTS)]
            assert all('id="upload"' in page.text for _, page in students)
            with ThreadPoolExecutor(8) as pool:
                sent = [pool.submit(upload, browser, page, i) for i, (browser, page) in enumerate(students)]
                # both replicas grading (one grader each, so one attempt each): the victim dies holding a claim
                wait_until(lambda: count("SELECT count(*) FROM attempts WHERE state = 'grading'") == 2, timeout=120)
                graders_left = kill_alone(replicas[1])
                for future in sent:
                    future.result()
            for browser, _ in students:
                browser.close()
            assert graders_left == 0  # the killed replica's graders died with it
            wait_until(lambda: count("SELECT count(*) FROM attempts WHERE state IN ('queued', 'grading')") == 0
                       and count("SELECT count(*) FROM posts WHERE state <> 'posted'") == 0, timeout=240)
            wait_until(lambda: len(state.scores) >= STUDENTS, timeout=60)
            time.sleep(2)  # the outbox polls twice a second: a second send of a score would have come by now
            with engine.connect() as db:
                attempts = db.execute(text('SELECT "user", state, score, max_score, tries, result_path FROM attempts')).all()
                posts = db.execute(text('SELECT "user", state FROM posts')).all()
    finally:
        replicas[0].send_signal(signal.SIGINT)
        _, error = replicas[0].communicate(timeout=60)
        if replicas[1].poll() is None:
            replicas[1].kill()
        replicas[1].communicate(timeout=60)
        proxy.close()
        engine.dispose()
    assert replicas[0].returncode == 0, error
    users = [f"s{i:02d}" for i in range(STUDENTS)]
    # every upload recorded once and graded once, all alike (the same correct notebook)
    assert sorted(a.user for a in attempts) == users
    assert {(a.state, a.score) for a in attempts} == {("graded", attempts[0].score)} and attempts[0].score > 0, attempts
    assert all(a.result_path for a in attempts)
    assert max(a.tries for a in attempts) == 2  # the killed replica's attempt, taken back after its claim expired
    # one post each, sent: the LMS accepted each student's score once; any refusal is a 409 for a
    # post re-sent after the kill whose first send had reached the LMS (docs/LMS.md)
    assert sorted(p.user for p in posts) == users and {p.state for p in posts} == {"posted"}
    assert sorted(s["userId"] for s in state.scores) == users
    assert {s["scoreGiven"] for s in state.scores} == {attempts[0].score}
    assert {status for status, _ in state.refused_scores} <= {409}
    assert {body["userId"] for _, body in state.refused_scores} <= set(users)
