"""Replicas on one data folder (a shared volume): what they write there is made once and
read by all, and their grading services start side by side on one PostgreSQL database,
while two on the folder's SQLite file are still refused (tests/service/test_runner.py)."""

from __future__ import annotations

import multiprocessing
import secrets
from pathlib import Path
from typing import Any

import pytest

from autograder.course import Course
from autograder.service.keys import ToolKeys, create_private_once
from autograder.service.lti import LoginStates, Platform, Platforms
from autograder.service.runner import GradingService
from autograder.service.store import Store
from tests.helpers import PostgresServer

pytestmark = pytest.mark.slow

PROCESSES = 4


def _start(folder: Path, barrier: Any, results: Any, n: int) -> None:
    """What a replica does with the data folder at its first start."""
    barrier.wait()
    keys = ToolKeys(folder / "keys")
    session = create_private_once(folder / "keys" / "session.secret", lambda: secrets.token_bytes(32))
    token = create_private_once(folder / "keys" / "metrics.token", lambda: secrets.token_urlsafe(32).encode())
    states = LoginStates(folder / "lti.sqlite")  # where Tool keeps the registrations without --database
    Platforms(states.database).add(Platform(issuer=f"https://lms{n}.example", client_id=f"c{n}",
                                            auth_login_url="a", token_url="t", jwks_url="j"))
    states.close()
    results.put((keys.current_kid, sorted(k["kid"] for k in keys.jwks()["keys"]), session, token))


def test_replicas_starting_at_once_on_one_folder_share_its_keys_secrets_and_platforms(tmp_path: Path):
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    processes = [context.Process(target=_start, args=(tmp_path, barrier, results, n)) for n in range(PROCESSES)]
    for process in processes:
        process.start()
    seen = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    kid, published, session, token = seen[0]
    assert all(s == seen[0] for s in seen)  # one signing key, one session secret, one metrics token
    assert published == [kid] and sorted(p.name for p in (tmp_path / "keys").glob("*.pem")) == [f"{kid}.pem"]
    assert (tmp_path / "keys" / "session.secret").read_bytes() == session and len(session) == 32
    assert (tmp_path / "keys" / "metrics.token").stat().st_mode & 0o777 == 0o600
    states = LoginStates(tmp_path / "lti.sqlite")
    assert sorted(p.client_id for p in Platforms(states.database).all()) == [
        f"c{n}" for n in range(PROCESSES)]  # no registration lost to another's write
    states.close()


def test_grading_services_on_one_postgresql_database_share_a_data_folder(tmp_path: Path, course: Course,
                                                                         postgres: PostgresServer):
    database = postgres.new_database()
    with Store(tmp_path, database=database) as first, GradingService(course, first):
        with Store(tmp_path, database=database) as second, GradingService(course, second):
            assert not (tmp_path / "grading.lock").exists()  # the database's claims keep their work apart
