"""``autograder i18n update``: templates extracted again, every language's catalog merged.

What a translator runs after the author changed a week (or after a new language was
added to ``course.toml``): the ``.pot`` templates are written from the sources, and each
offered language's ``.po`` is merged with Babel (translations kept; changed strings marked
fuzzy with their previous text; new strings empty). Then the translator fills what is
empty or fuzzy in a PO editor, and ``autograder generate`` accepts the language.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from autograder.course import Course
from autograder.i18n.catalog import catalog_path, extract, template_path, update, write_catalog
from autograder.i18n.languages import (
    FRAMEWORK_SOURCE_LANGUAGE,
    framework_catalog_path,
    framework_template,
    framework_template_path,
)


def update_catalogs(course: Course, *, weeks: Sequence[str] = (), framework: bool = True) -> list[Path]:
    """Write the templates and merged catalogs of ``weeks`` (default: all) and, with
    ``framework``, the autograder's own; the paths written, in order."""
    languages = course.languages
    written: list[Path] = []
    for name in list(weeks) or course.week_names():
        week = course.week(name)
        template = extract(week)
        write_catalog(template, template_path(week))
        written.append(template_path(week))
        for language in languages.offered:
            if language != languages.source:
                path = catalog_path(week, language)
                write_catalog(update(template, path, language), path)
                written.append(path)
    if framework:
        template = framework_template()
        write_catalog(template, framework_template_path())
        written.append(framework_template_path())
        for language in languages.offered:
            if language != FRAMEWORK_SOURCE_LANGUAGE:
                path = framework_catalog_path(language)
                write_catalog(update(template, path, language), path)
                written.append(path)
    return written
