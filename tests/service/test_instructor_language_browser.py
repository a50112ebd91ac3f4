"""The instructor's pages in the instructor's language, in a real browser (Debian's chromium
through Playwright, inside the stand-in LMS's iframe): an instructor launched with the LMS
shown in Japanese (``launch_presentation.locale`` ``ja_JP``) reads the live report and the
marking page in Japanese, from the framework's gettext catalog, with ``<html lang="ja">``
and no axe violation (WCAG 2.1 AA). Without a locale the pages fall back to course.toml's
``instructor`` language, which the other service tests read in English. The registration
help, which no launch precedes, follows the browser's ``Accept-Language``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from autograder.course import Course
from autograder.i18n.languages import framework_translations
from autograder.service.locales import week_title
from tests.helpers import assert_accessible
from tests.service.lms import Lms

pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
pytestmark = [pytest.mark.lms(grading=False), pytest.mark.slow]
ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"


def test_an_instructor_launched_in_japanese_reads_the_report_and_marking_in_japanese(lms: Lms, course: Course,
                                                                                      chromium: Any) -> None:
    translations = framework_translations("ja")
    assert translations is not None
    _ = translations.gettext
    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    page = lms.open_activity(context, "t-lang-ja", "instructor", locale="ja_JP")
    tool = lms.tool_frame(page)
    tool.locator("#report").wait_for()
    assert tool.evaluate("document.documentElement.lang") == "ja"
    week = course.week("week01")  # the week's title from its catalog, as its Japanese notebook has it
    assert tool.locator("h1").inner_text().startswith(week_title(week, "ja")) and week_title(week, "ja") != week.title
    assert tool.locator("#results thead th").all_inner_texts() == [  # the batch report's table, no task yet
        _("Student"), _("Status"), _("Score"), _("Attempts"), _("Counted"), _("Timeouts"), _("Time"), _("Messages")]
    assert tool.locator("#regrade").inner_text() == _("Regrade the week") != "Regrade the week"
    headings = tool.locator("h2").all_inner_texts()
    assert _("Scores sent to the LMS") in headings and "Scores sent to the LMS" not in headings
    assert _("Students ({count})").format(count=0) in headings
    assert_accessible(page, "ja_JP instructor's report", frames=lms.tool_url)
    page.screenshot(path=str(ARTEFACTS / "service-instructor-ja.png"), full_page=True)

    with page.expect_event("framenavigated"):
        tool.locator("#mark").click()  # the marking page keeps the session's language
    tool = lms.tool_frame(page)
    assert tool.locator("h1").inner_text() == _("Marking the hand-graded tasks")
    assert tool.evaluate("document.documentElement.lang") == "ja"
    assert tool.locator("main p.muted").inner_text() == _("No graded attempt has a task to mark yet.")
    context.close()


def test_the_registration_help_follows_the_browsers_language_else_the_instructors(lms: Lms, course: Course) -> None:
    translations = framework_translations("ja")
    assert translations is not None
    menu = "Site administration › Plugins › Activity modules › External tool › Manage tools"
    client = lms.browser().client
    japanese = client.get(f"{lms.tool_url}/lti/config", headers={"Accept-Language": "ja-JP,ja;q=0.9,en;q=0.5"})
    assert re.search(r'<html lang="([^"]*)"', japanese.text)[1] == "ja"  # type: ignore[index]
    assert translations.gettext(menu) in japanese.text and menu not in japanese.text
    other = client.get(f"{lms.tool_url}/lti/config", headers={"Accept-Language": "fr-CH, fr;q=0.9"})
    assert re.search(r'<html lang="([^"]*)"', other.text)[1] == course.languages.instructor  # type: ignore[index]
