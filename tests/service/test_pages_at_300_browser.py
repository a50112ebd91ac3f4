"""Every instructor page at the size of a real class, in a real browser: the class of 300
(tests/service/class_of_300.py: names and notebooks in English, Japanese, Portuguese and
Spanish) in a running service, each page opened in Debian's chromium through Playwright
inside the stand-in LMS's iframe by an instructor whose LMS speaks each of the four languages.

Each page, in each language: axe-core finds no WCAG 2.1 A/AA violation (on a page as big as
the live report, colour contrast in one language: ``BIG_PAGE``), it is shown within ``BOUND_S``
(generous: the machines that run this are shared and loaded; docs/ACCESSIBILITY.md says what
was measured), it is in the language (``<html lang>``, phrases of the language's catalog and
none of the English it translates), the students' names are in their own script with nothing
garbled or escaped twice, and a screenshot goes to tests/artefacts/ for a person to look at.

The pages are the app's own list: every GET route under ``/instructor/{name}`` that answers
with a page (not a download), so a new instructor page is swept without anyone adding it here;
a route with a path parameter this module does not know fails ``test_every_instructor_page_is_swept``.
"""

from __future__ import annotations

import functools
import json
import re
import string
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute

from autograder.course import Course
from autograder.formats.points import format_points
from autograder.i18n.catalog import read_catalog
from autograder.i18n.languages import framework_catalog_path, framework_translations
from autograder.i18n.runtime import untranslated
from autograder.service.locales import task_title, week_title
from autograder.service.markers import assignments
from autograder.service.outbox import Outbox
from autograder.service.routes import ROUTERS
from tests.helpers import assert_accessible
from tests.service.class_of_300 import LANGUAGES, WEEK, ClassOf300
from tests.service.keyboard import navigate, press_until
from tests.service.lms import Lms
from tests.service.web import wait_until

pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
pytestmark = [pytest.mark.lms(grading=False, in_memory=True), pytest.mark.slow]
ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"
LOCALES = {"en": "en", "ja": "ja", "pt": "pt_br", "es": "es_mx"}  # as Moodle sends its users' languages
BOUND_S = 10.0  # from the request to the page's load event, at 300 students, on a loaded machine
DOWNLOADS = (".zip", ".csv")
# axe's color-contrast rule takes ~10 s on the live report's 8,000 elements: a page that big has
# its contrast checked in one language (its colours are the same in all four), the rest in each
BIG_PAGE, CONTRAST_IN = 3000, "ja"
# a name of the class in each script; what garbled UTF-8 (read as Latin-1 or cp1252) or text escaped twice look like
SAMPLE_NAMES = ("田中 花子", "João Gonçalves", "Ángela Muñoz", "Liam O'Brien")
MOJIBAKE = re.compile("[\u00c2-\u00ef][\u0080-\u00bf\u0152-\u0178\u0192\u02c6-\u02dc\u2013-\u203a\u20ac\u2122]"
                      "|\ufffd|&(?:#x?[0-9a-fA-F]+|amp|quot|lt|gt);")


def instructor_pages() -> list[str]:
    """The paths of the instructor's pages the app serves, in order: the GET routes of the
    routers ``create_app`` includes (``routes.ROUTERS``), ``{name}`` the week's."""
    return [route.path.replace("{name}", WEEK) for router in ROUTERS for route in router.routes
            if isinstance(route, APIRoute) and "GET" in route.methods and route.path.startswith("/instructor/")
            and not route.path.endswith(DOWNLOADS)]


def fillers(class_of_300: ClassOf300) -> dict[str, str]:
    """The values of the instructor routes' other path parameters: a hand-graded task, and
    the latest attempt of a Japanese-named student (graded, its task 3 marked)."""
    return {"task": "3", "attempt_id": str(class_of_300.attempts[class_of_300.marked[1]][-1])}


def named(class_of_300: ClassOf300) -> str:
    """The name of the student whose attempt ``fillers`` opens."""
    return class_of_300.student(class_of_300.marked[1]).name


def parameters(path: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(path) if name]


PAGES = instructor_pages()
TIMINGS: dict[tuple[str, str], float] = {}


def test_every_instructor_page_is_swept() -> None:
    unknown = {name for page in PAGES for name in parameters(page)} - {"task", "attempt_id"}
    assert unknown == set(), f"say in fillers() which value of {unknown} the sweep opens"
    assert {"/instructor/week01", "/instructor/week01/marking"} <= set(PAGES)


@pytest.fixture(scope="module")
def instructor(lms: Lms, class_of_300: ClassOf300, chromium: Any) -> Iterator[dict[str, Any]]:
    """An instructor's browser page in the LMS per language (opened when first asked for)."""
    opened: dict[str, Any] = {}

    def page(language: str) -> Any:
        if language not in opened:
            context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 1000})
            opened[language] = lms.open_activity(context, f"t300-{language}", "instructor", locale=LOCALES[language])
        return opened[language]

    yield {"page": page}
    for page_ in opened.values():
        page_.context.close()
    ARTEFACTS.mkdir(exist_ok=True)  # what the figures in docs/ACCESSIBILITY.md come from
    (ARTEFACTS / "pages-300-seconds.json").write_text(json.dumps(
        {f"{language} {path}": round(seconds, 2) for (language, path), seconds in sorted(TIMINGS.items())}, indent=1))


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_instructors_page_at_300(lms: Lms, class_of_300: ClassOf300, instructor: dict[str, Any], language: str,
                                     path: str, course: Course) -> None:
    page = instructor["page"](language)
    tool = lms.tool_frame(page)
    address = path.format(**fillers(class_of_300))
    started = time.perf_counter()
    tool.goto(lms.tool_url + address, timeout=120_000)  # past the bound: the assertion below says so
    seconds = time.perf_counter() - started
    tool = lms.tool_frame(page)
    shown = tool.url.removeprefix(lms.tool_url)
    if shown.split("?")[0] != address:
        pytest.skip(f"{address} sends the browser on to {shown}, swept as itself")
    TIMINGS[language, path] = seconds
    assert seconds < BOUND_S, f"{path} took {seconds:.1f} s to show at 300 students"

    assert tool.evaluate("document.documentElement.lang") == language
    week = course.week(WEEK)  # titled from the week's catalog in the instructor's language
    assert tool.title().startswith(week_title(week, language) + ": "), tool.title()
    text = tool.locator("body").inner_text()
    assert not MOJIBAKE.search(text), MOJIBAKE.search(text)
    if language != "en":  # the page's words are the language's: its catalog's, not the English
        phrases = _phrases_on(text, language)
        assert phrases, f"{path} in {language} shows no phrase of the {language} catalog:\n{text[:400]}"
        english = _english_on(text, language)
        assert english == [], f"{path} in {language} shows English the catalog translates: {english}"
    if path == "/instructor/week01":  # the live report lists the class by name, each in its own script
        for name in SAMPLE_NAMES:
            assert name in text, f"{name} is not on the live report"
        translations = framework_translations(language)
        students = (translations.gettext if translations is not None else untranslated)("Students ({count})")
        assert students.format(count=len(class_of_300.students)) in text
        titles = tool.locator("#results thead th[title]").evaluate_all("cells => cells.map(c => c.title)")
        assert [task_title(week, task.number, language) for task in week.tasks] == titles[:4]  # not a result's
    if "/marking" in path:  # anonymous until the marker asks for names
        assert [s.name for s in class_of_300.students if s.name in text] == []
    if "{attempt_id}" in path:  # a page about one attempt names its student, in their script
        assert named(class_of_300) == SAMPLE_NAMES[0] and SAMPLE_NAMES[0] in text
    if path.endswith("/overrides"):  # a Japanese student's tasks, titled in the instructor's language all the same
        assert task_title(week, 1, language) in text
    ARTEFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / f"pages-300-{language}-{_file_name(path)}.png"))
    big = tool.evaluate("document.querySelectorAll('*').length") > BIG_PAGE
    assert_accessible(page, f"{language} {path} at 300", frames=lms.tool_url,
                      skip=("color-contrast",) if big and language != CONTRAST_IN else ())


def _phrases_on(text: str, language: str) -> list[str]:
    """The catalog's translated messages (whole, at least 12 characters, no placeholder) on the page."""
    return [translated for source, translated in _messages(language) if translated in text]


def _english_on(text: str, language: str) -> list[str]:
    """The catalog's English messages (whole, 12+ characters) on the page though translated."""
    return [source for source, translated in _messages(language) if source in text and source not in translated]


@functools.cache
def _messages(language: str) -> list[tuple[str, str]]:
    """(English, translation) of the framework catalog's whole messages of 12+ characters."""
    catalog = read_catalog(framework_catalog_path(language))
    return [(message.id, str(message.string)) for message in catalog
            if isinstance(message.id, str) and len(message.id) >= 12 and message.string and not message.fuzzy
            and message.string != message.id and "{" not in message.id and "%" not in message.id]


def _file_name(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.removeprefix("/instructor/")).strip("-")


def test_a_marker_marks_a_group_at_300_by_keyboard_alone_and_the_live_report_shows_it(
        lms: Lms, class_of_300: ClassOf300, instructor: dict[str, Any]) -> None:
    """From the live report: Tab to the marking link, Enter; Tab to task 3, Enter; Tab to
    "Unmarked answers only", Space, Tab to Show, Enter; then the page's keys, 1 (the rubric's
    first item) and g (the whole group in view). The page says how many were marked and its
    count moves by as many; asked for (Tab, Space, Tab, Enter), the next group's names are
    shown as written; the live report shows the marked students' new points for task 3."""
    store = lms.app.state.store
    store.gradebook.add_rubric_item(WEEK, 3, points=20, comment="Names a real classification problem")
    page = instructor["page"]("en")
    tool = lms.tool_frame(page)
    tool.goto(f"{lms.tool_url}/instructor/{WEEK}/marking/3")  # the groups are computed once, off the request
    for _ in range(60):
        if tool.locator("#grouping").count() == 0:
            break
        time.sleep(1)
        tool.goto(f"{lms.tool_url}/instructor/{WEEK}/marking/3")
    assert tool.locator("#grouping").count() == 0, "the groups of 294 answers were not computed within a minute"
    tool.goto(f"{lms.tool_url}/instructor/{WEEK}")

    press_until(page, tool, "#mark")
    tool = navigate(lms, page)
    press_until(page, tool, "#task-3")
    tool = navigate(lms, page)
    press_until(page, tool, "#filter-unmarked")
    page.keyboard.press("Space")
    press_until(page, tool, "#filters button")
    tool = navigate(lms, page)
    tool.locator("#marking").wait_for()
    before = _marked(tool.locator("#progress").inner_text())
    group = [int(value) for value in tool.locator("#marking input[name=group]").evaluate_all(
        "inputs => inputs.map(input => input.value)")]
    assert len(group) > 1, "the first unmarked answer is alone: no group to mark"
    tool.evaluate("document.activeElement.blur()")  # the keys act outside the fields, as after a click on the page
    page.keyboard.press("1")
    assert tool.locator("#apply-1").is_checked()
    tool = navigate(lms, page, "g")
    tool.locator("#status").filter(has_text=f"{len(group)} answers marked.").wait_for()
    assert _marked(tool.locator("#progress").inner_text()) == before + len(group)
    page.screenshot(path=str(ARTEFACTS / "pages-300-marked-a-group.png"))
    by_attempt = {attempt: class_of_300.student(user).name for user, attempts in class_of_300.attempts.items()
                  for attempt in attempts}
    press_until(page, tool, "#filter-names")  # the names, asked for: each in its own script
    page.keyboard.press("Space")
    press_until(page, tool, "#filters button")
    tool = navigate(lms, page)
    shown = tool.locator("#marking .members").inner_text()
    named = [int(value) for value in tool.locator("#marking input[name=group]").evaluate_all(
        "inputs => inputs.map(input => input.value)")]
    assert named and all(by_attempt[attempt] in shown for attempt in named)

    tool.goto(f"{lms.tool_url}/instructor/{WEEK}")
    report = tool.locator("#results")
    headers = report.locator("thead th").all_inner_texts()
    task3 = next(index for index, heading in enumerate(headers) if heading.startswith("T3"))
    for attempt in group:
        name = json.dumps(by_attempt[attempt], ensure_ascii=False)  # a CSS string, as JSON writes it
        row = report.locator("tbody tr", has=tool.locator(f"td[data-value={name}]"))
        assert float(row.locator("td").nth(task3).get_attribute("data-value") or "nan") == 20, by_attempt[attempt]


def _marked(progress: str) -> int:
    """The first count of a "212 of 300 marked" line."""
    return int(re.match(r"\d+", progress)[0])  # type: ignore[index]


SECOND = "t300-second"  # the second marker: the first is the English instructor of the sweep (t300-en)


def test_two_markers_split_the_class_and_mark_their_own_queues_at_300(lms: Lms, class_of_300: ClassOf300,
                                                                      instructor: dict[str, Any],
                                                                      chromium: Any) -> None:
    """A second instructor launches; the first splits the week's hand-ins between the two on
    the markers page from the keyboard; each opens their own queue of task 4 (no other test of
    the module marks it, so the walk's and the sweep's counts hold in any order) in their own
    browser and marks three answers, in turns: each saw only their own students, the markers
    page counts each one's three, and each of the six marks names who saved it."""
    store = lms.app.state.store
    second = chromium.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 1000})
    try:
        pages = {"t300-en": instructor["page"]("en"), SECOND: lms.open_activity(second, SECOND, "instructor")}
        page = pages["t300-en"]
        tool = lms.tool_frame(page)
        tool.goto(f"{lms.tool_url}/instructor/{WEEK}")
        press_until(page, tool, "#markers")
        tool = navigate(lms, page)
        for box in tool.locator("#split input[type=checkbox]").all():  # the two of us, from the keyboard
            value = box.get_attribute("value")
            press_until(page, tool, f"#split input[value='{value}']")
            if (value in pages) != box.is_checked():
                page.keyboard.press("Space")
        press_until(page, tool, "#split button")
        tool = navigate(lms, page)
        graded = len(class_of_300.students) - len(class_of_300.queued)
        tool.locator("#split-done").filter(has_text=f"The marking of {graded} hand-ins").wait_for()
        split = assignments(store, class_of_300.context, WEEK)
        shares = {marker: sorted(s for s, m in split.items() if m == marker) for marker in pages}
        assert sorted(split.values()) == sorted(list(pages) * (graded // 2)) and set(split) == {
            s.user for s in class_of_300.students if s.user not in class_of_300.queued}
        counted = _shares(tool, pages)  # of tasks 3 and 4 of each one's share: task 3 of some marked already

        tools = {}
        for marker, page_ in pages.items():  # each opens their own queue from the markers page, then task 4
            tool = lms.tool_frame(page_)
            tool.goto(f"{lms.tool_url}/instructor/{WEEK}/markers")
            press_until(page_, tool, f"#shares a[href$='marker={marker}']")
            tool = navigate(lms, page_)
            press_until(page_, tool, "#task-4")
            tools[marker] = tool = navigate(lms, page_)
            assert f"0 of {len(shares[marker])}" in tool.locator("#progress").inner_text()
        by_attempt = {attempt: user for user, attempts in class_of_300.attempts.items() for attempt in attempts}
        seen: dict[str, list[str]] = {marker: [] for marker in pages}
        for _ in range(3):  # in turns: each saves an answer of their queue while the other is on theirs
            for marker, page_ in pages.items():
                tool = tools[marker]
                seen[marker].append(by_attempt[int(tool.locator("#marking input[name=at]").input_value())])
                tool.locator("#points").focus()
                page_.keyboard.type("5")
                tools[marker] = tool = navigate(lms, page_)  # the form's first button: mark the answer in view
                tool.locator("#status").filter(has_text="answers marked").wait_for()
        for marker in pages:  # each saw three of their own students, and their count moved by three
            assert len(set(seen[marker])) == 3 and set(seen[marker]) <= set(shares[marker]), (marker, seen[marker])
            assert f"3 of {len(shares[marker])}" in tools[marker].locator("#progress").inner_text()
        marks = store.gradebook.manual_marks(WEEK)
        by = {by_attempt[int(key.removeprefix("attempt-"))]: mark[4].marker for key, mark in marks.items()
              if 4 in mark}
        assert by == {student: marker for marker in pages for student in seen[marker]}  # none lost, each named
        tool = lms.tool_frame(pages[SECOND])
        tool.goto(f"{lms.tool_url}/instructor/{WEEK}/markers")
        assert _shares(tool, pages) == {marker: (marked + 3, answers) for marker, (marked, answers) in counted.items()}
    finally:
        second.close()


def _shares(tool: Any, markers: Any) -> dict[str, tuple[int, int]]:
    """Each marker's "18 of 294 marked" on the markers page, as (marked, answers)."""
    counts = {}
    for marker in markers:
        row = tool.locator(f"#shares tr:has(a[href$='marker={marker}'])").inner_text()
        found = re.search(r"(\d+) of (\d+) marked", row)
        assert found, f"no count on the markers page for {marker}: {row}"
        counts[marker] = (int(found[1]), int(found[2]))
    return counts


def test_an_override_reaches_the_lms_once_at_300(lms: Lms, class_of_300: ClassOf300,
                                                 instructor: dict[str, Any]) -> None:
    """With the service's outbox sending (the class's scores, queued when the line item
    became known at the first instructor's launch, reach the LMS first): from one student's
    attempt page, Tab to its overrides, Enter; type task 1's points and a reason, Tab to its
    button, Enter. The stand-in LMS receives that student's new counted score once, and the
    student's feedback page, inside the attempt page, shows the reason."""
    store = lms.app.state.store
    context = class_of_300.context
    marked = store.gradebook.manual_marks(WEEK)  # nobody's mark of theirs to send alongside
    user = next(s.user for s in class_of_300.students if s.user in class_of_300.answers
                and s.user not in class_of_300.several + class_of_300.failed
                and f"attempt-{class_of_300.attempts[s.user][-1]}" not in marked
                and store.result(class_of_300.attempts[s.user][-1], context=context).task(1).score == 0)
    attempt = class_of_300.attempts[user][-1]
    maximum = store.result(attempt, context=context).task(1).max_score
    before = store.counted_score(context=context, user=user, week=WEEK)
    page = instructor["page"]("en")  # an instructor's launch: the service knows the week's line item
    assert before is not None and store.lineitem(context, WEEK) is not None

    def theirs() -> list[dict[str, Any]]:
        return [score for score in lms.platform.scores if score["userId"] == user]

    with Outbox(store, lms.app.state.tool.sender, poll_s=0.2):
        wait_until(lambda: all(post.state != "pending" for post in store.posts(context=context)), timeout=120)
        assert [score["scoreGiven"] for score in theirs()] == [before]  # the class's scores, sent
        tool = lms.tool_frame(page)
        tool.goto(f"{lms.tool_url}/attempt/{attempt}")
        press_until(page, tool, "#overrides")
        tool = navigate(lms, page)
        press_until(page, tool, "#points-1")
        page.keyboard.type(format_points(maximum))
        page.keyboard.press("Tab")
        reason = "Your fit is right: the hidden test's tolerance was too tight."
        page.keyboard.type(reason)
        press_until(page, tool, "#override-1 button")
        navigate(lms, page).locator("#status").filter(has_text="Task 1: override saved").wait_for()
        after = store.counted_score(context=context, user=user, week=WEEK)
        assert after == before + maximum
        wait_until(lambda: len(theirs()) == 2, timeout=60)
        time.sleep(1)  # time for a second post to arrive, were one sent
    assert [score["scoreGiven"] for score in theirs()] == [before, after]
    assert lms.platform.refused_scores == []
    tool = lms.tool_frame(page)
    tool.goto(f"{lms.tool_url}/attempt/{attempt}")  # the student's feedback page, inside it, gives the reason
    tool.frame_locator("#feedback").get_by_text(reason).wait_for()
