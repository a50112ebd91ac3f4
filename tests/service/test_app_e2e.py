"""The whole service end to end over loopback: a learner launched from the lti1p3platform
LMS uploads week01, sees the queue and then the feedback, the score arrives at the LMS's
AGS endpoint (PendingManual, so Moodle stores no value yet); the instructor marks the
hand-graded tasks in the browser form and the FullyGraded score follows.  And what the
app refuses: a learner on an instructor route, another student's attempt, an upload over
the limit, a file that is not a notebook, a form without its CSRF token.

Who may call a route is in its signature (autograder/service/deps.py): every route under
``/instructor/`` or ``/deep-link`` takes a ``CurrentInstructor``. The instructor-route cases
are the routes of the routers ``create_app`` includes, and the app the LMS launches into has
exactly those, so an instructor route added without the dependency fails here, as one added
outside the routers does."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts

from autograder.service.routes import ROUTERS
from tests.service.lms import Lms
from tests.service.web import Browser, forms, wait_until

pytestmark = [pytest.mark.lms(upload_limit_bytes=256 * 1024), pytest.mark.sandbox]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "week01"
CORRECT = (FIXTURES / "correct_fresh_notebook.ipynb").read_bytes()
WRONG = (FIXTURES / "wrong_counts_every_sample.ipynb").read_bytes()
INSTRUCTOR_AREAS = ("/instructor/", "/deep-link")
NOT_AN_INSTRUCTOR = "This page is for the course&#39;s instructors (the Instructor role in the LMS)."
PATH_VALUES = {"name": "week01", "task": "3", "number": "1", "post_id": "1", "attempt_id": "1"}
# what any of the instructors' forms may hold: a route that let a learner through would act on it
INSTRUCTOR_FORM = {"week": "week01", "points": "5", "comment": "A learner's mark", "attempt": "1", "item": "1",
                   "adjustment": "1", "at": "1", "reason": "A learner's override"}


def instructor_routes(routes: Iterable[Any]) -> list[tuple[str, str]]:
    """(method, path) of every route in the instructors' part of the app (``routes``: the
    app's, its included routers flattened as FastAPI sees them)."""
    return sorted((method, route.path) for route in iter_route_contexts(list(routes))
                  if isinstance(route.original_route, APIRoute) and route.path.startswith(INSTRUCTOR_AREAS)
                  for method in route.methods)


INSTRUCTOR_ROUTES = instructor_routes(route for router in ROUTERS for route in router.routes)


def upload(browser: Browser, page: httpx.Response, content: bytes, name: str = "week01.ipynb") -> httpx.Response:
    return browser.submit(page, "upload", files={"notebook": (name, content, "application/x-ipynb+json")})




@pytest.fixture(scope="module")
def graded(lms: Lms) -> dict[str, Any]:
    """Student s1 uploads the correct notebook and waits for the feedback."""
    browser, page = lms.launch("s1")
    queued = upload(browser, page, CORRECT)
    assert queued.status_code == 200 and "/attempt/" in str(queued.url), queued.text
    url = str(queued.url)
    state = wait_until(lambda: (s := browser.client.get(f"{url}/state").json())["state"] in ("graded", "failed")
                       and s)
    return {"browser": browser, "queued": queued, "attempt_url": url, "state": state}


def test_upload_shows_the_queue_then_the_feedback(lms: Lms, graded: dict[str, Any]) -> None:
    first = graded["queued"].text
    assert "In the queue" in first or "Being graded" in first or "Graded" in first
    assert graded["state"]["state"] == "graded"
    browser: Browser = graded["browser"]
    page = browser.get(graded["attempt_url"])
    assert 'id="feedback"' in page.text and 'id="score"' in page.text
    feedback = browser.get(graded["attempt_url"] + "/feedback")
    assert feedback.status_code == 200 and "The perceptron" in feedback.text
    assert "sandbox" in feedback.headers["content-security-policy"]
    week = browser.get(f"{lms.tool_url}/week/week01")
    assert "/attempt/" in week.text and "graded" in week.text


def test_the_score_arrives_at_the_lms_pending_manual_marking(lms: Lms, graded: dict[str, Any]) -> None:
    score = wait_until(lambda: next((s for s in lms.platform.scores if s["userId"] == "s1"), None))
    assert score["gradingProgress"] == "PendingManual" and score["activityProgress"] == "Completed"
    assert score["scoreMaximum"] == 100 and score["scoreGiven"] == graded["state"]["score"]
    assert score["stored"] is None  # Moodle writes no value while grading is not FullyGraded
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", score["timestamp"])  # UTC, to the millisecond


def test_the_instructor_marks_and_the_fully_graded_score_follows(lms: Lms, graded: dict[str, Any]) -> None:
    wait_until(lambda: any(s["userId"] == "s1" for s in lms.platform.scores))
    browser, report = lms.launch("t1", role="instructor")
    assert "User s1" in report.text and 'id="posts"' in report.text
    assert 'id="no-lineitem"' not in report.text  # the deep-linked activity has its grade item
    week = browser.get(f"{lms.tool_url}/instructor/week01/marking")
    assert 'id="task-3"' in week.text and 'id="task-4"' in week.text  # week01's hand-graded tasks
    attempt = graded["attempt_url"].rsplit("/", 1)[1]
    for task in (3, 4):
        page = browser.get(f"{lms.tool_url}/instructor/week01/marking/{task}")
        assert next(f for f in forms(page.text) if f["id"] == "marking")["fields"]["at"] == attempt  # s1's, in view
        saved = browser.submit(page, "marking", data={"points": "20"})
        assert saved.status_code == 200 and "1 answers marked." in saved.text, saved.text
    final = wait_until(lambda: next((s for s in lms.platform.scores
                                     if s["userId"] == "s1" and s["gradingProgress"] == "FullyGraded"), None))
    assert final["scoreGiven"] == pytest.approx(graded["state"]["score"] + 40)
    assert final["stored"] == pytest.approx(final["scoreGiven"])  # line item max 100 = scoreMaximum
    assert lms.platform.refused_scores == []
    report = browser.get(f"{lms.tool_url}/instructor/week01")
    assert "posted" in report.text


def test_the_results_folder_downloads_as_a_zip(lms: Lms, graded: dict[str, Any]) -> None:
    browser, _ = lms.launch("t2", role="instructor")
    reply = browser.get(f"{lms.tool_url}/instructor/week01/results.zip")
    names = zipfile.ZipFile(io.BytesIO(reply.content)).namelist()
    assert "week01/attempts.csv" in names and any(n.endswith(".json") for n in names)
    assert any(n.endswith(".html") for n in names)


@pytest.fixture(scope="module")
def learner(lms: Lms) -> tuple[Browser, str]:
    """A learner launched into week01 by the LMS, and the CSRF token of their own session."""
    browser, page = lms.launch("s2")
    assert page.status_code == 200 and str(page.url).endswith("/week/week01"), page.text
    return browser, next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]


def test_the_instructor_route_cases_are_the_apps(lms: Lms) -> None:
    assert instructor_routes(lms.app.routes) == INSTRUCTOR_ROUTES
    assert ("GET", "/instructor/{name}") in INSTRUCTOR_ROUTES and ("POST", "/deep-link") in INSTRUCTOR_ROUTES


@pytest.mark.parametrize(("method", "path"), INSTRUCTOR_ROUTES, ids=[f"{m} {p}" for m, p in INSTRUCTOR_ROUTES])
def test_a_learner_gets_the_same_refusal_from_every_instructor_route(lms: Lms, learner: tuple[Browser, str],
                                                                     method: str, path: str) -> None:
    browser, csrf = learner
    url = lms.tool_url + re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], path)
    data = {**INSTRUCTOR_FORM, "csrf": csrf} if method == "POST" else None
    reply = browser.client.request(method, url, data=data)
    assert reply.status_code == 403 and NOT_AN_INSTRUCTOR in reply.text, (method, path, reply.text[-600:])


def test_a_student_cannot_read_anothers_attempt(lms: Lms, graded: dict[str, Any]) -> None:
    browser, _ = lms.launch("s3")
    for suffix in ("", "/state", "/feedback"):
        reply = browser.get(graded["attempt_url"] + suffix)
        assert reply.status_code == 403 and "not yours" in reply.text


def test_an_upload_over_the_limit_is_refused(lms: Lms) -> None:
    browser, page = lms.launch("s4")
    reply = upload(browser, page, CORRECT + b" " * (300 * 1024))
    assert reply.status_code == 413 and "limit" in reply.text


def test_a_file_that_is_not_a_notebook_is_refused(lms: Lms) -> None:
    browser, page = lms.launch("s5")
    reply = upload(browser, page, b"print('hello')\n", name="week01.py")
    assert reply.status_code == 415 and "not a notebook" in reply.text and 'href="/week/week01"' in reply.text
    reply = upload(browser, page, b"{not json", name="week01.ipynb")
    assert reply.status_code == 415 and "not a readable Jupyter notebook" in reply.text
    assert "No attempts yet" in browser.get(f"{lms.tool_url}/week/week01").text


def test_a_form_without_its_csrf_token_is_refused(lms: Lms) -> None:
    browser, _ = lms.launch("s6")
    reply = browser.client.post(f"{lms.tool_url}/week/week01/upload",
                                files={"notebook": ("week01.ipynb", CORRECT)}, data={"csrf": "forged"})
    assert reply.status_code == 403 and "CSRF" in reply.text


def test_no_session_no_page(lms: Lms) -> None:
    reply = lms.browser().get(f"{lms.tool_url}/week/week01")
    assert reply.status_code == 401 and "open this activity from the course page" in reply.text


def test_the_same_file_twice_is_refused_by_the_course_policy(lms: Lms, graded: dict[str, Any]) -> None:
    browser: Browser = graded["browser"]
    page = browser.get(f"{lms.tool_url}/week/week01")
    reply = upload(browser, page, CORRECT)
    assert reply.status_code == 409 and "same file as your attempt 1" in reply.text
