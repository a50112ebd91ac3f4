"""The service in a real browser, inside the LMS's iframe as Moodle shows it: Debian's
chromium, headless, driven by Playwright.  A student uploads a notebook and reads the
feedback; an instructor marks a hand-graded task.  Screenshots go to tests/artefacts/
(not committed) for a person to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.service.lms import Lms

pytestmark = pytest.mark.sandbox

ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"
NOTEBOOK = Path(__file__).resolve().parents[2] / "solutions" / "week01" / "en" / "week01.ipynb"  # answers every task


def test_a_student_uploads_and_reads_the_feedback_then_the_instructor_marks(lms: Lms, chromium: Any) -> None:
    ARTEFACTS.mkdir(exist_ok=True)
    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    errors: list[str] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    page = lms.open_activity(context, "s-browser", "learner")
    tool = lms.tool_frame(page)
    tool.locator("#upload input[type=file]").set_input_files(str(NOTEBOOK))
    tool.locator("#upload button").click()
    tool.locator("#score").wait_for(timeout=120_000)  # the page refreshes itself until graded
    feedback = page.frame_locator("iframe#tool").frame_locator("iframe#feedback")
    feedback.locator("body").wait_for()
    assert "The perceptron" in feedback.locator("body").inner_text()
    page.screenshot(path=str(ARTEFACTS / "service-student-feedback.png"), full_page=True)

    teacher = lms.open_activity(context, "t-browser", "instructor")
    staff = lms.tool_frame(teacher)
    staff.locator("#mark").click()
    staff.locator("#task-3").click()
    staff.locator("#marking #points").fill("15")
    staff.locator("#marking #comment").fill("Clear argument; say why the data must be separable.")
    teacher.screenshot(path=str(ARTEFACTS / "service-instructor-marking.png"), full_page=True)
    marked = staff.locator("#marking input[name=at]").input_value()
    staff.locator("#mark-answer").click()
    staff.locator("#status").filter(has_text="1 answers marked.").wait_for()  # and on to the next answer
    staff.goto(f"{lms.tool_url}/instructor/week01/marking/3?at={marked}")
    assert "Marked: 15 of 20 points" in staff.locator("#answer").inner_text()
    context.close()
    assert errors == []
