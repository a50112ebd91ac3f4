"""The live report (``/instructor/WEEK``) in a real browser (Debian's chromium through
Playwright, inside the stand-in LMS's iframe): the batch report's table with a row per
student, sorted by name, sorted again from the keyboard, filtered and searched; the
15-second refresh brings a new result in and keeps the filters and the order, and leaves
the page alone while nothing changed (a 304); no axe
violation (WCAG 2.1 AA). A screenshot goes to tests/artefacts/ (not committed) for a person
to look at."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autograder.database.clock import now
from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.policy import WeekPolicy
from tests.helpers import assert_accessible
from tests.service.lms import Lms
from tests.service.web import forms

pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
# the web app alone: results are recorded straight into its store, nothing is graded
pytestmark = [pytest.mark.lms(grading=False), pytest.mark.slow]
ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"
STUDENTS = {"b-1": "Zoë Müller", "b-2": "ana Lima", "b-3": "山田 太郎", "b-4": "Bruno Costa"}  # ids not in name order


def a_result(auto: float, *, marked: bool = True) -> SubmissionResult:
    tasks = [TaskResult(1, auto, 4.0, title="the perceptron"),
             TaskResult(2, 5.0 if marked else 0.0, 6.0, manual=True, marked=marked, title="a discussion")]
    return SubmissionResult("x", "x", Status.GRADED, tasks=tasks, week="week01")


def course_context(lms: Lms) -> str:
    """The course's context as the store keeps it: b-1 uploads through the LMS."""
    browser, page = lms.launch("b-1")
    csrf = next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]
    notebook = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    reply = browser.client.post(f"{lms.tool_url}/week/week01/upload", data={"csrf": csrf}, follow_redirects=False,
                                files={"notebook": ("week01.ipynb", notebook, "application/x-ipynb+json")})
    assert reply.status_code == 303, reply.text
    attempt = lms.app.state.store.claim()
    assert attempt is not None
    lms.app.state.store.record_result(attempt.id, a_result(4.0, marked=False), week_title="week01")
    return str(attempt.context)


def test_the_live_report_sorts_filters_and_keeps_them_as_results_land(lms: Lms, chromium: Any) -> None:
    store = lms.app.state.store
    context_id = course_context(lms)  # b-1: 6 points still to mark
    for user, name in STUDENTS.items():
        store.remember_user(context_id, user, name, None)
    for user in ("b-2", "b-3", "b-4"):
        store.submit(context=context_id, user=user, week="week01", content=user.encode(), policy=WeekPolicy(),
                     now=now())
    for auto in (3.0, 2.0):  # b-2 and b-3 graded, b-4 stays queued
        attempt = store.claim()
        assert attempt is not None
        store.record_result(attempt.id, a_result(auto), week_title="week01")

    browser = chromium.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 1000})
    browser.clock.install()  # the page's 15-second refresh comes when the test says
    page = lms.open_activity(browser, "b-teacher", "instructor")
    tool = lms.tool_frame(page)
    rows = tool.locator("#results tbody tr")
    names = tool.locator("#results tbody tr:visible td:first-child a")
    assert names.all_inner_texts() == ["ana Lima", "Bruno Costa", "Zoë Müller", "山田 太郎"]  # by name, not id
    assert tool.locator("#results tbody tr[data-status=queued] .badge").inner_text() == "queued"
    pending = tool.locator("#results tbody tr[data-pending='1']")
    assert pending.count() == 1 and pending.locator(".badge").first.inner_text() == "pending marks"
    assert tool.locator(".plots img").count() == 3
    assert_accessible(page, "the live report", frames=lms.tool_url)

    # from the keyboard: Tab to the score's sort button, Enter sorts ascending, Enter again descending
    score = tool.locator("#results th:nth-child(3) button")
    for _ in range(80):
        if score.evaluate("button => button === document.activeElement"):
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    assert tool.locator("#results th:nth-child(3)").get_attribute("aria-sort") == "descending"
    assert names.all_inner_texts()[:3] == ["ana Lima", "山田 太郎", "Zoë Müller"]  # 8, 7, 4; the queued last

    tool.locator("#f-text").fill("L")  # ana Lima, Zoë Müller
    tool.locator("#f-status").select_option("graded")
    assert tool.locator("#f-count").inner_text() == f"2 of {rows.count()} shown"
    assert names.all_inner_texts() == ["ana Lima", "Zoë Müller"]

    # b-4's result lands; the refresh (focus outside the report) brings it in, filters and order kept
    store.record_result(store.claim().id, a_result(4.0), week_title="week01")
    tool.evaluate("document.activeElement.blur()")
    browser.clock.run_for(15_000)
    tool.locator("#results tbody tr[data-status=queued]").wait_for(state="detached")
    assert tool.locator("#f-text").input_value() == "L" and tool.locator("#f-status").input_value() == "graded"
    assert tool.locator("#results th:nth-child(3)").get_attribute("aria-sort") == "descending"
    assert names.all_inner_texts() == ["ana Lima", "Zoë Müller"]
    tool.evaluate("document.getElementById('results').seen = true")
    with page.expect_response(lambda reply: reply.url.endswith("/instructor/week01") and reply.status == 304):
        browser.clock.run_for(15_000)  # nothing new: the server says so, and the table stays as it is
    assert tool.evaluate("document.getElementById('results').seen") is True
    tool.locator("#f-text").fill("")  # the new table's filters work: Bruno's 9 now, graded, sorted first
    assert names.all_inner_texts() == ["Bruno Costa", "ana Lima", "山田 太郎", "Zoë Müller"]
    assert tool.locator("#f-count").inner_text() == f"4 of {rows.count()} shown"
    page.screenshot(path=str(ARTEFACTS / "service-live-report.png"), full_page=True)
    browser.close()
