"""``autograder i18n update``: templates extracted again, every language's catalog merged.

What a translator runs after the author changed a week (or after a new language was
added to ``course.toml``): the ``.pot`` templates are written from the sources, and each
language's ``.po`` is merged with Babel (translations kept; changed strings marked fuzzy
with their previous text; new strings empty). A week gets a catalog for every language the
course offers, whether or not the week offers it yet (its ``week.toml``): that is how a
week drafted in one language gains the others. Then the translator fills what is empty or
fuzzy in a PO editor, and ``autograder generate`` accepts the language.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from babel.messages.catalog import Catalog

from autograder.course import Course, Week
from autograder.i18n.catalog import catalog_path, extract, template_path, update, write_catalog
from autograder.i18n.languages import (
    FRAMEWORK_SOURCE_LANGUAGE,
    framework_catalog_path,
    framework_template,
    framework_template_path,
)


def translated_languages(course: Course, week: Week) -> list[str]:
    """The languages ``week`` has (or will have) a catalog for: the course's and the week's
    own offered ones, in that order, less the week's source language."""
    wanted = [*course.languages.offered, *week.languages.offered]
    return [language for language in dict.fromkeys(wanted) if language != week.languages.source]


def update_catalogs(course: Course, *, weeks: Sequence[str] = (), framework: bool = True) -> list[Path]:
    """Write the templates and merged catalogs of ``weeks`` (default: all) and, with
    ``framework``, the autograder's own; the paths whose contents changed, in order."""
    written: list[Path] = []

    def write(catalog: Catalog, path: Path) -> None:
        if write_catalog(catalog, path):
            written.append(path)

    for name in list(weeks) or course.week_names():
        week = course.week(name)
        template = extract(week)
        write(template, template_path(week))
        for language in translated_languages(course, week):
            path = catalog_path(week, language)
            write(update(template, path, language), path)
    if framework:
        template = framework_template()
        write(template, framework_template_path())
        for language in course.languages.offered:
            if language != FRAMEWORK_SOURCE_LANGUAGE:
                path = framework_catalog_path(language)
                write(update(template, path, language), path)
    return written
