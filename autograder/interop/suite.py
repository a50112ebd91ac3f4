"""A week's hidden tests as the exporters need them: file, test name, task and points."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from autograder.course import Week
from autograder.exceptions import CourseError
from autograder.grading.grader import pytest_args
from autograder.grading.loop import hidden_tests


@dataclass(frozen=True)
class ExportedTest:
    file: str  # relative to the week's tests folder: "test_week01_perceptron.py"
    name: str  # the test's name within the file, as pytest spells it
    task: int
    points: float
    description: str

    @property
    def grade_id(self) -> str:
        """A name nbgrader and otter accept: letters, digits, ``_`` and ``-`` only."""
        return re.sub(r"[^A-Za-z0-9_-]+", "_", self.name).strip("_")


class _Collector:
    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)


def collect(week: Week) -> list[ExportedTest]:
    """Collect the week's hidden tests (nothing runs) and check their points add up."""
    collector = _Collector()
    code = pytest.main([*pytest_args(week), "--collect-only"], plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise CourseError(f"{week.name}: the hidden tests cannot be collected (pytest exit code {int(code)})")
    tests = []
    for test in hidden_tests(week, collector.items):
        file, _, name = test.nodeid.partition("::")
        tests.append(ExportedTest(file, name, test.task, test.points, test.description))
    return tests
