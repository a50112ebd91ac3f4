"""The one Jinja environment the report pages share: package templates, autoescape on.

Autoescaping is not optional here: student names, file names, test output and error
messages all come from submissions and end up in HTML someone opens in a browser.
"""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined

from autograder.formats.points import format_points
from autograder.results import Status

# What each status means, in words a student and an instructor both understand.
STATUS_TEXT: dict[Status, str] = {
    Status.GRADED: "Your notebook was run and checked.",
    Status.NOT_ATTEMPTED: "Every autograded task still raises NotImplementedError, so there was nothing to check.",
    Status.ERROR: "Your notebook could not be read or run; the messages below say why.",
    Status.TIMEOUT: "Your notebook did not finish within the time limit; checks that could not run count as failed.",
    Status.NOT_SUBMITTED: "No notebook was found in your submission.",
    Status.WRONG_WEEK: "The notebook you handed in is another week's: it was checked against this week's tests, "
    "so its score is likely not what you meant to hand in.",
}


@cache
def environment() -> Environment:
    """The shared Jinja environment (built once)."""
    env = Environment(
        loader=PackageLoader("autograder.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["points"] = format_points
    env.globals["status_text"] = STATUS_TEXT
    return env
