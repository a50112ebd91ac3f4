"""The active language (autograder/i18n/runtime.py): ``_`` translates while a catalog is
spoken, in its own context only, and falls back to the source text."""

from __future__ import annotations

from babel.messages.catalog import Catalog

from autograder.i18n import _, speaking
from autograder.i18n.catalog import CatalogTranslations


def test_the_active_language_is_per_context_and_falls_back_to_the_source():
    catalog = Catalog(locale="ja")
    catalog.add("the check did not hold", "チェックが成り立ちませんでした")
    assert _("the check did not hold") == "the check did not hold"
    with speaking(CatalogTranslations([catalog])):
        assert _("the check did not hold") == "チェックが成り立ちませんでした"
        assert _("not in the catalog") == "not in the catalog"
    assert _("the check did not hold") == "the check did not hold"
