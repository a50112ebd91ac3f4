"""The libraries grading runs on: the framework's own, and the course's.

The course names its grading environment in ``course.toml``, ``[grading]``: its libraries
at exact versions (``[grading.libraries]``, what ``make setup`` installs) and the modules
the zygote imports before its first fork (``preload``); ``course.Course.grading`` reads
both into a ``GradingEnvironment``. Adding a library is an edit of that course file,
never of this package. The framework itself needs only
``FRAMEWORK_LIBRARIES`` to run notebooks and hidden tests. Every library of both enters
the grader version (``provenance.py``), so a change of any means a regrade. The
worker never imports this module: the launcher hands the zygote its preload list.
"""

from __future__ import annotations

from dataclasses import dataclass

# distribution names, as pip and importlib.metadata spell them: what runs a notebook and its hidden tests
FRAMEWORK_LIBRARIES = ("ipython", "pytest")


@dataclass(frozen=True)
class GradingEnvironment:
    """A course's grading environment: its exact pins (distribution name, version), and
    the modules every worker starts with already imported."""

    pins: tuple[tuple[str, str], ...] = ()
    preload: tuple[str, ...] = ()

    @property
    def libraries(self) -> tuple[str, ...]:
        """Every distribution whose version can move a score: the framework's and the course's."""
        return FRAMEWORK_LIBRARIES + tuple(name for name, _ in self.pins)
