"""Every week's fixture submissions, graded through the real sandboxed pipeline.

``tests/fixtures/weekNN/expectations.json`` says what each must get: correct-but-different
variants full marks, each plausible wrong answer a loss on the right task and full marks
on the others (and, under ``fails``, the hidden tests that must be the ones to catch it),
the untouched stub ``not_attempted``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution import Sandboxed, ZygoteSlot
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
        # a fixed seed per fixture: the outcome CI checks is the same on every run (grading
        # draws a fresh one; how outcomes hold across seeds is checked on the reference)
        subs = [Submission(origin=name, key=Path(name).stem, content=(folder / name).read_bytes(), seed=index)
                for index, name in enumerate(names)]
        _graded[week_name] = {r.submission: r for r in grade(course.week(week_name), subs, isolation=Sandboxed(slot=slot))}
    return _graded[week_name]


def weeks_without_fixtures(course: Course, fixtures: Path) -> list[str]:
    """The course's weeks with no ``fixtures/WEEK/expectations.json``: never checked
    against a plausible wrong answer, so a week that lets one through would go unnoticed."""
    return [w for w in course.week_names() if not (fixtures / w / "expectations.json").is_file()]


def test_every_week_has_fixtures(course: Course):
    assert weeks_without_fixtures(course, FIXTURES) == [], "add tests/fixtures/WEEK (see docs/AUTHORING.md)"
    assert set(WEEKS) <= set(course.week_names()), "fixtures for a week the course does not have"


def test_a_week_without_fixtures_is_caught(tmp_path: Path):
    (tmp_path / "source" / "week07").mkdir(parents=True)
    fixtures = tmp_path / "fixtures"
    (fixtures / "week07").mkdir(parents=True)
    (fixtures / "week07" / "expectations.json").write_text("{}")
    assert weeks_without_fixtures(Course(tmp_path), fixtures) == []
    (tmp_path / "source" / "week08").mkdir()
    assert weeks_without_fixtures(Course(tmp_path), fixtures) == ["week08"]


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
    failed = {t.name for t in result.tests if not t.passed}
    for test in expected.get("fails", []):  # the check that must catch it, not only some check of the task
        assert test in failed, f"{test} should fail; failed: {sorted(failed)}"


def test_feedback_never_reveals_hidden_test_source(course: Course, slot: ZygoteSlot):
    """No line of a hidden test file appears in any feedback text."""
    for week in WEEKS:
        secret_lines = {line.strip() for f in course.week(week).test_files for line in f.read_text().splitlines()
                        if len(line.strip()) > 25 and not line.strip().startswith(("#", '"""', "def ", "@"))}
        for result in graded(course, slot, week).values():
            text = "\n".join([*(t.output for t in result.tests), *result.messages])
            leaked = [line for line in secret_lines if line in text]
            assert not leaked, (week, result.key, leaked[:3])


def test_another_weeks_notebook_says_so(course: Course, slot: ZygoteSlot):
    """Week 3's notebook handed in for week 2: not a silent 0, a status and a message that say why."""
    result = graded(course, slot, "week02")["wrong_week_handed_week03.ipynb"]
    assert result.status is Status.WRONG_WEEK
    assert result.messages[0].startswith("This notebook is week03's (its metadata says so), not week02's")
    right = graded(course, slot, "week02")["correct_loops.ipynb"]
    assert right.status is Status.GRADED and not any("metadata says" in m for m in right.messages)
