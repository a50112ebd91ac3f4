"""``autograder i18n status``: per week, which languages are offered and what each catalog lacks.

A week offers the languages of its ``week.toml`` (else the course's); a course language
the week does not offer yet is listed too, with what its catalog still lacks, so a week
drafted in one language shows the translation work left before it can offer the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from autograder.course import Course
from autograder.i18n.catalog import catalog_path, catalog_problems, extract
from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_catalog_path, framework_template
from autograder.i18n.update import translated_languages

Offer = Literal["source", "offered", "not offered"]


@dataclass(frozen=True)
class CatalogStatus:
    """One catalog of one language: whether it is offered, how many messages, how many
    not usable yet."""

    catalog: str
    language: str
    offer: Offer
    messages: int
    lacking: int

    @property
    def blocks(self) -> bool:
        """Whether ``autograder generate`` refuses because of it: an offered language's
        catalog that lacks a translation (one not offered yet blocks nothing)."""
        return self.offer == "offered" and self.lacking > 0


def catalog_status(course: Course, *, weeks: Sequence[str] = ()) -> list[CatalogStatus]:
    """Every week's languages (the course's and the week's own), then the framework's
    catalog for each course language, with what they lack."""
    rows = []
    # the autograder's catalog serves every week: a language is offered if any week offers it
    offered_somewhere = {lang for name in course.week_names() for lang in course.week(name).languages.offered}
    for name in list(weeks) or course.week_names():
        week = course.week(name)
        template = extract(week)
        rows.append(CatalogStatus(week.name, week.languages.source, "source", len(template), 0))
        for language in translated_languages(course, week):
            lacking = catalog_problems(template, catalog_path(week, language))
            offer: Offer = "offered" if language in week.languages.offered else "not offered"
            rows.append(CatalogStatus(week.name, language, offer, len(template), len(lacking)))
    framework = framework_template()
    for language in course.languages.offered:
        if language != FRAMEWORK_SOURCE_LANGUAGE:
            lacking = catalog_problems(framework, framework_catalog_path(language))
            offer = "offered" if language in offered_somewhere else "not offered"
            rows.append(CatalogStatus("autograder", language, offer, len(framework), len(lacking)))
    return rows
