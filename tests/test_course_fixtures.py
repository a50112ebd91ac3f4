"""Every week's fixture submissions, graded through the real sandboxed pipeline.

``tests/fixtures/weekNN/expectations.json`` says what each must get: correct-but-different
variants full marks, each plausible wrong answer a loss on the right task and full marks
on the others, the untouched stub ``not_attempted``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution.run import ZygoteSlot
from autograder.grading.grader import grade
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission

FIXTURES = Path(__file__).parent / "fixtures"
WEEKS = sorted(p.name for p in FIXTURES.glob("week*") if (p / "expectations.json").is_file())
CASES = [(week, name, expected) for week in WEEKS
         for name, expected in json.loads((FIXTURES / week / "expectations.json").read_text()).items()]

_graded: dict[str, dict[str, SubmissionResult]] = {}


def graded(course: Course, slot: ZygoteSlot, week_name: str) -> dict[str, SubmissionResult]:
    """Grade a week's fixtures once, as one batch (the tests are collected once)."""
    if week_name not in _graded:
        folder = FIXTURES / week_name
        names = json.loads((folder / "expectations.json").read_text())
        subs = [Submission(origin=name, key=Path(name).stem, content=(folder / name).read_bytes()) for name in names]
        _graded[week_name] = {r.submission: r for r in grade(course.week(week_name), subs, slot=slot)}
    return _graded[week_name]


def test_every_week_has_fixtures(course: Course):
    assert WEEKS, "no fixture submissions found"
    assert set(WEEKS) <= set(course.week_names())


@pytest.mark.parametrize(("week", "name", "expected"), CASES, ids=[f"{w}/{n}" for w, n, _ in CASES])
def test_fixture_gets_its_expected_outcome(course: Course, slot: ZygoteSlot, week: str, name: str, expected: dict):
    result = graded(course, slot, week)[name]
    autograded = {t.task: t for t in result.tasks if not t.manual}
    failing = [t.output for t in result.tests if t.score < t.max_score]
    if "status" in expected:
        assert result.status == Status(expected["status"]), (result.status, result.messages)
    if expected.get("full"):
        assert result.status == Status.GRADED, result.messages
        assert all(t.score == t.max_score for t in autograded.values()), failing
    for task in expected.get("loses", []):
        assert autograded[task].score < autograded[task].max_score, f"task {task} should lose points"
    for task in expected.get("keeps", []):
        assert autograded[task].score == autograded[task].max_score, (task, failing)


def test_feedback_never_reveals_hidden_test_source(course: Course, slot: ZygoteSlot):
    """No line of a hidden test file appears in any feedback text."""
    for week in WEEKS:
        secret_lines = {line.strip() for f in course.week(week).test_files for line in f.read_text().splitlines()
                        if len(line.strip()) > 25 and not line.strip().startswith(("#", '"""', "def ", "@"))}
        for result in graded(course, slot, week).values():
            text = "\n".join([*(t.output for t in result.tests), *result.messages])
            leaked = [line for line in secret_lines if line in text]
            assert not leaked, (week, result.key, leaked[:3])
