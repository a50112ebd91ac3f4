"""The service's pages in the learner's language, in a real browser (Debian's chromium through
Playwright, inside the stand-in LMS's iframe): a learner launched with the LMS shown in
Japanese, Portuguese, Spanish or English (``launch_presentation.locale``, in the forms LMSs
write it) reads the week's page, a refused upload and a refused page in that language, from the framework's gettext
catalogs, with ``<html lang>`` saying so and no axe violation (WCAG 2.1 AA); then uploads the
week's notebook in that language, waits in the queue and reads the feedback, the attempt page
in the framework's words and the feedback in the week's (issue 41). One service with one
grader for the module: the uploads are graded there."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from autograder.course import Course
from autograder.i18n.languages import framework_translations, translations
from autograder.i18n.runtime import untranslated
from tests.helpers import assert_accessible
from tests.service.lms import Lms

pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
pytestmark = [pytest.mark.lms(), pytest.mark.sandbox, pytest.mark.slow]

# What the LMS sends, and the course language the pages must then speak.
LOCALES = [("ja_JP", "ja"), ("pt-BR", "pt"), ("es_419", "es"), ("en_US", "en")]
CJK_FONT = "Noto Sans CJK JP"
SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions" / "week01"
# A tie (net input 0) predicted -1: task 1 loses its tie check and the checks that follow from
# it, and keeps the others, so the feedback has lines that passed and lines that failed.
TIES_TO_MINUS_ONE = ("np.where(self.net_input(X) >= 0, 1, -1)", "np.where(self.net_input(X) > 0, 1, -1)")
TIE = "A net input of exactly 0 predicts +1, in predict and in the update decision in fit"  # the tests' docstrings
TIE_HINT = "a sample with net input 0 and label +1 is classified correctly: fit should not update"
BIAS = "The bias w_[0] is updated too: it learns data that no line through the origin separates"
# How long the notebook uploaded first keeps the one grader busy, so the four uploads after it
# wait in the queue while their pages are read (a sleep costs no CPU budget).
HOLD_S = 12


def catalog(language: str) -> Any:
    """``_`` of ``language``: the framework's catalog (English: the source text)."""
    translations = framework_translations(language)
    return untranslated if translations is None else translations.gettext


def week_catalog(course: Course, language: str) -> Any:
    """``_`` of week01's feedback in ``language``: the week's catalog, then the framework's."""
    found = translations(course.week("week01"), language)
    return untranslated if found is None else found.gettext


def notebook(source: Path, *, change: tuple[str, str] | None = None, extra: str = "") -> bytes:
    """The notebook at ``source`` with one piece of its code replaced by another (found exactly
    once), or with one more code cell."""
    nb = json.loads(source.read_text(encoding="utf-8"))
    if change is not None:
        cells = [cell for cell in nb["cells"] if change[0] in "".join(cell["source"])]
        assert len(cells) == 1, f"{source}: {change[0]!r} is in {len(cells)} cells, not one"
        cells[0]["source"] = "".join(cells[0]["source"]).replace(*change)
    if extra:
        nb["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                            "source": extra})
    return json.dumps(nb, ensure_ascii=False).encode()


def upload(lms: Lms, page: Any, content: bytes) -> Any:
    """Choose ``content`` as the week's notebook and upload it; the tool's frame once the
    attempt page has come."""
    tool = lms.tool_frame(page)
    tool.locator("#notebook").set_input_files(files=[{"name": "week01.ipynb", "mimeType": "application/x-ipynb+json",
                                                      "buffer": content}])
    with page.expect_event("framenavigated"):
        tool.locator("#upload button").click()
    tool = lms.tool_frame(page)
    tool.locator("#state").wait_for()
    return tool


def words(text: str) -> str:
    return " ".join(text.split())


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
    budget = _("Your code runs with a budget of CPU time: {cell} seconds for each notebook cell, {call} seconds "
               "for each call a check makes to it and {notebook} seconds for the whole notebook. Code that takes "
               "longer is stopped, and the checks that need it fail.").format(cell=30, call=10, notebook=120)
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



def test_learners_upload_wait_in_the_queue_and_read_the_feedback_in_the_lms_language(lms: Lms, chromium: Any,
                                                                                      course: Course) -> None:
    """Each learner uploads the notebook in their language while another's is being graded: the
    attempt page says where it waits and that it updates itself, in the framework's catalog;
    graded, the feedback's headings and check lines are the week's catalog's, with lines that
    passed and lines that failed. Every page in its ``lang``, with no axe violation."""
    week = course.week("week01")
    holder = chromium.new_context(ignore_https_errors=True)
    holding = lms.open_activity(holder, "s-queue-holder", "learner", locale="en")
    pages = {}
    for locale, language in LOCALES:
        context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
        pages[language] = lms.open_activity(context, f"s-queue-{language}", "learner", locale=locale)
        lms.tool_frame(pages[language]).locator("#upload").wait_for()
    held = upload(lms, holding, notebook(SOLUTIONS / "en" / "week01.ipynb",
                                         extra=f"import time\ntime.sleep({HOLD_S})\n"))
    held.locator("#state.state-grading").wait_for(timeout=120_000)  # the one grader is busy for a while

    attempt_pages = {}
    for position, (_locale, language) in enumerate(LOCALES, start=1):
        _ = catalog(language)
        tool = attempt_pages[language] = upload(lms, pages[language], notebook(
            SOLUTIONS / language / "week01.ipynb", change=TIES_TO_MINUS_ONE))
        assert tool.evaluate("document.documentElement.lang") == language
        assert tool.locator("h1").inner_text() == _("Attempt {number}").format(number=1)
        state = words(tool.locator("#state").inner_text())
        assert state == (_("In the queue: number {position}.").format(position=position) + " "
                         + _("This page updates itself.")), f"{language}: {state} (the first upload done too soon?)"
        if language != "en":
            assert _("This page updates itself.") != "This page updates itself."
    for _locale, language in LOCALES:
        assert_accessible(pages[language], f"{language} attempt page in the queue", frames=lms.tool_url)

    for _locale, language in LOCALES:
        _, in_the_weeks = catalog(language), week_catalog(course, language)
        page, tool = pages[language], attempt_pages[language]
        tool.locator("#score").wait_for(timeout=180_000)
        state = words(tool.locator("#state").inner_text())
        assert state.startswith(_("Graded:")), state
        # tasks 3 and 4, 20 points each, are marked by hand
        assert _("Not final yet: {points} points are still to be marked by hand.").format(points=40) in state
        feedback = page.frame_locator("iframe#tool").frame_locator("iframe#feedback")
        feedback.locator("h1").wait_for()
        frame = next(f for f in page.frames if f.url.endswith("/feedback"))
        assert frame.evaluate("document.documentElement.lang") == language
        assert feedback.locator("h1").inner_text() == week.label(translations(week, language))
        assert feedback.locator("h3").all_inner_texts() == [
            in_the_weeks("Task {number}: {title}").format(number=task.number, title=in_the_weeks(task.title))
            for task in week.tasks]
        lines = feedback.locator("pre.output").all_inner_texts()
        failed = in_the_weeks("{check}: failed").format(check=in_the_weeks(TIE)) + f" ({in_the_weeks(TIE_HINT)})"
        passed = in_the_weeks("{check}: passed").format(check=in_the_weeks(BIAS))
        assert failed in lines and passed in lines, lines
        if language != "en":
            assert in_the_weeks(TIE_HINT) != TIE_HINT and in_the_weeks(BIAS) != BIAS
        assert_accessible(page, f"{language} feedback", frames=lms.tool_url)
        page.context.close()
    holder.close()
