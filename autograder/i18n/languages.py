"""Which catalogs speak a language: the week's own and the framework's.

Two catalogs serve every language. The week's (``source/weekNN/locale``) holds what the
instructor wrote: notebook text, check descriptions, failure messages. The framework's
(``autograder/locale/<lang>/LC_MESSAGES/autograder.po``) holds the autograder's own words:
the stub comment and answer prompt in generated notebooks, the feedback page, the reasons
a check failed. The framework's source language is English; a week's is the course's
``source`` language.
"""

from __future__ import annotations

import gettext
from functools import lru_cache
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir

from autograder.course import Week
from autograder.i18n.catalog import CatalogTranslations, add_message, catalog_path, new_template, read_catalog

PACKAGE = Path(__file__).resolve().parent.parent
FRAMEWORK_DOMAIN = "autograder"
FRAMEWORK_SOURCE_LANGUAGE = "en"
FRAMEWORK_LOCALE = PACKAGE / "locale"

# Python modules call ``_("...")``; templates call ``{{ _("...") }}``.
_METHODS = [
    ("**/templates/**.j2", "jinja2.ext:babel_extract"),
    ("**.py", "python"),
]


def framework_template() -> Catalog:
    """The framework's messages, extracted from the package's code and templates."""
    catalog = new_template(f"{FRAMEWORK_DOMAIN} (the autograder's own words)")
    for filename, line, message, comments, _context in extract_from_dir(
        str(PACKAGE), _METHODS, keywords={"_": None, "N_": None}, comment_tags=("TRANSLATORS:",),
        options_map={"**/templates/**.j2": {"trim_blocks": "true", "lstrip_blocks": "true"}},
    ):
        if isinstance(message, str) and message:
            add_message(catalog, message, (f"autograder/{filename}", line), comments=list(comments),
                        brace_format=True)
    return catalog


def framework_template_path() -> Path:
    """``autograder/locale/autograder.pot``."""
    return FRAMEWORK_LOCALE / f"{FRAMEWORK_DOMAIN}.pot"


def framework_catalog_path(language: str) -> Path:
    """The framework's ``.po`` for ``language``."""
    return FRAMEWORK_LOCALE / language / "LC_MESSAGES" / f"{FRAMEWORK_DOMAIN}.po"


def translations(week: Week, language: str) -> gettext.NullTranslations | None:
    """What ``_`` should use for ``week`` in ``language``: the week's catalog when the
    week offers ``language`` (otherwise the week's text stays in its source language, as a
    catalog still being translated may be half done), then the framework's when the
    autograder has one for ``language`` (otherwise its words stay English); None when
    both are the source text."""
    paths = []
    if language != week.languages.source and language in week.languages.offered:
        paths.append(catalog_path(week, language))
    if language != FRAMEWORK_SOURCE_LANGUAGE:
        paths.append(framework_catalog_path(language))
    stamped = tuple((p, p.stat().st_mtime_ns) for p in paths if p.is_file())
    return _load(stamped) if stamped else None


def framework_translations(language: str) -> gettext.NullTranslations | None:
    """The framework's catalog alone (the instructor's pages), or None for English."""
    path = framework_catalog_path(language)
    if language == FRAMEWORK_SOURCE_LANGUAGE or not path.is_file():
        return None
    return _load(((path, path.stat().st_mtime_ns),))


@lru_cache(maxsize=64)
def _load(stamped: tuple[tuple[Path, int], ...]) -> CatalogTranslations:
    """Catalogs read once per file version (the mtime is part of the key)."""
    return CatalogTranslations(read_catalog(path) for path, _mtime in stamped)
