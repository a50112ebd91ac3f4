"""Every word a learner reads on the service's own pages comes from the framework's gettext
catalogs: no template text outside ``_``, every template message found by ``autograder i18n
update`` (the extractor reads the Jinja templates) and translated in each offered language.
(That generate refuses a course whose framework catalog lacks a translation is
tests/test_i18n.py's; this keeps the templates from adding English that no catalog sees.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.i18n.catalog import read_catalog
from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_catalog_path, framework_template

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
INSTRUCTOR_PAGES = ("instructor.html.j2", "marking.html.j2", "rubric.html.j2", "config.html.j2",
                    "registered.html.j2", "autosubmit.html.j2")


@pytest.mark.parametrize("name", INSTRUCTOR_PAGES)
def test_an_instructors_page_has_no_words_outside_the_catalog(name: str) -> None:
    assert words_outside_gettext((TEMPLATES / name).read_text(encoding="utf-8")) == []


def test_the_instructors_pages_messages_are_extracted_and_translated(course: Course) -> None:
    found = messages_of(INSTRUCTOR_PAGES)
    assert {"Regrade the week", "Students ({count})", "Save the marks", "Rubric", "Registering {tool} in an LMS "
            "(LTI 1.3)", "{tool} is registered", "Continue"} <= found
    assert_translated(found, course)
