"""The service's HTML pages: the Jinja templates under ``templates/``, rendered into responses."""

from __future__ import annotations

from typing import Any

from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined


def templates() -> Environment:
    """The templates, escaped, with the filters they use for points and moments."""
    env = Environment(loader=PackageLoader("autograder.service", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["points"] = lambda value: "–" if value is None else f"{round(value, 2):g}"
    env.filters["when"] = lambda moment: moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "–"
    return env


class Pages:
    """Renders a template, headed with the tool's name, into an HTML response."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self._env = templates()

    def render(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self._env.get_template(name).render(tool_name=self.tool_name, **values),
                            status_code=status)
