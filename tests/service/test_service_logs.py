"""What ``autograder serve --log-format json`` writes while a learner's upload is graded and its
score posted (issue 38): one JSON object per line, an event for each step with the learner's
and the course's ids, the database's URL without its password, and no secret anywhere (the
password, the registration code, the session cookie, the form's CSRF token)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import PostgresServer
from tests.service.lms import register_and_add_week
from tests.service.test_replicas import CORRECT, replicas_behind_a_proxy
from tests.service.web import forms, wait_until

pytestmark = pytest.mark.sandbox

PASSWORD = "pw-not-for-logs-4711"


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
