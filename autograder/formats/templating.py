"""The one Jinja environment factory: every HTML page and fragment the package writes is
rendered by an environment made here (the report's pages, the audit's, the service's,
the marking sheet's view, the worksheet's feedback comments).

Every environment has the same rules, so a page moved from one package to another renders
the same:

- autoescape on: student names, file names, test output and error messages come from
  submissions and end up in HTML someone opens in a browser;
- undefined values raise (``StrictUndefined``), so a misspelt name fails the render
  instead of leaving a hole in a student's page;
- block tags leave no blank lines (``trim_blocks``, ``lstrip_blocks``);
- ``_`` is the framework's source language unless the render passes its own (a page in
  another language passes its catalog's ``gettext``);
- the filters: ``points`` (``formats/points.py``, the one points formatter; "–" for none),
  ``percent`` and ``when`` (a moment in the page's time zone ``zone``). A page that sets
  ``lang`` (the service's) gets its numbers and moments in that language's form (Babel:
  ``12,5`` in Portuguese); one without it (the batch's files) gets them as
  ``format_points`` writes them.

Each package keeps its templates in its own ``templates/`` folder and names the packages
whose folders its environment reads, first match first. It lives on the ``formats`` floor,
below every package that renders HTML (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from babel.dates import format_date, format_time
from babel.numbers import format_percent
from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined, pass_context
from jinja2.runtime import Context

from autograder.formats.points import NO_POINTS, format_points, format_points_in
from autograder.i18n.runtime import untranslated


def environment(*packages: str) -> Environment:
    """A new environment reading the ``templates/`` folder of each of ``packages`` in turn.

    Callers keep the one they make (building one parses nothing, but each has its own
    template cache) and add their own globals to it."""
    if not packages:
        raise ValueError("name at least one package whose templates/ folder holds the templates")
    env = Environment(
        loader=ChoiceLoader([PackageLoader(package, "templates") for package in packages]),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["points"] = _points
    env.filters["percent"] = _percent
    env.filters["when"] = _when
    env.globals["_"] = untranslated  # pages in another language pass their own ``_`` when rendering
    return env


@pass_context
def _points(context: Context, value: float | None, decimal: str = ".") -> str:
    """Points as the page writes them: in the page's language (``lang``) if it has one, else with
    ``decimal`` as the decimal mark; "–" for none."""
    lang = context.get("lang")
    if value is None:
        return NO_POINTS
    return format_points(value, decimal) if lang is None else format_points_in(value, lang)


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
