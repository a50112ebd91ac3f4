"""The LMS's locale for a user, as LMSs write it, matched to one of the course's languages."""

from __future__ import annotations

import pytest

from autograder.service.locales import page_language

OFFERED = ("en", "ja", "pt", "es")


@pytest.mark.parametrize(("locale", "language"), [
    ("ja", "ja"), ("ja_JP", "ja"), ("ja-JP", "ja"), ("pt_BR", "pt"), ("pt-PT", "pt"), ("pt_br", "pt"),
    ("es_419", "es"), ("es-ES", "es"), ("es_mx", "es"), ("en_US", "en"), ("en-GB", "en"),
])
def test_a_locale_gives_the_offered_language_it_is_written_in(locale: str, language: str) -> None:
    assert page_language(locale, OFFERED, "en") == language


@pytest.mark.parametrize("locale", [None, "", "fr_FR", "zh-Hant-TW", "not a locale", "xx"])
def test_no_locale_or_one_not_offered_gives_the_fallback(locale: str | None) -> None:
    assert page_language(locale, OFFERED, "pt") == "pt"
    assert page_language(locale, ("ja",), "ja") == "ja"
