"""A regrade (``AttemptQueue.regrade``, the routes ``/instructor/WEEK/regrade``): asked for on
a confirmation page, each attempt's last result counting until its new one lands, the LMS
sent a score only where a new one differs, the progress on the pages while it runs; on
SQLite and PostgreSQL. The same with the real graders and the stand-in LMS:
``test_regrade_e2e.py``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.policy import WeekPolicy
from autograder.service.store import Attempt, Store
from tests.helpers import assert_accessible
from tests.service.keyboard import navigate, press_until
from tests.service.lms import Lms
from tests.service.web import Browser, forms

pytestmark = pytest.mark.lms(grading=False)  # the web app on a real store: results recorded straight into it

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC)
A = "https://moodle.example|3|course-1"
LINEITEM = "https://moodle.example/lineitem/1"


def notebook(text: str) -> bytes:
    cell = {"cell_type": "code", "source": text, "metadata": {}, "outputs": [], "execution_count": None}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def result(auto: float) -> SubmissionResult:
    return SubmissionResult(submission="x", key="x", status=Status.GRADED, tasks=[TaskResult(1, auto, 10.0)],
                            submission_sha256="h", tests_sha256="t", grader_version="v", week="week01")


def hand_in(lms: Lms, user: str, auto: float) -> tuple[Browser, Attempt]:
    """``user`` launches week01 and uploads a notebook; its result (``auto`` of 10) is recorded
    as the runner would (no grader runs in this module)."""
    student, page = lms.launch(user)
    csrf = next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]
    reply = student.client.post(f"{lms.tool_url}/week/week01/upload", data={"csrf": csrf}, follow_redirects=False,
                                files={"notebook": ("week01.ipynb", notebook(user), "application/x-ipynb+json")})
    assert reply.status_code == 303, reply.text
    store = lms.app.state.store
    attempt = store.claim()
    assert attempt is not None and attempt.user == user
    store.record_result(attempt.id, result(auto), week_title="week01")
    return student, attempt


@pytest.fixture
def store(tmp_path: Path, database_url: str | None):
    with Store(tmp_path / "data", database=database_url) as s:
        yield s


def test_each_attempt_counts_with_its_last_result_until_its_new_one_lands(store: Store) -> None:
    """Ann's best attempt (8) is her first; the regrade's result of her second (5) lands
    first. Counted from graded attempts alone, her score would drop to 5 and be posted."""
    store.set_lineitem(A, "week01", LINEITEM)
    first, second = (store.submit(context=A, user="ann", week="week01", content=notebook(n), policy=WeekPolicy(),
                                  now=T0) for n in "12")
    for attempt, auto in ((first, 8.0), (second, 5.0)):
        claimed = store.claim()
        assert claimed is not None and claimed.id == attempt.id
        store.record_result(attempt.id, result(auto), week_title="week01")
    posted = len(store.posts(context=A))
    assert store.regrade_status(context=A, week="week01").regradable == 2

    assert store.regrade(context=A, week="week01") == 2
    status = store.regrade_status(context=A, week="week01")
    assert (status.done, status.total, status.running) == (0, 2, True)
    assert store.queue.waiting(context=A, week="week01") == 2  # the runner regroups answers once it is 0
    assert store.counted_score(context=A, user="ann", week="week01") == 8.0  # not None: the last result stands
    regraded = store.attempt(first.id)
    assert regraded is not None and regraded.state == "queued" and regraded.regrading and regraded.score == 8.0
    assert store.result(first.id, context=A) is not None  # the marking pages still have its answers

    claimed = [store.claim(), store.claim()]
    assert [a.id for a in claimed if a is not None] == [first.id, second.id]
    store.record_result(second.id, result(5.0), week_title="week01")  # the lower one lands first
    assert store.counted_score(context=A, user="ann", week="week01") == 8.0
    assert (store.regrade_status(context=A, week="week01").done, len(store.posts(context=A))) == (1, posted)
    store.record_result(first.id, result(8.0), week_title="week01")
    status = store.regrade_status(context=A, week="week01")
    assert (status.done, status.total, status.running) == (2, 2, False)
    assert store.queue.waiting(context=A, week="week01") == 0
    assert len(store.posts(context=A)) == posted  # the same score: nothing sent to the LMS at all

    assert store.regrade(context=A, week="week01", attempt_id=second.id) == 1  # the last one done: a new one
    assert (store.regrade_status(context=A, week="week01").total, store.claim().id) == (1, second.id)  # type: ignore[union-attr]
    assert store.fail(second.id, "the grader stopped")  # a regrade that cannot finish keeps the last result
    kept = store.attempt(second.id)
    assert kept is not None and kept.state == "graded" and kept.score == 5.0
    assert store.counted_score(context=A, user="ann", week="week01") == 8.0


def test_a_new_upload_is_graded_before_the_attempts_a_regrade_queued(store: Store) -> None:
    ann = [store.submit(context=A, user="ann", week="week01", content=notebook(n), policy=WeekPolicy(), now=T0)
           for n in "12"]
    for attempt in ann:
        store.claim()
        store.record_result(attempt.id, result(6.0), week_title="week01")
    assert store.regrade(context=A, week="week01") == 2
    bob = store.submit(context=A, user="bob", week="week01", content=notebook("b"), policy=WeekPolicy(), now=T0)
    assert store.queue_position(bob.id) == 1  # not after ann's regrade
    assert [store.claim().id for _ in range(3)] == [bob.id, ann[0].id, ann[1].id]  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_week_page_links_to_a_confirmation_that_says_what_a_regrade_does(lms: Lms) -> None:
    store = lms.app.state.store
    student, attempt = hand_in(lms, "rg-ann", 7.0)
    teacher, week_page = lms.launch("rg-teacher", role="instructor")
    assert 'href="/instructor/week01/regrade" id="regrade"' in week_page.text  # a link now, not a form
    assert "regrade" not in {f["id"] for f in forms(week_page.text)}

    n = store.regrade_status(context=attempt.context, week="week01").regradable  # 1, or more after the module's others
    confirm = teacher.get(f"{lms.tool_url}/instructor/week01/regrade")
    assert confirm.status_code == 200
    assert f"graded again with the week&#39;s tests as they are now: {n} attempts" in confirm.text
    assert "until its new result lands" in confirm.text and "only where the new one differs" in confirm.text
    assert store.attempt(attempt.id).state == "graded"  # type: ignore[union-attr]  # asking changed nothing

    done = teacher.submit(confirm, "confirm-regrade")
    assert done.status_code == 200 and str(done.url).endswith("/instructor/week01/regrade")
    assert f"Regrading: 0 of {n} attempts graded again." in done.text and 'id="poll"' in done.text
    week_page = teacher.get(f"{lms.tool_url}/instructor/week01").text
    live = week_page[week_page.index('<div id="live">'):]  # what the week page's 15-s refresh replaces
    assert f'<p id="regrade-progress">Regrading: 0 of {n} attempts graded again.</p>' in live
    mine = student.get(f"{lms.tool_url}/attempt/{attempt.id}")
    assert 'your score stays <strong id="score">7 / 10</strong> until the new result lands' in mine.text
    assert 'id="feedback"' in mine.text  # the last feedback stays beside it

    while (queued := store.claim()) is not None:
        store.record_result(queued.id, result(9.0), week_title="week01")
    finished = teacher.get(f"{lms.tool_url}/instructor/week01/regrade")
    assert f"The last regrade is done: {n} of {n} attempts graded again." in finished.text and 'id="poll"' not in finished.text
    without_token = teacher.client.post(f"{lms.tool_url}/instructor/week01/regrade", data={},
                                        follow_redirects=False)
    assert without_token.status_code == 403  # the CSRF check: a link elsewhere cannot start a regrade
    assert store.attempt(attempt.id).state == "graded"  # type: ignore[union-attr]


@pytest.mark.slow
def test_an_instructor_regrades_from_the_keyboard_and_both_pages_pass_axe(lms: Lms, chromium: Any) -> None:
    """Tab to the week page's regrade link, Enter; the confirmation passes axe; Tab to its
    button, Enter: the page shows the progress in its live region, and passes axe too."""
    store = lms.app.state.store
    hand_in(lms, "rg-keys", 6.0)
    browser = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    page = lms.open_activity(browser, "rg-keys-teacher", "instructor")
    tool = lms.tool_frame(page)
    press_until(page, tool, "#regrade")
    tool = navigate(lms, page)
    tool.locator("#confirm-regrade").wait_for()
    assert_accessible(page, "the regrade's confirmation", frames=lms.tool_url)
    press_until(page, tool, "#confirm-regrade button")
    tool = navigate(lms, page)
    assert "Regrading:" in tool.locator("#regrade-progress").inner_text()
    assert tool.locator("#regrade-progress").get_attribute("role") == "status"
    assert_accessible(page, "the regrade's progress", frames=lms.tool_url)
    browser.close()
    while (attempt := store.claim()) is not None:  # the module's other tests find nothing queued
        store.record_result(attempt.id, result(6.0), week_title="week01")
