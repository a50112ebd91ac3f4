"""The service's HTML pages: the Jinja templates under ``templates/``, rendered into responses.

A page is rendered in one language: its words through ``_`` from the framework's gettext
catalogs (``autograder/locale``, the feedback's), its ``<html lang>``, and its numbers and
moments in that language's form (Babel), moments in the time zone service.toml sets: the
filters of ``formats/templating.environment``, which every page of the package is rendered
by. A page rendered without a language is in the framework's source language, English.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import HTMLResponse
from jinja2 import Environment

from autograder.formats.templating import environment
from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_translations
from autograder.i18n.runtime import N_, untranslated
from autograder.service.locales import task_title, week_title

# An attempt's state as the pages name it (translated where shown).
STATES = {"queued": N_("queued"), "grading": N_("grading"), "graded": N_("graded"), "failed": N_("failed"),
          "refused": N_("refused")}


def templates() -> Environment:
    """The service's templates in ``formats/templating.environment`` (escaped; points, percentages
    and moments in the page's ``lang``), with the attempts' states."""
    env = environment("autograder.service")
    env.globals["states"] = STATES
    return env


class Pages:
    """Renders a template, headed with the tool's name, into an HTML response."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self._env = templates()

    def render(self, name: str, status: int = 200, *, language: str | None = None, **values: Any) -> HTMLResponse:
        """``name`` rendered in ``language`` (None: English, the framework's source language);
        its templates title a course's week and tasks with ``week_title(week)`` and
        ``task_title(week, number)`` in that language."""
        lang = language or FRAMEWORK_SOURCE_LANGUAGE
        translations = framework_translations(lang)
        values.setdefault("_", translations.gettext if translations is not None else untranslated)
        # the course's words (a week's title, its tasks') come from the week's catalog in the page's language
        values.setdefault("week_title", lambda week: week_title(week, lang))
        values.setdefault("task_title", lambda week, number: task_title(week, number, lang))
        return HTMLResponse(self._env.get_template(name).render(tool_name=self.tool_name, lang=lang, **values),
                            status_code=status)
