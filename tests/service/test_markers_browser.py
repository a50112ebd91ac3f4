"""Two markers in a real browser (Debian's chromium, headless, through Playwright), each in
their own browser context launched through the stand-in LMS as an instructor: one splits
the week's hand-ins between them from the keyboard on the markers page (axe clean), then
both mark their own queues at the same time, each seeing only their own hand-ins, and the
markers page counts each one's progress; every mark names the marker who saved it."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.database.clock import now
from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.markers import assignments
from autograder.service.policy import WeekPolicy
from tests.helpers import assert_accessible
from tests.service.keyboard import navigate, tab_to
from tests.service.lms import Lms
from tests.service.lti_platform import COURSE
from tests.service.test_rubric_browser import notebook

pytestmark = [pytest.mark.lms(grading=False), pytest.mark.slow]  # results recorded straight into the store
STUDENTS = [f"mb-s{n}" for n in range(1, 7)]
MARKERS = ("mb-tess", "mb-abe")
ANSWERS = ["Spam filtering: each e-mail a vector of word counts, labelled spam or not.",
           "Deciding whether a tumour is benign or malignant from its measurements.",
           "Credit scoring: approve or refuse a loan from income and history.",
           "I did not have time for this one.",
           "顧客が解約するかどうかを利用履歴から予測する。",
           "Detectar fraude em transações de cartão de crédito."]


def hand_in(answer: str) -> SubmissionResult:
    """Week01 graded: tasks 1 and 2 by the tests, task 3 to mark by hand."""
    tasks = [TaskResult(1, 40.0, 40.0), TaskResult(2, 20.0, 20.0),
             TaskResult(3, 0.0, 20.0, manual=True, answer_sha256=str(hash(answer)))]
    return SubmissionResult("x", "x", Status.GRADED, tasks=tasks, week="week01")


@pytest.fixture(scope="module")
def context(lms: Lms) -> str:
    """The course's hand-ins: six students' week01, graded, task 3 unmarked."""
    store = lms.app.state.store
    context = f"{lms.platform.base}|{lms.platform.registration().get_deployment_id()}|{COURSE}"
    answers = dict(zip(STUDENTS, ANSWERS, strict=True))
    for student in STUDENTS:
        store.remember_user(context, student, f"User {student}", None)
        store.submit(context=context, user=student, week="week01", content=notebook(answers[student]),
                     policy=WeekPolicy(), now=now())
    while (attempt := store.claim()) is not None:
        store.record_result(attempt.id, hand_in(answers[attempt.user]), week_title="week01")
    return context


def open_markers_page(lms: Lms, browser: Any, user: str) -> tuple[Any, Any]:
    """``user`` opens the activity from the LMS as an instructor, then, from the keyboard, the
    week's markers page from its report."""
    page = lms.open_activity(browser, user, "instructor")
    tool = lms.tool_frame(page)
    tab_to(page, "#markers", tool)
    return page, navigate(lms, page)


def open_queue(lms: Lms, page: Any, user: str) -> Any:
    """From the markers page, ``user``'s queue, then its task 3: the first answer theirs to mark."""
    tab_to(page, f"#shares a[href$='marker={user}']", lms.tool_frame(page))
    tool = navigate(lms, page)
    tab_to(page, "#task-3", tool)
    return navigate(lms, page)


def in_view(tool: Any) -> int:
    return int(tool.locator("#marking input[name=at]").input_value())


def test_two_markers_split_the_week_and_mark_their_own_queues_at_once(lms: Lms, context: str,
                                                                      chromium: Any) -> None:
    store = lms.app.state.store
    browsers = {user: chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 900})
                for user in MARKERS}
    try:
        open_markers_page(lms, browsers["mb-abe"], "mb-abe")  # Abe launches once: he is a marker now
        page, tool = open_markers_page(lms, browsers["mb-tess"], "mb-tess")
        assert_accessible(page, "the markers page", frames=lms.tool_url)
        for box in tool.locator("#split input[type=checkbox]").all():  # tick Tess and Abe, from the keyboard
            value = box.get_attribute("value")
            tab_to(page, f"#split input[value='{value}']", tool)
            if value in MARKERS and not box.is_checked():
                page.keyboard.press("Space")
        tab_to(page, "#split button", tool)
        tool = navigate(lms, page)
        tool.locator("#split-done").filter(has_text="The marking of 6 hand-ins is split among the markers.").wait_for()
        split = assignments(store, context, "week01")
        assert sorted(split.values()) == sorted(MARKERS * 3)
        assert tool.locator("#shares").inner_text().count("0 of 3 marked") == 2
        assert_accessible(page, "the markers page after a split", frames=lms.tool_url)
        ids = {a.id: a.user for a in store.week_attempts(context=context, week="week01")}

        pages = {"mb-tess": page, "mb-abe": open_markers_page(lms, browsers["mb-abe"], "mb-abe")[0]}
        tools = {user: open_queue(lms, pages[user], user) for user in MARKERS}
        seen: dict[str, list[str]] = {user: [] for user in MARKERS}
        for _ in range(3):  # in turns: each saves an answer of their queue while the other is on theirs
            for user in MARKERS:
                tool = tools[user]
                seen[user].append(ids[in_view(tool)])
                tool.locator("#points").focus()
                pages[user].keyboard.type("15")
                tools[user] = tool = navigate(lms, pages[user])  # Enter: the form's first button, mark the answer in view
                tool.locator("#status").filter(has_text="answers marked").wait_for()
        assert {user: sorted(students) for user, students in seen.items()} == {
            user: sorted(s for s, m in split.items() if m == user) for user in MARKERS}  # each their own three
        assert all("3 of 3 marked" in tools[user].locator("#progress").inner_text() for user in MARKERS)
        marks = store.gradebook.manual_marks("week01")
        by = {ids[int(key.removeprefix("attempt-"))]: mark[3].marker for key, mark in marks.items()}
        assert by == split  # every mark names the marker who saved it
        page, tool = open_markers_page(lms, browsers["mb-tess"], "mb-tess")
        assert tool.locator("#shares").inner_text().count("3 of 3 marked") == 2
    finally:
        for browser in browsers.values():
            browser.close()
