"""The service's HTML pages: the Jinja templates under ``templates/``, rendered into responses.

A page is rendered in one language: its words through ``_`` from the framework's gettext
catalogs (``autograder/locale``, the feedback's), its ``<html lang>``, and its numbers and
moments in that language's form (Babel), moments in the time zone service.toml sets. A page
rendered without a language is in the framework's source language, English.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from babel.dates import format_date, format_time
from babel.numbers import format_decimal, format_percent
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context
from jinja2.runtime import Context

from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_translations
from autograder.i18n.runtime import N_, untranslated

# An attempt's state as the pages name it (translated where shown).
STATES = {"queued": N_("queued"), "grading": N_("grading"), "graded": N_("graded"), "failed": N_("failed"),
          "refused": N_("refused")}


@pass_context
def _points(context: Context, value: float | None) -> str:
    """Points as the page's language writes a number (``12.5``, ``12,5``); "–" for none."""
    return "–" if value is None else format_decimal(round(value, 2), locale=context.get("lang", "en"))


@pass_context
def _percent(context: Context, fraction: float) -> str:
    """A fraction as the page's language writes a percentage (``10%``, ``10 %``)."""
    return format_percent(fraction, locale=context.get("lang", "en"))


@pass_context
def _when(context: Context, moment: datetime | None) -> str:
    """A moment as the page's language writes one, in the page's time zone (``zone``), named."""
    if moment is None:
        return "–"
    zone, lang = context.get("zone", "UTC"), context.get("lang", "en")
    # to the minute and the zone named as service.toml names it, as the refusals write moments
    local = moment.astimezone(ZoneInfo(zone))  # the date too is the zone's (past midnight there)
    day, time = format_date(local, "medium", locale=lang), format_time(local, "short", tzinfo=local.tzinfo, locale=lang)
    return f"{day} {time} {zone}"


def templates() -> Environment:
    """The templates, escaped, with the filters they use for points and moments."""
    env = Environment(loader=PackageLoader("autograder.service", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["points"] = _points
    env.filters["when"] = _when
    env.filters["percent"] = _percent
    env.globals["states"] = STATES
    return env


class Pages:
    """Renders a template, headed with the tool's name, into an HTML response."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self._env = templates()

    def render(self, name: str, status: int = 200, *, language: str | None = None, **values: Any) -> HTMLResponse:
        """``name`` rendered in ``language`` (None: English, the framework's source language)."""
        lang = language or FRAMEWORK_SOURCE_LANGUAGE
        translations = framework_translations(lang)
        values.setdefault("_", translations.gettext if translations is not None else untranslated)
        return HTMLResponse(self._env.get_template(name).render(tool_name=self.tool_name, lang=lang, **values),
                            status_code=status)
