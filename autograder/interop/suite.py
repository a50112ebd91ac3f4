"""A week's hidden tests as the exporters need them: file, test name, task and points."""

from __future__ import annotations

import re
from dataclasses import dataclass

from autograder.course import Week
from autograder.testing.hidden import collect as collect_items
from autograder.testing.hidden import hidden_tests


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


def collect(week: Week) -> list[ExportedTest]:
    """Collect the week's hidden tests (nothing runs) and check their markers and points."""
    tests = []
    for test in hidden_tests(week, collect_items(week.tests_dir)):
        file, _, name = test.nodeid.partition("::")
        tests.append(ExportedTest(file, name, test.task, test.points, test.description))
    return tests
