"""An instructor overrides an autograded task's points on one attempt
(``autograder/service/routes/overrides.py``): through the stand-in LMS, the new counted
score reaches the LMS's scores once, the student's feedback page shows the reason, and
removing the override sends the checks' score back; bad input is refused saying what to fix;
the page works from the keyboard alone in Chromium with no axe violation (screenshots in
tests/artefacts/). The web app runs
without graders (results are recorded into its store as the runner records them) and a real
outbox sends the scores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.outbox import Outbox
from tests.helpers import assert_accessible, focus_outline
from tests.service.lms import Lms
from tests.service.web import Browser, forms, wait_until

pytestmark = pytest.mark.lms(grading=False)
ARTEFACTS = Path(__file__).resolve().parents[2] / "artefacts"  # screenshots for a person to look at (not committed)


@pytest.fixture(scope="module")
def outbox(lms: Lms) -> Iterator[Outbox]:
    """The service's outbox on the module's store, looking for due posts every 0.2 s (the web
    app alone has no grading service to wake it)."""
    with Outbox(lms.app.state.store, lms.app.state.tool.sender, poll_s=0.2) as running:
        yield running


def hand_in(lms: Lms, user: str) -> tuple[Browser, int]:
    """``user`` launches week01 and uploads a notebook; its result is recorded as the runner
    would: task 1 autograded, 1 of 4 points; task 2 marked by hand, 5 of 6. Their browser and
    the attempt's id."""
    browser, page = lms.launch(user)
    csrf = next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]
    content = json.dumps({"cells": [], "metadata": {"user": user}, "nbformat": 4, "nbformat_minor": 5}).encode()
    reply = browser.client.post(f"{lms.tool_url}/week/week01/upload", data={"csrf": csrf}, follow_redirects=False,
                                files={"notebook": ("week01.ipynb", content, "application/x-ipynb+json")})
    assert reply.status_code == 303, reply.text
    store = lms.app.state.store
    attempt = store.claim()
    assert attempt is not None and attempt.user == user
    tasks = [TaskResult(1, 1.0, 4.0, title="Perceptron"), TaskResult(2, 5.0, 6.0, manual=True, marked=True)]
    store.record_result(attempt.id, SubmissionResult("x", "x", Status.GRADED, tasks=tasks, week="week01"),
                        week_title="week01")
    return browser, attempt.id


def scores(lms: Lms, user: str) -> list[dict[str, Any]]:
    return [s for s in lms.platform.scores if s["userId"] == user]


@pytest.mark.slow
def test_an_override_reaches_the_lms_once_and_removing_it_sends_the_checks_score_back(lms: Lms,
                                                                                      outbox: Outbox) -> None:
    learner, attempt = hand_in(lms, "ov-ann")
    graded = wait_until(lambda: scores(lms, "ov-ann"))
    assert [(s["scoreGiven"], s["scoreMaximum"], s["gradingProgress"]) for s in graded] == [(6, 10, "FullyGraded")]

    teacher, _ = lms.launch("ov-teacher", role="instructor")
    page = teacher.get(f"{lms.tool_url}/attempt/{attempt}")
    assert f'href="/instructor/week01/attempts/{attempt}/overrides"' in page.text  # from the attempt's page
    page = teacher.get(f"{lms.tool_url}/instructor/week01/attempts/{attempt}/overrides")
    assert [f["id"] for f in forms(page.text)] == ["override-1"]  # task 2 is marked by hand: no form
    assert "The checks gave 1 of 4 points." in page.text
    reason = "test_fit's tolerance was too tight: your fit is right."
    saved = teacher.submit(page, "override-1", data={"points": "3,5", "reason": reason})
    assert saved.status_code == 200 and str(saved.url).endswith("?changed=1#task-1")
    assert "Task 1: override saved" in saved.text and "Overridden to 3.5 by User ov-teacher on" in saved.text
    assert [f["id"] for f in forms(saved.text)] == ["override-1", "remove-1"]

    posted = wait_until(lambda: len(scores(lms, "ov-ann")) == 2 and scores(lms, "ov-ann"))
    assert (posted[-1]["scoreGiven"], posted[-1]["gradingProgress"]) == (8.5, "FullyGraded")
    store = lms.app.state.store
    context = store.attempt(attempt).context
    ours = [p.id for p in store.posts(context=context) if p.user == "ov-ann"]
    again = teacher.submit(saved, "override-1", data={"points": "3.5", "reason": reason})  # the same points again
    assert again.status_code == 200  # the counted score did not change: nothing more to send
    assert [p.id for p in store.posts(context=context) if p.user == "ov-ann"] == ours and len(ours) == 2
    assert lms.platform.refused_scores == []

    feedback = learner.get(f"{lms.tool_url}/attempt/{attempt}/feedback").text
    assert "Your instructor changed this task&#39;s points: 3.5 in place of the 1 the checks gave." in feedback
    assert "test_fit&#39;s tolerance was too tight: your fit is right." in feedback
    assert "3.5 / 4" in feedback and "8.5" in feedback

    removed = teacher.submit(again, "remove-1")
    assert removed.status_code == 200 and "Task 1: override removed" in removed.text
    assert [f["id"] for f in forms(removed.text)] == ["override-1"]
    back = wait_until(lambda: len(scores(lms, "ov-ann")) == 3 and scores(lms, "ov-ann"))
    assert back[-1]["scoreGiven"] == 6
    assert "Your instructor changed" not in learner.get(f"{lms.tool_url}/attempt/{attempt}/feedback").text


def test_an_override_that_cannot_stand_is_refused_saying_what_to_fix(lms: Lms) -> None:
    learner, attempt = hand_in(lms, "ov-bob")
    teacher, _ = lms.launch("ov-teacher", role="instructor")
    url = f"{lms.tool_url}/instructor/week01/attempts/{attempt}/overrides"
    page = teacher.get(url)
    csrf = forms(page.text)[0]["fields"]["csrf"]
    cases = [(1, {"points": "lots", "reason": "x"}, "Points: &#39;lots&#39; is not a number"),
             (1, {"points": "4.5", "reason": "x"}, "4.5 points for task 1 of &#39;attempt-"),
             (1, {"points": "2", "reason": "  "}, "needs a reason: the student reads it"),
             (2, {"points": "2", "reason": "x"}, "task 2 of week01 is marked by hand: give it a mark instead"),
             (9, {"points": "2", "reason": "x"}, "has no task 9")]
    for task, data, says in cases:
        reply = teacher.client.post(f"{url}/{task}", data={"csrf": csrf, **data})
        assert reply.status_code == 400 and says in reply.text, (task, data, reply.text)
        assert "gradebook.sqlite" not in reply.text  # the service's file is no business of the instructor's
        assert f'href="/instructor/week01/attempts/{attempt}/overrides"' in reply.text  # the way back
    nothing = teacher.client.post(f"{url}/1/remove", data={"csrf": csrf})
    assert nothing.status_code == 400 and "has no override to remove" in nothing.text
    portuguese, _ = lms.launch("ov-teacher-pt", role="instructor", locale="pt_BR")
    page = portuguese.get(url)  # the tasks titled from the course in Portuguese, not from the result ("Perceptron")
    assert "Tarefa 1: a atualização do perceptron" in page.text and "Perceptron" not in page.text
    said = portuguese.client.post(f"{url}/1", data={"csrf": forms(page.text)[0]["fields"]["csrf"], "points": "2",
                                                    "reason": " "})
    assert said.status_code == 400 and "exige um motivo: o estudante o lê ao lado dos novos pontos" in said.text
    assert "gradebook.sqlite" not in said.text
    assert teacher.client.post(f"{url}/1", data={"csrf": "forged", "points": "2", "reason": "x"}).status_code == 403
    elsewhere = teacher.get(f"{lms.tool_url}/instructor/week02/attempts/{attempt}/overrides")
    assert elsewhere.status_code == 404 and "no such attempt in week02" in elsewhere.text
    assert teacher.get(f"{lms.tool_url}/instructor/week01/attempts/{2**70}/overrides").status_code == 404
    assert learner.get(url).status_code == 403
    learner_csrf = forms(learner.get(f"{lms.tool_url}/week/week01").text)[0]["fields"]["csrf"]
    refused: httpx.Response = learner.client.post(f"{url}/1", data={"csrf": learner_csrf, "points": "4",
                                                                    "reason": "I say so"})
    assert refused.status_code == 403
    assert lms.app.state.store.gradebook.overrides("week01", [f"attempt-{attempt}"]) == {}


@pytest.mark.slow
def test_an_instructor_overrides_and_removes_it_from_the_keyboard_with_no_axe_violation(lms: Lms,
                                                                                         chromium: Any) -> None:
    _, attempt = hand_in(lms, "ov-eve")
    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    errors: list[str] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    page = lms.open_activity(context, "ov-teacher", "instructor")
    tool = lms.tool_frame(page)
    tool.goto(f"{lms.tool_url}/attempt/{attempt}")
    tool.locator("#overrides").focus()
    page.keyboard.press("Enter")
    tool.locator("#points-1").wait_for()
    assert_accessible(page, "the overrides page", frames=lms.tool_url)

    tool.locator("#points-1").focus()
    assert focus_outline(tool)
    page.keyboard.type("4")
    page.keyboard.press("Tab")
    page.keyboard.type("The hidden test expected the wrong shape.")
    page.keyboard.press("Tab")
    assert tool.evaluate("document.activeElement.textContent") == "Override task 1"
    assert focus_outline(tool)
    page.keyboard.press("Enter")
    status = tool.locator("#status")
    status.filter(has_text="Task 1: override saved").wait_for()
    assert status.get_attribute("role") == "status"
    assert lms.app.state.store.attempt(attempt).score == 9
    assert_accessible(page, "the overrides page with an override", frames=lms.tool_url)
    ARTEFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / "service-overrides.png"), full_page=True)

    tool.goto(f"{lms.tool_url}/attempt/{attempt}")  # the feedback page inside it shows the reason
    feedback = tool.frame_locator("#feedback")
    feedback.get_by_text("The hidden test expected the wrong shape.").wait_for()
    assert_accessible(page, "the feedback page with an override", frames=lms.tool_url)
    page.screenshot(path=str(ARTEFACTS / "service-overrides-feedback.png"), full_page=True)
    tool.locator("#overrides").focus()
    page.keyboard.press("Enter")
    tool.locator("#remove-1 button").focus()
    page.keyboard.press("Enter")
    status.filter(has_text="Task 1: override removed").wait_for()
    assert lms.app.state.store.attempt(attempt).score == 6
    context.close()
    assert errors == []
