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
    """``(language, gettext)`` for every language ``week`` offers (its ``week.toml``, else
    the course's), source first.

    Raises GenerationError when a language's week catalog or the framework's catalog lacks
    a translation of the current source (untranslated, fuzzy, or changed since translated),
    naming the strings and the command that merges the catalog. A language the autograder
    has no catalog for at all gets the autograder's own words in English."""
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
        path = framework_catalog_path(language)
        if language != FRAMEWORK_SOURCE_LANGUAGE and path.is_file():
            framework = framework if framework is not None else framework_template()
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
            "the language out of `offered` for this week (its week.toml; docs/AUTHORING.md, "
            "\"A week in fewer languages\")."
        )
    plans: list[tuple[str, Callable[[str], str]]] = []
    for language in order:
        active = translations(week, language)
        plans.append((language, active.gettext if active is not None else untranslated))
    return plans
