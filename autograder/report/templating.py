"""The report pages' Jinja environment: ``formats/templating.environment``'s rules (autoescape,
the points filter, ``_``) over the report's ``templates/``, with the statuses' words.
"""

from __future__ import annotations

from functools import cache

from jinja2 import Environment

from autograder.formats.templating import environment as make_environment
from autograder.i18n.runtime import N_
from autograder.results import Status

# What each status means, in words a student and an instructor both understand (N_ marks
# them for the catalog; templates translate them with ``_``).
STATUS_TEXT: dict[Status, str] = {
    Status.GRADED: N_("Your notebook was run and checked."),
    Status.NOT_ATTEMPTED: N_("Every autograded task still raises NotImplementedError, so there was nothing to check."),
    Status.ERROR: N_("Your notebook could not be read or run; the messages below say why."),
    Status.TIMEOUT: N_("Your notebook did not finish within the time limit; checks that could not run count as "
                       "failed."),
    Status.NOT_SUBMITTED: N_("No notebook was found in your submission."),
    Status.WRONG_WEEK: N_("The notebook you handed in is another week's: it was checked against this week's tests, "
                          "so its score is likely not what you meant to hand in."),
}

# A status's name on a badge.
STATUS_NAME: dict[Status, str] = {
    Status.GRADED: N_("graded"),
    Status.NOT_ATTEMPTED: N_("not attempted"),
    Status.ERROR: N_("error"),
    Status.TIMEOUT: N_("timeout"),
    Status.NOT_SUBMITTED: N_("not submitted"),
    Status.WRONG_WEEK: N_("wrong week"),
}


@cache
def environment() -> Environment:
    """The report's environment (built once)."""
    env = make_environment("autograder.report")
    env.globals["status_text"] = STATUS_TEXT
    env.globals["status_name"] = STATUS_NAME
    return env
