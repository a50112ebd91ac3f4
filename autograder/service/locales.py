"""Which of the course's languages a page is shown in: the one the LMS shows the user.

An LTI launch names the LMS's locale for the user (``launch_presentation.locale``) in
whatever form the LMS writes it: ``ja``, ``ja_JP``, ``ja-JP``, ``pt_BR``, ``es_419``,
``en_US``. Babel reads every such form, and the course's offered language with the same
language code is taken (``pt_BR`` and ``pt-PT`` both read Portuguese, ``es_419`` Spanish);
a locale the course does not offer, or none, falls back to the course's language for the
page (its source language for learners, its ``instructor`` language for instructors).
"""

from __future__ import annotations

from collections.abc import Sequence

from babel import Locale, UnknownLocaleError, negotiate_locale

from autograder.course import Course, Week
from autograder.i18n.languages import translations
from autograder.service.sessions import Session


def page_language(locale: str | None, offered: Sequence[str], fallback: str) -> str:
    """The offered language closest to the LMS's ``locale``, else ``fallback``."""
    if not locale:
        return fallback
    try:
        parsed = Locale.parse(locale.strip(), sep="-" if "-" in locale else "_")
    except (ValueError, UnknownLocaleError):  # not a locale Babel knows: the course's own language
        return fallback
    wanted = [str(parsed), parsed.language]
    return negotiate_locale(wanted, list(offered)) or fallback


def accepted_language(header: str | None, offered: Sequence[str], fallback: str) -> str:
    """The offered language a browser's ``Accept-Language`` header (``ja,en-US;q=0.7``) ranks
    highest, else ``fallback``: the language of a page shown before any launch said which the
    LMS uses (a refused login or launch). Tags are taken by weight, then in the order written;
    ``q=0`` means "not this one"."""
    ranked = []
    for position, part in enumerate((header or "").split(",")):
        tag, _, parameters = part.partition(";")
        name, _, weight = parameters.strip().partition("=")
        try:
            q = float(weight) if name.strip().lower() == "q" else 1.0
        except ValueError:
            q = 0.0  # a weight that is not a number: the tag is not taken
        if tag.strip() and tag.strip() != "*" and q > 0:
            ranked.append((-q, position, tag.strip()))
    for _q, _position, tag in sorted(ranked):
        language = page_language(tag, offered, "")
        if language:
            return language
    return fallback


def instructor_language(session: Session, course: Course) -> str:
    """The language an instructor's pages speak: the LMS's locale for them among the course's
    languages (kept in the session at launch), else the course's ``instructor`` language."""
    return session.language or course.languages.instructor


def week_title(week: Week, language: str | None) -> str:
    """The week's title as its notebook in ``language`` has it (the week's catalog), else as written."""
    return _as_the_notebook_says(week, week.title, language)


def task_title(week: Week, number: int, language: str | None) -> str:
    """Task ``number``'s title as the week's notebook in ``language`` has it, else as written;
    "" for a task the week does not have or one without a title. A stored result titles its
    tasks in its student's language: a page for someone else titles them from the course."""
    task = next((t for t in week.tasks if t.number == number), None)
    return _as_the_notebook_says(week, task.title, language) if task is not None and task.title else ""


def _as_the_notebook_says(week: Week, text: str, language: str | None) -> str:
    """``text``, written in the week's source notebook, as its notebook in ``language`` has it."""
    found = translations(week, language) if language else None
    return found.gettext(text) if found is not None else text
