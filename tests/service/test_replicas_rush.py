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
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.helpers import PostgresServer, kill_alone
from tests.service.lms import register_and_add_week
from tests.service.test_replicas import CORRECT, replicas_behind_a_proxy
from tests.service.web import Browser, wait_until

pytestmark = pytest.mark.sandbox

STUDENTS = 24
CLAIM_TTL_S = 6
GRADING = "SELECT count(*) FROM attempts WHERE state = 'grading'"


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
    engine = create_engine(url)

    def count(query: str) -> int:
        with engine.connect() as db:
            return int(db.execute(text(query)).scalar_one())

    try:
        with replicas_behind_a_proxy(tmp_path, url, "--jobs", "1", "--claim-ttl", str(CLAIM_TTL_S)) as replicas:
            lms, state = replicas.lms, replicas.lms.platform
            register_and_add_week(lms, registration_url=replicas.registration_url)
            students = [lms.launch(f"s{i:02d}") for i in range(STUDENTS)]
            assert all('id="upload"' in page.text for _, page in students)
            with ThreadPoolExecutor(8) as pool:
                sent = [pool.submit(upload, browser, page, i) for i, (browser, page) in enumerate(students)]
                victim = replicas.processes[1]
                while True:  # the victim dies holding a claim, not between two attempts
                    wait_until(lambda: count(GRADING) == 2, timeout=120)
                    os.kill(victim.pid, signal.SIGSTOP)
                    time.sleep(0.5)  # the other replica, with one grader, holds at most one attempt
                    if count(GRADING) == 2:  # so the stopped victim holds the other
                        break
                    os.kill(victim.pid, signal.SIGCONT)
                graders_left = kill_alone(victim)
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
                attempts = db.execute(text(  # each score and result as the gradebook holds it
                    'SELECT a."user", a.state, r.score, a.tries, r.document FROM attempts a '
                    "LEFT JOIN results r ON r.week = a.week AND r.key = 'attempt-' || a.id")).all()
                posts = db.execute(text('SELECT "user", state FROM posts')).all()
    finally:
        engine.dispose()
    assert replicas.processes[0].returncode == 0, replicas.errors[0]
    users = [f"s{i:02d}" for i in range(STUDENTS)]
    # every upload recorded once and graded once, all alike (the same correct notebook)
    assert sorted(a.user for a in attempts) == users
    assert {(a.state, a.score) for a in attempts} == {("graded", attempts[0].score)} and attempts[0].score > 0, attempts
    assert all(a.document for a in attempts)
    assert max(a.tries for a in attempts) == 2  # the killed replica's attempt, taken back after its claim expired
    # one post each, sent: the LMS accepted each student's score once; any refusal is a 409 for a
    # post re-sent after the kill whose first send had reached the LMS (docs/LMS.md)
    assert sorted(p.user for p in posts) == users and {p.state for p in posts} == {"posted"}
    assert sorted(s["userId"] for s in state.scores) == users
    assert {s["scoreGiven"] for s in state.scores} == {attempts[0].score}
    assert {status for status, _ in state.refused_scores} <= {409}
    assert {body["userId"] for _, body in state.refused_scores} <= set(users)


def test_two_replicas_grade_on_one_dask_cluster_each_upload_once(tmp_path: Path, postgres: PostgresServer) -> None:
    """``serve --scheduler`` from two replicas (docs/LMS.md, the Compose file's Dask overlay):
    each claims an attempt in the database before it sends it to the cluster, so every
    upload is graded there once and its score posted once."""
    distributed = pytest.importorskip("distributed")
    url, students = postgres.new_database(), 6
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, \
            replicas_behind_a_proxy(tmp_path, url, "--scheduler", cluster.scheduler_address) as replicas:
        lms, state = replicas.lms, replicas.lms.platform
        register_and_add_week(lms, registration_url=replicas.registration_url)
        launched = [lms.launch(f"d{i}") for i in range(students)]
        with ThreadPoolExecutor(students) as pool:
            list(pool.map(lambda each: upload(*each), [(b, p, i) for i, (b, p) in enumerate(launched)]))
        for browser, _ in launched:
            browser.close()
        wait_until(lambda: len(state.scores) >= students, timeout=240)
        time.sleep(2)  # the outboxes poll twice a second: a second send of a score would have come by now
        engine = create_engine(url)
        with engine.connect() as db:
            attempts = db.execute(text(
                'SELECT a."user", a.state, r.score, a.tries FROM attempts a '
                "LEFT JOIN results r ON r.week = a.week AND r.key = 'attempt-' || a.id")).all()
        engine.dispose()
    assert all(process.returncode == 0 for process in replicas.processes), replicas.errors
    users = [f"d{i}" for i in range(students)]
    assert sorted(a.user for a in attempts) == users
    assert {(a.state, a.tries) for a in attempts} == {("graded", 1)}, attempts  # each claimed once, graded once
    assert sorted(s["userId"] for s in state.scores) == users and not state.refused_scores
    assert {s["scoreGiven"] for s in state.scores} == {attempts[0].score}
