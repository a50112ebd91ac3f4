"""The grading service on one shared database (issue 27): ``autograder serve --database URL``
keeps its attempts, queue, score posts and login states in that database, so several
``serve`` processes can share it.

The service runs as an admin runs it (the real ``autograder serve`` process, over its own
TLS on loopback) against the stand-in LMS built on lti1p3platform, on a real PostgreSQL
server (the ``postgres`` fixture). The attempt limit holds across replicas: eight processes
racing one student's uploads get one through."""

from __future__ import annotations

import multiprocessing
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import SQLAlchemyError

from autograder.database.tables import attempts
from autograder.exceptions import AttemptRefused, AutograderError
from autograder.service.policy import WeekPolicy
from autograder.service.store import Store
from tests.helpers import PostgresServer, RoundRobinProxy
from tests.service.lms import Lms, register_and_add_week
from tests.service.lti_platform import PlatformState, create_platform
from tests.service.test_store import result
from tests.service.web import Browser, free_port, make_certificate, serving, wait_for_server, wait_until

ROOT = Path(__file__).resolve().parents[2]
CORRECT = (ROOT / "tests" / "fixtures" / "week01" / "correct_fresh_notebook.ipynb").read_bytes()
REPLICAS = 8


def serve_command(data: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "autograder", "serve", "--course", str(ROOT), "--data", str(data), *options]


def upload_through_the_lms(lms: Lms, registration_url: str, user: str) -> tuple[Browser, str]:
    """The tool registered at ``registration_url`` and week01 added, ``user`` launches and
    uploads the correct notebook: the browser and the attempt's URL."""
    register_and_add_week(lms, registration_url=registration_url)
    browser, page = lms.launch(user)
    assert page.status_code == 200 and 'id="upload"' in page.text, page.text
    queued = browser.submit(page, "upload", files={"notebook": ("week01.ipynb", CORRECT, "application/x-ipynb+json")})
    assert queued.status_code == 200 and "/attempt/" in str(queued.url), queued.text
    return browser, str(queued.url)


@dataclass
class Replicas:
    """``serve`` processes on one database and one data folder behind a round-robin proxy,
    the stand-in LMS they are reached from, and a one-time registration URL for it."""

    lms: Lms
    proxy: RoundRobinProxy
    processes: list[subprocess.Popen[str]]
    registration_url: str
    verify: ssl.SSLContext
    errors: list[str] = field(default_factory=list)  # each process's stderr, once stopped


@contextmanager
def replicas_behind_a_proxy(tmp_path: Path, database: str, *options: str, count: int = 2) -> Iterator[Replicas]:
    """``count`` replicas started with ``options`` on ``database`` and ``tmp_path/data``; on
    leaving, those still running are stopped as Ctrl-C stops them (``errors`` filled in)."""
    certificate = make_certificate(tmp_path)
    verify = ssl.create_default_context(cafile=str(certificate[0]))
    state = PlatformState()
    platform_port, ports = free_port(), [free_port() for _ in range(count)]
    state.base = f"http://127.0.0.1:{platform_port}"
    proxy = RoundRobinProxy(ports)
    tool_url = f"https://127.0.0.1:{proxy.port}"
    data = tmp_path / "data"  # one folder for all, as a shared volume would be
    processes = [subprocess.Popen(serve_command(data, "--database", database, "--public-url", tool_url, "--port",
                                                str(port), "--tls-cert", str(certificate[0]), "--tls-key",
                                                str(certificate[1]), *options),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for port in ports]
    errors: list[str] = []
    try:
        with pytest.MonkeyPatch.context() as patch, serving(create_platform(state), platform_port) as platform_url:
            patch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))  # the LMS fetches the tool's JWKS over https
            for port, process in zip(ports, processes, strict=True):
                wait_for_server(f"https://127.0.0.1:{port}/lti/jwks", process, verify=verify)
            code = subprocess.run(serve_command(data, "--database", database, "--public-url", tool_url,
                                                "--registration-url"), capture_output=True, text=True, check=True)
            lms = Lms(platform=state, platform_url=platform_url, tool_url=tool_url, certificate=certificate[0],
                      app=None)
            yield Replicas(lms=lms, proxy=proxy, processes=processes, registration_url=code.stdout.strip(),
                           verify=verify, errors=errors)
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        errors[:] = [process.communicate(timeout=60)[1] for process in processes]
        proxy.close()


@pytest.mark.sandbox
def test_serve_on_postgresql_takes_a_launch_and_an_upload_into_that_database(
        tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    certificate = make_certificate(tmp_path)
    state = PlatformState()
    platform_port, tool_port = free_port(), free_port()
    state.base = f"http://127.0.0.1:{platform_port}"
    tool_url = f"https://127.0.0.1:{tool_port}"
    data = tmp_path / "data"
    server = subprocess.Popen(serve_command(data, "--database", url, "--public-url", tool_url, "--port",
                                            str(tool_port), "--tls-cert", str(certificate[0]),
                                            "--tls-key", str(certificate[1])),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.MonkeyPatch.context() as patch, serving(create_platform(state), platform_port) as platform_url:
            patch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))  # the LMS fetches the tool's JWKS over https
            wait_for_server(f"{tool_url}/lti/jwks", server, verify=ssl.create_default_context(cafile=str(certificate[0])))
            # a registration code made by another process with another data folder: the login
            # states (registration codes among them) are in the shared database, not in a file
            other = subprocess.run(serve_command(tmp_path / "elsewhere", "--database", url, "--public-url", tool_url,
                                                 "--registration-url"), capture_output=True, text=True, check=True)
            lms = Lms(platform=state, platform_url=platform_url, tool_url=tool_url, certificate=certificate[0],
                      app=None)
            upload_through_the_lms(lms, other.stdout.strip(), "s-replica")[0].close()
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    engine = create_engine(url)
    with engine.connect() as db:
        stored = db.execute(text('SELECT "user", week, number, content_hash FROM attempts')).all()
        logins = db.execute(text("SELECT count(*) FROM lti_nonce")).scalar_one()
    engine.dispose()
    assert [(user, week, number) for user, week, number, _ in stored] == [("s-replica", "week01", 1)]
    assert logins >= 1  # the launches' nonces, spent in the database
    assert not (data / "gradebook.sqlite").exists() and not (data / "lti.sqlite").exists()
    assert (data / "uploads" / stored[0][3][:2] / f"{stored[0][3]}.ipynb").read_bytes() == CORRECT


@pytest.mark.slow
@pytest.mark.parametrize(("database", "says"), [
    ("service.db", "is not a database URL"),
    ("mysql+nosuchdriver://u@h/db", "no driver for this database"),
    ("postgresql+psycopg://nobody@/none?host=/nonexistent", "cannot open"),
])
def test_a_bad_database_is_one_clear_error(tmp_path: Path, database: str, says: str) -> None:
    done = subprocess.run(serve_command(tmp_path / "data", "--database", database, "--public-url",
                                        "https://grader.example.edu", "--port", str(free_port())),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def _replica_uploads(data: Path, database: str | None, number: int, start: Barrier,
                     outcomes: multiprocessing.Queue[str]) -> None:
    """One replica: its own store (its own connections), then the student's upload, sent
    the moment every replica is ready."""
    with Store(data, database=database) as store:
        start.wait(60)
        try:
            store.submit(context="iss|1|course", user="ann", week="week01", content=b'{"x": %d}' % number,
                         policy=WeekPolicy(max_attempts=1), now=datetime.now(UTC))
            outcomes.put("accepted")
        except AttemptRefused as refused:
            outcomes.put(f"refused: {refused}")
        except (SQLAlchemyError, AutograderError) as exc:  # what the limit must not become: a failed upload
            outcomes.put(f"error: {exc!r}")


@pytest.mark.slow
def test_eight_replicas_racing_uploads_against_one_attempt_accept_exactly_one(
        tmp_path: Path, database_url: str | None) -> None:
    """Eight processes, each with its own ``Store`` on one database, upload the same
    student's notebook at the same moment against ``max_attempts = 1``: one is accepted, the
    seven others are refused saying why (none fails on the database's uniqueness check
    instead, none slips past the limit)."""
    data = tmp_path / "data"
    Store(data, database=database_url).close()  # the schema, made once before the race
    fork = multiprocessing.get_context("fork")
    start, outcomes = fork.Barrier(REPLICAS), fork.Queue()
    replicas = [fork.Process(target=_replica_uploads, args=(data, database_url, n, start, outcomes))
                for n in range(REPLICAS)]
    for replica in replicas:
        replica.start()
    said = sorted(outcomes.get(timeout=120) for _ in replicas)
    for replica in replicas:
        replica.join(30)
    assert said[0] == "accepted" and all(s.startswith("refused: You have used all 1 attempts") for s in said[1:]), said
    with Store(data, database=database_url) as store:
        assert [a.number for a in store.attempts(context="iss|1|course", user="ann", week="week01")] == [1]


TTL_S = 3.0  # the tests' claim lifetime, renewed every 1 s: a renewal may lag 2 s (a loaded CI machine, an fsync) and hold


def _replica_grades(data: Path, database: str | None, claimed: Event) -> None:
    """A replica that claims the queued attempt, then grades it forever (until killed)."""
    with Store(data, database=database, claim_ttl_s=TTL_S) as store:
        assert store.claim() is not None
        claimed.set()
        threading.Event().wait()


@pytest.mark.slow
def test_a_claim_expires_when_its_replica_dies_and_not_while_it_lives(
        tmp_path: Path, database_url: str | None) -> None:
    data = tmp_path / "data"
    with Store(data, database=database_url, claim_ttl_s=TTL_S) as other:
        attempt = other.submit(context="iss|1|course", user="ann", week="week01", content=b'{"x": 1}',
                               policy=WeekPolicy(), now=datetime.now(UTC))
        fork = multiprocessing.get_context("fork")
        claimed = fork.Event()
        grading = fork.Process(target=_replica_grades, args=(data, database_url, claimed))
        grading.start()
        try:
            assert claimed.wait(60)
            time.sleep(3 * TTL_S)  # the claim is twice as old as its lifetime, but renewed
            assert other.requeue_interrupted() == 0 and other.queued_weeks() == {} and other.claim() is None
            assert other.attempt(attempt.id).state == "grading"  # type: ignore[union-attr]
        finally:
            os.kill(grading.pid, signal.SIGKILL)  # as a crash would: nothing is released
            grading.join()
        started = time.monotonic()
        wait_until(lambda: other.queued_weeks() == {"week01": 1}, timeout=30)
        assert time.monotonic() - started <= 2 * TTL_S
        again = other.claim()
        assert again is not None and again.id == attempt.id
    with Store(data, database=database_url, claim_ttl_s=TTL_S) as later:  # "other" stopped, its claim left
        wait_until(lambda: later.requeue_interrupted() == 1, timeout=30)


def _replica_that_stalls(data: Path, database: str | None, claimed: Event, finish: Event,
                         outcome: multiprocessing.Queue[str]) -> None:
    """Replica a: claims the queued attempt, stops (as SIGSTOP, a long GC pause or a partition
    stops a process) before its first renewal, and once woken and told to, records 1 point."""
    with Store(data, database=database, claim_ttl_s=TTL_S) as store:
        attempt = store.claim()
        assert attempt is not None
        claimed.set()
        os.kill(os.getpid(), signal.SIGSTOP)  # the renewer sleeps its first third of TTL_S: it holds no lock
        finish.wait(120)
        recorded = store.record_result(attempt.id, result(1), week_title="week01")
        outcome.put("dropped" if recorded is None else f"recorded {recorded.score:g}")


def claimed_at(store: Store, attempt_id: int) -> str | None:
    with store.database.read() as db:
        return db.execute(select(attempts.c.claimed_at).where(attempts.c.id == attempt_id)).scalar()


@pytest.mark.slow
def test_a_stalled_replica_neither_renews_its_lost_claim_nor_overwrites_the_result(
        tmp_path: Path, database_url: str | None) -> None:
    """Replica a stalls (SIGSTOP) with an attempt claimed; replica b takes it over once the
    claim expires, then stalls in turn (its renewals stop). When a wakes, its renewer runs
    again but does not refresh b's claim (which would keep b's claim alive forever), and its
    result is dropped; b's result is the one recorded."""
    data = tmp_path / "data"
    with Store(data, database=database_url, claim_ttl_s=TTL_S) as b:
        attempt = b.submit(context="iss|1|course", user="ann", week="week01", content=b'{"x": 1}',
                           policy=WeekPolicy(), now=datetime.now(UTC))
        fork = multiprocessing.get_context("fork")
        claimed, finish, outcome = fork.Event(), fork.Event(), fork.Queue()
        a = fork.Process(target=_replica_that_stalls, args=(data, database_url, claimed, finish, outcome))
        a.start()
        try:
            assert claimed.wait(60)
            wait_until(lambda: b.requeue_interrupted() == 1, timeout=30)
            taken = b.claim()
            assert taken is not None and taken.id == attempt.id
            b.queue.close()  # b stalls too: nothing renews its claim from now on
            stamped = claimed_at(b, attempt.id)
            os.kill(a.pid, signal.SIGCONT)
            time.sleep(2 * TTL_S)  # a's renewer runs every TTL_S / 3
            assert claimed_at(b, attempt.id) == stamped
            finish.set()
            assert outcome.get(timeout=60) == "dropped"
        finally:
            os.kill(a.pid, signal.SIGCONT)
            finish.set()
            a.join(60)
        recorded = b.record_result(attempt.id, result(9), week_title="week01")
        assert recorded is not None and (recorded.state, recorded.score) == ("graded", 9)
