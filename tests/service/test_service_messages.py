"""Every word a learner reads on the service's own pages comes from the framework's gettext
catalogs: no template text outside ``_``, every template message found by ``autograder i18n
update`` (the extractor reads the Jinja templates) and translated in each offered language.
(That generate refuses a course whose framework catalog lacks a translation is
tests/i18n/test_generation.py's; this keeps the templates from adding English that no catalog sees.)"""

from __future__ import annotations

import ast
import html
import re
import string
from pathlib import Path

import httpx
import pytest

from autograder.course import Course
from autograder.exceptions import LaunchRefused
from autograder.i18n.catalog import read_catalog
from autograder.i18n.languages import (
    FRAMEWORK_SOURCE_LANGUAGE,
    framework_catalog_path,
    framework_template,
    framework_translations,
)
from autograder.service.lti import EXPIRED
from autograder.service.sessions import STATE_COOKIE
from tests.service.lms import Lms

pytestmark = pytest.mark.lms(grading=False)  # its pages and refusals need no grader

TEMPLATES = Path(__file__).resolve().parents[2] / "autograder" / "service" / "templates"
# the pages a learner can meet: upload, attempt and queue, a refusal, the 503 page, and their frame;
# and the instructor's deep-linking picker
LEARNER_PAGES = ("base.html.j2", "week.html.j2", "attempt.html.j2", "error.html.j2", "unavailable.html.j2",
                 "deep_link.html.j2")
NOT_TEXT = [r"\{#.*?#\}", r"<script.*?</script>", r"<style.*?</style>", r"\{%.*?%\}", r"\{\{.*?\}\}"]
READ_ALOUD = re.compile(r'\b(?:title|aria-label|alt|placeholder)="([^"]*)"')
WORD = re.compile(r"[^\W\d_]{2,}")


def words_outside_gettext(source: str) -> list[str]:
    """The words of a template a reader sees or hears that no ``_`` call produces."""
    for pattern in NOT_TEXT:
        source = re.sub(pattern, " ", source, flags=re.DOTALL)
    spoken = " ".join(READ_ALOUD.findall(source))
    return WORD.findall(re.sub(r"<[^>]*>", " ", source)) + WORD.findall(spoken)


@pytest.mark.parametrize("name", LEARNER_PAGES)
def test_a_learners_page_has_no_words_outside_the_catalog(name: str) -> None:
    assert words_outside_gettext((TEMPLATES / name).read_text(encoding="utf-8")) == []


def test_the_words_outside_the_catalog_are_found() -> None:
    page = '<h2>Upload</h2>{{ _("Upload your notebook") }}<iframe title="Feedback {{ n }}"></iframe>'
    assert words_outside_gettext(page) == ["Upload", "Feedback"]


def messages_of(pages: tuple[str, ...]) -> set[str]:
    """The messages ``autograder i18n update`` extracts from ``pages``."""
    return {message.id for message in framework_template()
            if any(Path(where).name in pages for where, _line in message.locations)}


def assert_translated(messages: set[str], course: Course) -> None:
    """Every one of ``messages`` has a finished translation in each language the course offers."""
    for language in course.languages.offered:
        if language == FRAMEWORK_SOURCE_LANGUAGE:
            continue
        catalog = read_catalog(framework_catalog_path(language))
        lacking = sorted(m for m in messages if not (catalog.get(m) and catalog[m].string and not catalog[m].fuzzy))
        assert lacking == [], f"{language}: {lacking}"


def test_the_learners_pages_messages_are_extracted_and_translated(course: Course) -> None:
    found = messages_of(LEARNER_PAGES)
    assert {"Upload your notebook", "How this week is scored", "This page updates itself.", "back",
            "Your uploads are safe.", "Add the activity"} <= found
    assert_translated(found, course)


# -- the instructor's pages ----------------------------------------------------------------
# The live report, marking by hand and with a rubric, the registration help and the page after
# registering, the deep-linking answer: in the instructor's language (the LMS's locale for them
# among the offered languages, else course.toml's `instructor`), so every offered language too.
INSTRUCTOR_PAGES = ("instructor.html.j2", "marking.html.j2", "marking_task.html.j2", "config.html.j2",
                    "registered.html.j2", "autosubmit.html.j2", "regrade.html.j2", "markers.html.j2",
                    "overrides.html.j2")


@pytest.mark.parametrize("name", INSTRUCTOR_PAGES)
def test_an_instructors_page_has_no_words_outside_the_catalog(name: str) -> None:
    assert words_outside_gettext((TEMPLATES / name).read_text(encoding="utf-8")) == []


def test_the_instructors_pages_messages_are_extracted_and_translated(course: Course) -> None:
    found = messages_of(INSTRUCTOR_PAGES)
    assert {"Regrade the week", "Students ({count})", "Mark this answer", "Rubric", "Registering {tool} in an LMS "
            "(LTI 1.3)", "{tool} is registered", "Continue"} <= found
    assert_translated(found, course)


# -- the refusals ------------------------------------------------------------------------------
# A refusal is a page too: its words are a catalog message (``Refused``'s message, ``N_``-marked,
# or ``LaunchRefused``'s advice) translated when the error page is rendered, never English
# written where it is raised. LaunchRefused's detail stays English: it is for the administrator.
SERVICE = TEMPLATES.parent
# the one refusal that stays English: to the monitoring (a machine reading /metrics)
ENGLISH_REFUSALS = {"routes/metrics.py"}


def refusals_outside_the_catalog(source: str) -> list[int]:
    """The lines where a module raises a refusal whose words are written in place (a literal, an
    f-string, text put together, or a module constant holding one) rather than a catalog message."""
    tree = ast.parse(source)
    constants = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}

    def written_in_place(words: ast.expr) -> bool:
        if isinstance(words, ast.Name) and words.id in constants:
            words = constants[words.id]
        if isinstance(words, ast.Call) and isinstance(words.func, ast.Attribute):  # "...".format(...)
            return written_in_place(words.func.value)
        return isinstance(words, ast.Constant | ast.JoinedStr | ast.BinOp)

    return [call.lineno for call in ast.walk(tree)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id in ("Refused", "LaunchRefused") and len(call.args) > 1 and written_in_place(call.args[1])]


def test_a_refusal_a_learner_can_meet_is_a_catalog_message() -> None:
    source = ('ADVICE = N_("Open it again.")\nPLAIN = "Open it again."\n'
              'raise Refused(400, N_("Too big: {size} MiB."), size=3)\n'
              'raise Refused(400, _("Not a notebook: {file}").format(file=name))\n'
              'raise LaunchRefused(f"bad {claim}", ADVICE)\nraise LaunchRefused("bad")\n'
              'raise Refused(400, f"Too big: {size} MiB.")\nraise Refused(400, "Too big: " + size)\n'
              'raise Refused(400, "Too big: {size}".format(size=3))\nraise LaunchRefused("bad", PLAIN)\n')
    assert refusals_outside_the_catalog(source) == [7, 8, 9, 10]  # what the check finds, in a sample
    found = {str(path.relative_to(SERVICE)): lines for path in sorted(SERVICE.rglob("*.py"))
             if (lines := refusals_outside_the_catalog(path.read_text(encoding="utf-8")))}
    assert set(found) <= ENGLISH_REFUSALS, {k: v for k, v in found.items() if k not in ENGLISH_REFUSALS}


def fields(message: str) -> set[str]:
    return {name for _text, name, _spec, _conversion in string.Formatter().parse(message) if name}


def test_the_services_messages_are_translated_with_their_fields(course: Course) -> None:
    """Every catalog message in the service's code (its refusals, the launch's advice, the changes
    the gradebook refuses, which its pages show) is translated in each offered language, with the
    same ``{fields}`` (a field the message lacks would fail the error page itself): the check of
    ``autograder generate``, kept by CI for the service."""
    found = {str(message.id) for message in framework_template()
             if any((where.startswith("autograder/service/") and where.endswith(".py"))
                    or where == "autograder/gradebook.py" for where, _line in message.locations)}
    found |= {LaunchRefused("why").advice}
    assert {EXPIRED, "The request's body came too slowly and was dropped: check the connection and send it again.",
            "This course has no week {week}: open the week's activity from the course page in the LMS.",
            "The feedback is not ready yet: this page updates itself when it is.",
            "a rubric item for task {task} needs a comment: it is what the student reads"} <= found
    assert_translated(found, course)
    for language in course.languages.offered:
        if language == FRAMEWORK_SOURCE_LANGUAGE:
            continue
        catalog = read_catalog(framework_catalog_path(language))
        unlike = sorted(m for m in found if fields(str(catalog[m].string)) != fields(m))
        assert unlike == [], f"{language}: {unlike}"


def error_page(reply: httpx.Response) -> tuple[str, str, str]:
    """A refusal page's language, its message and its detail (for the administrator), as read."""
    text = reply.text
    lang = re.search(r'<html lang="([^"]*)"', text)
    said = re.search(r'<p class="error" id="error">(.*?)</p>', text, re.DOTALL)
    detail = re.search(r'<details id="detail">.*?<p lang="en">(.*?)</p>', text, re.DOTALL)
    assert lang and said, text
    return lang[1], html.unescape(said[1]), html.unescape(detail[1]) if detail else ""


def test_a_refused_launch_speaks_the_browsers_language(lms: Lms) -> None:
    """Before a launch has said which language the LMS shows, a refusal is in the browser's
    (Accept-Language, among the course's languages): what to do in Japanese, why in English below."""
    japanese = framework_translations("ja")
    assert japanese is not None
    browser = lms.browser()
    browser.client.cookies.set(STATE_COOKIE, "never-issued", domain="127.0.0.1")
    speaks = {"Accept-Language": "ja-JP,ja;q=0.9,en;q=0.5"}
    reply = browser.client.post(f"{lms.tool_url}/lti/launch", data={"id_token": "x", "state": "never-issued"},
                                headers=speaks)
    assert reply.status_code == 401
    lang, said, detail = error_page(reply)
    assert (lang, said) == ("ja", japanese.gettext(EXPIRED)) and said != EXPIRED
    assert detail == "this login has already been used or has expired: start the activity again"
    # a state no login could have issued, refused at the edge before the launch is checked
    reply = browser.client.post(f"{lms.tool_url}/lti/launch", data={"id_token": "x", "state": "状態"},
                                headers=speaks)
    assert reply.status_code == 400
    assert error_page(reply) == ("ja", japanese.gettext("This request carries a value this service did not issue: "
                                                        "start again from the course page in the LMS."),
                                 "The launch's state in this request is not one this service issued (it must be "
                                 "short printable ASCII).")
    # a browser asking for a language the course does not offer: the course's source language
    reply = browser.client.post(f"{lms.tool_url}/lti/launch", data={"id_token": "x", "state": "never-issued"},
                                headers={"Accept-Language": "fr-CH, fr;q=0.9"})
    assert error_page(reply)[:2] == ("en", EXPIRED)


def test_the_week_page_states_the_call_budgets_a_weeks_tests_set(lms: Lms) -> None:
    """Week 6's hidden tests give some of task 3's calls 20 s and 30 s (``call_timeout``):
    its page says so, one sentence each, beside the budgets of the grading's ``Limits``,
    in the learner's language (here the course's source language, the catalog's msgid)."""
    instructor = lms.browser()
    picker = instructor.get(f"{lms.platform_url}/start", params={"user": "t-budgets", "role": "instructor",
                                                                 "deep_link": "true"})
    created = instructor.submit(picker, "pick", data={"week": "week06"})
    _, page = lms.launch("s-budgets", link=created.json()["created"][0]["resource_link_id"])
    assert page.status_code == 200 and str(page.url).endswith("/week/week06"), page.text
    rules = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", page.text)).split())
    assert ("Your code runs with a budget of CPU time: 30 seconds for each notebook cell, 10 seconds for each call "
            "a check makes to it and 120 seconds for the whole notebook.") in rules
    assert ("Some checks of task 3 give each call 20 seconds instead of 10. "
            "Some checks of task 3 give each call 30 seconds instead of 10.") in rules
