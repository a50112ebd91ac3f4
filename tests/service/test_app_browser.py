"""The service in a real browser, inside the LMS's iframe as Moodle shows it: Debian's
chromium, headless, driven by Playwright.  A student uploads a notebook and reads the
feedback; an instructor marks a hand-graded task.  Screenshots go to tests/artefacts/
(not committed) for a person to look at."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.course import Course
from tests.service.lms import Lms, register_and_add_week, running_lms

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: "
                                "run scripts/install-system-packages (apt-get install chromium)")
ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"
NOTEBOOK = Path(__file__).resolve().parents[2] / "solutions" / "week01" / "en" / "week01.ipynb"  # answers every task


@pytest.fixture(scope="module")
def lms(tmp_path_factory: pytest.TempPathFactory, course: Course) -> Iterator[Lms]:
    with running_lms(tmp_path_factory.mktemp("browser"), course) as running:
        register_and_add_week(running)
        yield running


def test_a_student_uploads_and_reads_the_feedback_then_the_instructor_marks(lms: Lms) -> None:
    ARTEFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{lms.platform_url}/course?user=s-browser&role=learner&link={lms.activity_link}")
        tool = page.frame_locator("iframe#tool")
        tool.locator("#upload input[type=file]").set_input_files(str(NOTEBOOK))
        tool.locator("#upload button").click()
        tool.locator("#score").wait_for(timeout=120_000)  # the page refreshes itself until graded
        feedback = tool.frame_locator("iframe#feedback")
        feedback.locator("body").wait_for()
        assert "The perceptron" in feedback.locator("body").inner_text()
        page.screenshot(path=str(ARTEFACTS / "service-student-feedback.png"), full_page=True)

        teacher = context.new_page()
        teacher.goto(f"{lms.platform_url}/course?user=t-browser&role=instructor&link={lms.activity_link}")
        staff = teacher.frame_locator("iframe#tool")
        staff.locator("#mark").click()
        first = staff.locator("#marking input[type=number]").first
        first.fill("15")
        staff.locator("#marking textarea").first.fill("Clear argument; say why the data must be separable.")
        teacher.screenshot(path=str(ARTEFACTS / "service-instructor-marking.png"), full_page=True)
        staff.locator("#marking button").click()
        staff.locator("#marking").wait_for()
        assert staff.locator("#marking input[type=number]").first.input_value() == "15"
        browser.close()
    assert errors == []
