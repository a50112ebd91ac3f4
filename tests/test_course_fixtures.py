"""Every week's fixture submissions, graded through the real sandboxed pipeline.

``tests/fixtures/weekNN/expectations.json`` says what each must get: correct-but-different
variants full marks, each plausible wrong answer a loss on the right task and full marks
on the others (and, under ``fails``, the hidden tests that must be the ones to catch it),
the untouched stub ``not_attempted``, and a notebook that bypasses what task N teaches
(``{"bypass": N}``: scikit-learn or brute force where the student was to implement it,
hand-set attributes, doing nothing) at most a quarter of task N and every point of the
others. Every autograded task of every week has at least one bypass fixture.
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
from tests.helpers import notebook_bytes, throwaway_course

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


BYPASS_KEEPS_AT_MOST = 0.25  # of the bypassed task's points: a bypass loses at least three quarters


def bypass_problems(result: SubmissionResult, task: int) -> list[str]:
    """Why ``result`` is not what a bypass of ``task`` must get (none when it is): at most
    a quarter of that task's points, and every point of each other autograded task."""
    if task not in {t.task for t in result.tasks if not t.manual}:
        return [f"task {task} is not an autograded task of the week"]
    problems = []
    for t in result.tasks:
        if t.manual:
            continue
        if t.task == task and t.score > BYPASS_KEEPS_AT_MOST * t.max_score + 1e-9:
            problems.append(f"keeps {t.score:g} of task {task}'s {t.max_score:g} points: a bypass of the task keeps at "
                            f"most {BYPASS_KEEPS_AT_MOST * t.max_score:g} (make its tests check what the task teaches)")
        if t.task != task and t.score < t.max_score - 1e-9:
            failed = [r.name for r in result.tests if r.task == t.task and not r.passed]
            problems.append(f"loses points on task {t.task} ({', '.join(failed)}): a bypass of task {task} must keep "
                            f"full marks on every other task")
    return problems


def bypass_gaps(course: Course, fixtures: Path) -> list[str]:
    """Autograded tasks that no fixture bypasses (``"week05 task 3"``), and bypass entries
    that name no autograded task of their week: a task whose tests never met a bypass may
    hand most of its points to code that skips what it teaches."""
    gaps = []
    for name in course.week_names():
        path = fixtures / name / "expectations.json"
        expectations = json.loads(path.read_text()) if path.is_file() else {}
        autograded = [t.number for t in course.week(name).tasks if not t.manual]
        bypassed = set()
        for fixture, expected in expectations.items():
            task = expected.get("bypass")
            if task is None:
                continue
            if type(task) is not int or task not in autograded:
                gaps.append(f"{path}: {fixture}: bypass {task!r} is not an autograded task of {name} "
                            f"({', '.join(map(str, autograded))}): write one of those")
            bypassed.add(task)
        gaps += [f"{name} task {task}" for task in autograded if task not in bypassed]
    return gaps


def test_every_autograded_task_has_a_bypass_fixture(course: Course):
    gaps = bypass_gaps(course, FIXTURES)
    assert gaps == [], ("add a notebook that bypasses what the task teaches, with {\"bypass\": N} in the week's "
                        "expectations.json (docs/AUTHORING.md, fixture submissions)", gaps)


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
    if "bypass" in expected:
        assert bypass_problems(result, expected["bypass"]) == []


def test_feedback_never_reveals_hidden_test_source(course: Course, slot: ZygoteSlot):
    """No line of a hidden test file appears in any feedback text, unless the student wrote
    it in their own notebook (a crash's location quotes the student's line, and a test may
    hold the same line of reference code the student wrote)."""
    for week in WEEKS:
        secret_lines = {line.strip() for f in course.week(week).test_files for line in f.read_text().splitlines()
                        if len(line.strip()) > 25 and not line.strip().startswith(("#", '"""', "def ", "@"))}
        for name, result in graded(course, slot, week).items():
            own = (FIXTURES / week / name).read_text(encoding="utf-8", errors="replace")
            text = "\n".join([*(t.output for t in result.tests), *result.messages])
            leaked = [line for line in secret_lines if line in text and json.dumps(line)[1:-1] not in own]
            assert not leaked, (week, result.key, leaked[:3])


def test_another_weeks_notebook_says_so(course: Course, slot: ZygoteSlot):
    """Week 3's notebook handed in for week 2: not a silent 0, a status and a message that say why."""
    result = graded(course, slot, "week02")["wrong_week_handed_week03.ipynb"]
    assert result.status is Status.WRONG_WEEK
    assert result.messages[0].startswith("This notebook is week03's (its metadata says so), not week02's")
    right = graded(course, slot, "week02")["correct_loops.ipynb"]
    assert right.status is Status.GRADED and not any("metadata says" in m for m in right.messages)


# --- the bypass check on a throwaway course: task 1 sums, task 2 doubles, task 3 by hand ------

BYPASS_CELLS = [
    ("markdown", "# Week 7: Bypass drill (32 points)"),
    ("markdown", "## Task 1 (8 points): a sum\n\nWrite `total(xs)` with a loop (no `sum`)."),
    ("code", "def total(xs):\n    ### BEGIN SOLUTION\n    t = 0\n    for x in xs:\n        t += x\n    return t\n"
             "    ### END SOLUTION"),
    ("markdown", "## Task 2 (4 points): double\n\nWrite `double(x)`."),
    ("code", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
    ("markdown", "## Task 3 (20 points, by hand): why loops?\n\nExplain."),
    ("markdown", "### Model answer\n\nTo see every step."),
]
BYPASS_TESTS = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_total_of_nothing(student):
    """total([]) is 0"""
    assert student.total([]) == 0, "total([]) should be 0"


@pytest.mark.task(1)
@pytest.mark.points(6)
def test_total_of_three(student):
    """total([1, 2, 3]) is 6"""
    assert student.total([1, 2, 3]) == 6, "total([1, 2, 3]) should be 6"


@pytest.mark.task(2)
@pytest.mark.points(4)
def test_double(student):
    """double(2) is 4"""
    assert student.double(2) == 4, "double(2) should be 4"
'''
DOUBLE = "def double(x):\n    return 2 * x"


@pytest.fixture
def bypass_drill(tmp_path: Path) -> Course:
    return throwaway_course(tmp_path, "week07", BYPASS_CELLS, "test_week07_bypass.py", BYPASS_TESTS)


def test_the_bypass_check_holds_a_bypass_to_a_quarter_of_its_task(bypass_drill: Course, slot: ZygoteSlot):
    notebooks = {
        "do_nothing": ["def total(xs):\n    return 0", DOUBLE],  # keeps 2 of 8: exactly a quarter
        "hard_coded": ["def total(xs):\n    return 6", DOUBLE],  # keeps 6 of 8: the tests let it through
        "breaks_task_2": ["def total(xs):\n    return 0", "def double(x):\n    return x"],
    }
    subs = [Submission(origin=name, key=name, content=notebook_bytes(*cells), seed=1)
            for name, cells in notebooks.items()]
    results = {r.key: r for r in grade(bypass_drill.week("week07"), subs, isolation=Sandboxed(slot=slot))}
    assert bypass_problems(results["do_nothing"], 1) == []
    assert bypass_problems(results["hard_coded"], 1) == [
        "keeps 6 of task 1's 8 points: a bypass of the task keeps at most 2 (make its tests check what the task "
        "teaches)"]
    assert bypass_problems(results["breaks_task_2"], 1) == [
        "loses points on task 2 (test_double): a bypass of task 1 must keep full marks on every other task"]
    assert bypass_problems(results["do_nothing"], 3) == ["task 3 is not an autograded task of the week"]


def test_a_task_without_a_bypass_fixture_is_caught(bypass_drill: Course, tmp_path: Path):
    folder = tmp_path / "fixtures" / "week07"
    folder.mkdir(parents=True)
    expectations = folder / "expectations.json"
    expectations.write_text(json.dumps({"do_nothing.ipynb": {"bypass": 1}, "right.ipynb": {"full": True}}))
    assert bypass_gaps(bypass_drill, tmp_path / "fixtures") == ["week07 task 2"]  # task 3 is marked by hand
    expectations.write_text(json.dumps({"do_nothing.ipynb": {"bypass": 1}, "half.ipynb": {"bypass": 2}}))
    assert bypass_gaps(bypass_drill, tmp_path / "fixtures") == []
    expectations.write_text(json.dumps({"a.ipynb": {"bypass": 1}, "b.ipynb": {"bypass": 2}, "c.ipynb": {"bypass": 3},
                                        "d.ipynb": {"bypass": "2"}}))
    assert bypass_gaps(bypass_drill, tmp_path / "fixtures") == [
        f"{expectations}: c.ipynb: bypass 3 is not an autograded task of week07 (1, 2): write one of those",
        f"{expectations}: d.ipynb: bypass '2' is not an autograded task of week07 (1, 2): write one of those"]
