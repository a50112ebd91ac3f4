"""The LMS's locale for a user, as LMSs write it, matched to one of the course's languages; moments
and numbers on a page as its language writes them, in service.toml's time zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from autograder.service.locales import accepted_language, page_language
from autograder.service.pages import templates

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


@pytest.mark.parametrize(("header", "language"), [
    ("ja-JP,ja;q=0.9,en;q=0.5", "ja"), ("fr-CH, fr;q=0.9, pt-BR;q=0.8, *;q=0.5", "pt"),
    ("pt-BR;q=0.8, es-419;q=0.9", "es"), ("ja;q=0, es", "es"), ("ja;q=lots, es", "es"),
    ("fr", "pt"), ("*", "pt"), (None, "pt"), (" , ;q=1", "pt"),
])
def test_a_browsers_accept_language_gives_the_offered_language_it_ranks_highest(header: str | None,
                                                                                 language: str) -> None:
    """The language of a page before any launch (a refused login): by weight, then order; else the fallback."""
    assert accepted_language(header, OFFERED, "pt") == language


@pytest.mark.parametrize(("lang", "zone", "written"), [
    ("en", "UTC", "Sep 14, 2026 9:59\u202fPM UTC"),  # CLDR: a narrow no-break space before PM
    ("ja", "Asia/Tokyo", "2026/09/15 6:59 Asia/Tokyo"),  # past midnight in Tokyo: the 15th there
    ("pt", "America/Sao_Paulo", "14 de set. de 2026 18:59 America/Sao_Paulo"),
])
def test_a_moment_on_a_page_is_written_in_its_language_and_zone(lang: str, zone: str, written: str) -> None:
    page = templates().from_string("{{ moment|when }} {{ points|points }}")
    shown = page.render(moment=datetime(2026, 9, 14, 21, 59, tzinfo=UTC), points=12.5, lang=lang, zone=zone)
    assert shown == f"{written} {'12.5' if lang in ('en', 'ja') else '12,5'}"
