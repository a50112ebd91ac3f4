"""The task and points markers of a week's hidden tests, read by collecting them (not running).

Generation checks them against the notebook before writing anything; collecting is how
pytest itself sees markers (class, module ``pytestmark``, parametrize), which reading the
files' text would miss.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.course import Week
from autograder.exceptions import GenerationError


@dataclass(frozen=True)
class MarkedTest:
    nodeid: str
    path: Path
    task: int | None  # None: the test has no @pytest.mark.task
    points: float | None


class _Collector:
    def __init__(self) -> None:
        self.tests: list[MarkedTest] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            task, points = item.get_closest_marker("task"), item.get_closest_marker("points")
            self.tests.append(MarkedTest(item.nodeid, Path(item.path),
                                         int(task.args[0]) if task and task.args else None,
                                         float(points.args[0]) if points and points.args else None))


def collect_marked(week: Week) -> list[MarkedTest]:
    """Every hidden test of ``week`` with its markers; GenerationError if they do not collect."""
    from autograder.grading.grader import pytest_args

    if not week.tests_dir.is_dir():
        return []
    collector = _Collector()
    before = set(sys.modules)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            code = pytest.main([*pytest_args(week), "--collect-only", "-p", "no:randomly"], plugins=[collector])
    finally:
        # pytest's importlib mode reuses a module already imported under the same name:
        # forget this week's test modules, so the next collection reads the files again
        for name in set(sys.modules) - before:
            if Path(getattr(sys.modules[name], "__file__", None) or "/").is_relative_to(week.tests_dir):
                del sys.modules[name]
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise GenerationError(f"{week.tests_dir}: the hidden tests do not collect, so nothing was written: "
                              f"run `pytest {week.tests_dir}` to see why")
    return collector.tests
