"""What ``autograder generate`` needs from the catalogs: each offered language with its
translations, or a refusal naming the strings a language still lacks.

Generation is all or nothing: a week with one stale language writes no language, so the
committed notebooks never mix an old translation with a new source.
"""

from __future__ import annotations

from collections.abc import Callable

from autograder.course import Week
from autograder.exceptions import GenerationError
from autograder.i18n.catalog import Problem, catalog_path, catalog_problems, extract
from autograder.i18n.languages import (
    FRAMEWORK_SOURCE_LANGUAGE,
    framework_catalog_path,
    framework_template,
    translations,
)
from autograder.i18n.runtime import untranslated

SHOWN = 8  # problems named per language; the rest are counted


def language_plans(week: Week) -> list[tuple[str, Callable[[str], str]]]:
    """``(language, gettext)`` for every language ``week``'s course offers, source first.

    Raises GenerationError when a language's week catalog or the framework's catalog lacks
    a translation of the current source (untranslated, fuzzy, or changed since translated),
    naming the strings and the command that merges the catalog."""
    languages = week.languages
    order = [languages.source, *(lang for lang in languages.offered if lang != languages.source)]
    template = extract(week) if len(order) > 1 else None
    framework = None
    refusals = []
    for language in order:
        lacking: list[tuple[str, list[Problem]]] = []
        if language != languages.source and template is not None:
            path = catalog_path(week, language)
            found = catalog_problems(template, path)
            if found:
                lacking.append((str(path.relative_to(week.root)), found))
        if language != FRAMEWORK_SOURCE_LANGUAGE:
            framework = framework if framework is not None else framework_template()
            path = framework_catalog_path(language)
            found = catalog_problems(framework, path)
            if found:
                lacking.append((f"the autograder's catalog {path.name} for {language}", found))
        for where, found in lacking:
            names = "\n".join(f"  - {p}" for p in found[:SHOWN])
            more = f"\n  ... and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
            refusals.append(f"{week.name}, language {language!r}: {where} lacks {len(found)} "
                            f"translation(s):\n{names}{more}")
    if refusals:
        raise GenerationError(
            "\n".join(refusals) + "\nNothing was written. Run `autograder i18n update` to merge the catalogs "
            "with the source, translate what is empty or fuzzy (docs/AUTHORING.md, \"Translating\"), or take "
            "the language out of `offered` in course.toml."
        )
    plans: list[tuple[str, Callable[[str], str]]] = []
    for language in order:
        active = translations(week, language)
        plans.append((language, active.gettext if active is not None else untranslated))
    return plans
