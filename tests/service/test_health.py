"""``/healthz`` and ``/readyz`` (issue 38): what a load balancer asks one replica, without a
token. Ready means the database answers and the grading loop goes round; a loop that stopped
beating makes the replica not ready while it stays alive. (The database away: the replicas
on a stopped PostgreSQL in test_database_outage.py.)"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from autograder.course import Course
from autograder.service.app import create_app
from autograder.service.health import Health
from autograder.service.policy import policy_for
from autograder.service.settings import Settings
from autograder.service.store import Store
from autograder.service.tool import Tool
from tests.service.web import free_port, serving


@pytest.mark.slow  # a store and the tool's keys made: ~3 s
def test_readyz_follows_the_grading_loops_beat_and_healthz_answers_regardless(tmp_path: Path,
                                                                              course: Course) -> None:
    settings = Settings(public_url="https://grader.example.edu", data=tmp_path / "service")
    with Store(settings.data) as store:
        health = Health(store.database, stale_s=10.0)  # a request on a loaded machine can take seconds
        app = create_app(settings, course=course, store=store, tool=Tool(settings),
                         policy_for=lambda week: policy_for(course.root, week), wake=lambda: None, health=health)
        with serving(app, free_port()) as url, httpx.Client(base_url=url) as client:
            never = client.get("/readyz")  # the loop has not gone round yet
            assert never.status_code == 503
            assert never.json() == {"status": "not ready", "database": True, "grading": False}
            health.beat()
            ready = client.get("/readyz")
            assert ready.status_code == 200 and ready.json() == {"status": "ready", "database": True, "grading": True}
            assert ready.headers["Cache-Control"] == "no-store"
            health.stale_s = 0.2  # the beat is now older than this: the loop stopped (a hang, a dead thread)
            time.sleep(0.3)  # alive, but not ready
            assert client.get("/readyz").json()["grading"] is False
            alive = client.get("/healthz")
            assert alive.status_code == 200 and alive.json() == {"status": "alive"}
            assert client.head("/readyz").status_code == 503
        health.close()
