"""The service's pages in the learner's language, in a real browser (Debian's chromium through
Playwright, inside the stand-in LMS's iframe): a learner launched with the LMS shown in
Japanese, Portuguese, Spanish or English (``launch_presentation.locale``, in the forms LMSs
write it) reads the week's page, a refused upload and a refused page in that language, from the framework's gettext
catalogs, with ``<html lang>`` saying so and no axe violation (WCAG 2.1 AA)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from autograder.course import Course
from autograder.i18n.languages import framework_translations, translations
from autograder.i18n.runtime import untranslated
from tests.helpers import assert_accessible
from tests.service.lms import Lms

pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
pytestmark = [pytest.mark.lms(grading=False), pytest.mark.slow]

# What the LMS sends, and the course language the pages must then speak.
LOCALES = [("ja_JP", "ja"), ("pt-BR", "pt"), ("es_419", "es"), ("en_US", "en")]
CJK_FONT = "Noto Sans CJK JP"


def catalog(language: str) -> Any:
    """``_`` of ``language``: the framework's catalog (English: the source text)."""
    translations = framework_translations(language)
    return untranslated if translations is None else translations.gettext


@pytest.mark.parametrize(("locale", "language"), LOCALES)
def test_a_learner_reads_the_week_and_a_refusal_in_the_lms_language(lms: Lms, chromium: Any, course: Course,
                                                                     locale: str, language: str) -> None:
    _ = catalog(language)
    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    page = lms.open_activity(context, f"s-lang-{language}", "learner", locale=locale)
    tool = lms.tool_frame(page)
    tool.locator("#upload").wait_for()
    assert tool.evaluate("document.documentElement.lang") == language
    headings = tool.locator("h2").all_inner_texts()
    assert _("Upload your notebook") in headings and _("How this week is scored") in headings
    if language != "en":
        assert _("Upload your notebook") != "Upload your notebook"
        assert "Upload your notebook" not in headings
    week = course.week("week01")
    in_its_language = translations(week, language)  # the week's title as its notebook in the language has it
    assert tool.locator("h1").inner_text() == (in_its_language.gettext(week.title) if in_its_language else week.title)
    if language == "ja":
        assert tool.locator("h1").inner_text() != week.title
    rules = tool.locator("#rules").inner_text()
    budget = _("Your code runs with a budget of CPU time: {cell} seconds for each notebook cell and {call} "
               "seconds for each call a check makes to it. Code that takes longer is stopped, and the checks "
               "that need it fail.").format(cell=30, call=10)
    assert budget in rules
    assert CJK_FONT in tool.evaluate("getComputedStyle(document.body).fontFamily")
    if language == "ja":  # the font the stack names is there to draw it (fonts-noto-cjk)
        families = subprocess.run(["fc-list", ":lang=ja", "family"], capture_output=True, text=True,
                                  check=True).stdout
        assert re.search(rf"^{re.escape(CJK_FONT)}(,|$)", families, re.MULTILINE), families
    assert_accessible(page, f"{locale} week page", frames=lms.tool_url)

    # an upload refused (not a notebook): the refusal's words, formatted, from the same catalog
    tool.locator("#notebook").set_input_files(files=[{"name": "notes.txt", "mimeType": "text/plain",
                                                      "buffer": b"my answers"}])
    with page.expect_event("framenavigated"):
        tool.locator("#upload button").click()
    tool = lms.tool_frame(page)
    assert tool.locator("#error").inner_text() == _(
        "{file} is not a notebook: upload the week's .ipynb file (in Jupyter: File > Download as > Notebook)."
    ).format(file="'notes.txt'")
    assert tool.evaluate("document.documentElement.lang") == language
    assert_accessible(page, f"{locale} refused upload", frames=lms.tool_url)

    tool.goto(f"{lms.tool_url}/instructor/week01")  # a learner on the instructors' page: refused
    refusal = tool.locator("#error").inner_text()
    assert refusal == _("This page is for the course's instructors (the Instructor role in the LMS).")
    assert tool.evaluate("document.documentElement.lang") == language
    assert_accessible(page, f"{locale} refusal page", frames=lms.tool_url)
    tool.goto(f"{lms.tool_url}/week/week02")  # a week this session was not launched into: refused
    assert tool.locator("#error").inner_text() == _(
        "This page was not opened from {week}'s activity: open {week} from the course page in the LMS."
    ).format(week="week02")
    context.close()

