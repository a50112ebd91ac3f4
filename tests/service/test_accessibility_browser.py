"""Every page ``autograder serve`` shows meets WCAG 2.1 AA, checked in a real browser: axe-core
(levels A and AA, tests/helpers.py) in Debian's chromium through Playwright, inside the LMS's
iframe as Moodle shows the tool; and the students' and instructors' main paths done with the
keyboard alone (Tab, Shift+Tab, Enter, Space, arrows), the grading announced by a live region.

A student of each of the four languages hands in that language's notebook, so the feedback
inside the tool's iframe is checked in each language; the LMS is shown to each in that language
(``launch_presentation.locale``), so the upload and attempt pages around the feedback are in it too. To check a new page, add its path to ``INSTRUCTOR_PAGES`` (or a
student's to ``STUDENT_PAGES``). Screenshots go to tests/artefacts/ (not committed).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from autograder.i18n.languages import framework_translations
from autograder.i18n.runtime import untranslated
from tests.helpers import assert_accessible, axe_violations
from tests.service.keyboard import navigate, press_until
from tests.service.lms import Lms

pytestmark = pytest.mark.sandbox

pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"
SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions" / "week01"
LANGUAGES = ("en", "ja", "pt", "es")
LOCALES = {"en": "en", "ja": "ja", "pt": "pt_br", "es": "es_mx"}  # as Moodle sends its users' languages
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
# The tool's pages an instructor opens, checked after the students have handed in ({attempt}: one of theirs).
INSTRUCTOR_PAGES = ("/instructor/week01", "/instructor/week01/marking", "/instructor/week01/marking/3",
                    "/instructor/week01/regrade", "/attempt/{attempt}",
                    "/instructor/week01/attempts/{attempt}/overrides")
# A student's pages besides the upload page and the attempt page their path goes through.
STUDENT_PAGES: tuple[str, ...] = ()


def test_students_upload_and_read_feedback_by_keyboard_in_each_language(lms: Lms, chromium: Any) -> None:
    """Launch, Tab to the file field, Space to choose the notebook, Tab and Enter to upload; the
    attempt page says queued, then graded, in its live region without reloading; the feedback
    in its language. Every page on the way: no axe violation."""
    ARTEFACTS.mkdir(exist_ok=True)
    announced = 0
    choosers: list[Any] = []  # every file chooser a page opened, in order
    for language in LANGUAGES:
        context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
        page = lms.open_activity(context, f"s-a11y-{language}", "learner", locale=LOCALES[language])
        translations = framework_translations(language)
        _ = translations.gettext if translations is not None else untranslated
        # Playwright turns Chromium's file-chooser interception on when the first listener comes,
        # without waiting for it: listening from the start, not only around the key press, keeps a
        # loaded machine's Space from reaching the field before the interception does.
        page.on("filechooser", lambda opened: choosers.append(opened))
        tool = lms.tool_frame(page)
        tool.locator("#upload").wait_for()
        assert_accessible(page, f"{language} upload page", frames=lms.tool_url)
        for path in STUDENT_PAGES:
            tool.goto(lms.tool_url + path)
            assert_accessible(page, f"{language} {path}", frames=lms.tool_url)

        press_until(page, tool, "#notebook")
        with page.expect_file_chooser() as chooser:
            page.keyboard.press("Space")
        assert choosers[-1] is chooser.value, "Space opened a file chooser the page did not report"
        chooser.value.set_files(str(SOLUTIONS / language / "week01.ipynb"))
        press_until(page, tool, "#upload button")
        tool = navigate(lms, page)
        state = tool.locator("#state")
        state.wait_for()
        assert state.get_attribute("role") == "status"
        first = state.inner_text()
        assert_accessible(page, f"{language} attempt page ({first[:30]})", frames=lms.tool_url)
        waited = tool.locator("#score").count() == 0  # queued or being graded when the page came
        tool.evaluate("window.notReloaded = true")
        tool.locator("#score").wait_for(timeout=180_000)
        assert tool.evaluate("document.documentElement.lang") == language
        assert state.inner_text().startswith(_("Graded:"))
        if waited:  # announced: the live region's words changed, the page was not reloaded
            assert tool.evaluate("window.notReloaded === true"), "the attempt page reloaded instead of announcing"
            announced += 1
        feedback = page.frame_locator("iframe#tool").frame_locator("iframe#feedback")
        feedback.locator("h1").wait_for()
        frame = next(f for f in page.frames if f.url.endswith("/feedback"))
        assert frame.evaluate("document.documentElement.lang") == language
        if language == "ja":
            assert CJK.search(feedback.locator("main").inner_text())
        assert_accessible(page, f"{language} graded attempt page", frames=lms.tool_url)
        page.screenshot(path=str(ARTEFACTS / f"a11y-service-feedback-{language}.png"), full_page=True)
        context.close()
    assert announced, "no upload was seen waiting: the live region's change went unchecked"


def test_instructors_mark_by_keyboard_and_every_instructor_page_passes(lms: Lms, chromium: Any) -> None:
    """After the students' test: the instructor's pages have no axe violation; Tab to the marking
    link, Enter, Tab to task 3's link, Enter, Tab to the points field, type, Tab to the comment,
    type, Tab to "Mark this answer", Enter: the mark is saved."""
    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    page = lms.open_activity(context, "t-a11y", "instructor")
    tool = lms.tool_frame(page)
    tool.locator("#report").wait_for()
    attempt = tool.locator("#report a").first.get_attribute("href").rsplit("/", 1)[1]  # type: ignore[union-attr]
    for path in INSTRUCTOR_PAGES:
        tool.goto(lms.tool_url + path.format(attempt=attempt))
        tool.locator("h1").wait_for()
        assert_accessible(page, path, frames=lms.tool_url)

    tool.goto(lms.tool_url + "/instructor/week01")
    page.screenshot(path=str(ARTEFACTS / "a11y-service-instructor.png"), full_page=True)
    press_until(page, tool, "#mark")
    tool = navigate(lms, page)
    tool.locator("#tasks").wait_for()
    press_until(page, tool, "#task-3")
    tool = navigate(lms, page)
    tool.locator("#marking").wait_for()
    press_until(page, tool, "#marking #points")
    page.keyboard.type("15")
    press_until(page, tool, "#marking #comment")
    page.keyboard.type("Clear argument; say why the data must be separable.")
    page.keyboard.press("Shift+Tab")  # back to the points, as a marker checks what they typed
    assert tool.evaluate("document.activeElement.id") == "points"
    press_until(page, tool, "#mark-answer")
    page.screenshot(path=str(ARTEFACTS / "a11y-service-marking.png"), full_page=True)
    marked = tool.locator("#marking input[name=at]").input_value()
    tool = navigate(lms, page)
    tool.locator("#status").filter(has_text="1 answers marked.").wait_for()  # and on to the next answer
    tool.goto(f"{lms.tool_url}/instructor/week01/marking/3?at={marked}")
    assert "Marked: 15 of 20 points" in tool.locator("#answer").inner_text()
    context.close()


def test_the_pages_around_the_launch_pass(lms: Lms, chromium: Any) -> None:
    """The registration help (/lti/config), the page after registering, the deep-linking
    picker, and an error page (no session): no axe violation."""
    context = chromium.new_context(ignore_https_errors=True)
    page = context.new_page()
    found = []
    page.goto(f"{lms.tool_url}/lti/config")
    found += [f"config: {v}" for v in axe_violations(page)]
    page.goto(f"{lms.tool_url}/week/week01")  # no session: the error page
    assert page.locator("#error").count() == 1
    found += [f"error: {v}" for v in axe_violations(page)]
    page.set_content(lms.registered_page)
    assert page.locator("#registered").count() == 1
    found += [f"registered: {v}" for v in axe_violations(page)]
    page.goto(f"{lms.platform_url}/start?user=t-a11y&role=instructor&deep_link=true")
    page.locator("#pick").wait_for()
    found += [f"deep link: {v}" for v in axe_violations(page)]
    context.close()
    assert found == [], "\n".join(found)
