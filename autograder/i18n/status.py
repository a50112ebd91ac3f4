"""``autograder i18n status``: what each language's catalogs still lack."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from autograder.course import Course
from autograder.i18n.catalog import catalog_path, catalog_problems, extract
from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_catalog_path, framework_template


@dataclass(frozen=True)
class CatalogStatus:
    """One catalog of one language: how many messages, how many not usable yet."""

    catalog: str
    language: str
    messages: int
    lacking: int


def catalog_status(course: Course, *, weeks: Sequence[str] = ()) -> list[CatalogStatus]:
    """Every offered language's week catalogs (and the framework's), with what they lack."""
    languages = course.languages
    rows = []
    for name in list(weeks) or course.week_names():
        week = course.week(name)
        template = extract(week)
        for language in languages.offered:
            if language != languages.source:
                path = catalog_path(week, language)
                lacking = catalog_problems(template, path)
                rows.append(CatalogStatus(week.name, language, len(template), len(lacking)))
    framework = framework_template()
    for language in languages.offered:
        if language != FRAMEWORK_SOURCE_LANGUAGE:
            path = framework_catalog_path(language)
            lacking = catalog_problems(framework, path)
            rows.append(CatalogStatus("autograder", language, len(framework), len(lacking)))
    return rows
