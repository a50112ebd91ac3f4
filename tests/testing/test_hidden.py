"""A hidden test's markers are checked in one place (autograder/testing/hidden.py) and a bad
one is caught wherever the suite is used: `pytest source`, generation, and grading."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.exceptions import CourseError, GenerationError
from autograder.execution import Sandboxed
from autograder.generate import generate_week
from autograder.grading.grader import grade
from autograder.testing.hidden import collect, read_markers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "generate"
GOOD = "@pytest.mark.task(1)\n@pytest.mark.points(10)"
BAD_MARKERS = [
    ("@pytest.mark.task(0)\n@pytest.mark.points(10)", "@pytest.mark.task(0) is not valid"),
    ("@pytest.mark.task(1.5)\n@pytest.mark.points(10)", "@pytest.mark.task(1.5) is not valid"),
    ("@pytest.mark.task(1)\n@pytest.mark.points('ten')", "@pytest.mark.points('ten') is not valid"),
    ("@pytest.mark.task(1)\n@pytest.mark.points(-2)", "@pytest.mark.points(-2) is not valid"),
    (f"{GOOD}\n@pytest.mark.call_timeout(0)", "@pytest.mark.call_timeout(0) is not valid"),
    (f"{GOOD}\n@pytest.mark.call_timeout('5s')", "@pytest.mark.call_timeout('5s') is not valid"),
    ("@pytest.mark.task(1)", "every hidden test needs @pytest.mark.task(N) and @pytest.mark.points(P)"),
]


def hidden(markers: str) -> str:
    return f"import pytest\n\n\n{markers}\ndef test_hidden(student):\n    assert True\n"


@pytest.fixture
def course(tmp_path: Path) -> Course:
    """The tiny week99 of the generation tests: one task worth 10 points, one hidden test."""
    week = tmp_path / "source" / "week99"
    (week / "tests").mkdir(parents=True)
    shutil.copy(FIXTURES / "week99.ipynb", week / "week99.ipynb")
    (week / "tests" / "test_week99.py").write_text(hidden(GOOD))
    return Course(tmp_path)


def test_valid_markers_are_read_as_numbers(course: Course) -> None:
    tests = course.root / "source" / "week99" / "tests"
    (tests / "test_week99.py").write_text(hidden(f"{GOOD}\n@pytest.mark.call_timeout(20)"))
    [item] = collect(tests)
    markers = read_markers(item)
    assert (markers.task, markers.points, markers.call_timeout, markers.problems) == (1, 10.0, 20.0, [])


@pytest.mark.slow
@pytest.mark.parametrize(("markers", "says"), BAD_MARKERS)
def test_pytest_on_the_source_refuses_a_bad_marker(course: Course, markers: str, says: str) -> None:
    tests = course.root / "source" / "week99" / "tests"
    (tests / "test_week99.py").write_text(hidden(markers))
    run = subprocess.run([sys.executable, "-m", "pytest", str(tests), "-q", "-p", "no:randomly"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert says in run.stderr
    assert "test_week99.py::test_hidden" in run.stderr


@pytest.mark.parametrize(("markers", "says"), BAD_MARKERS)
def test_generation_refuses_a_bad_marker(course: Course, markers: str, says: str) -> None:
    (course.root / "source" / "week99" / "tests" / "test_week99.py").write_text(hidden(markers))
    with pytest.raises(GenerationError, match="nothing was written") as caught:
        generate_week(course.week("week99"))
    assert says in str(caught.value)


@pytest.mark.sandbox
def test_grading_refuses_a_bad_call_timeout_before_any_submission_runs(course: Course) -> None:
    (course.root / "source" / "week99" / "tests" / "test_week99.py").write_text(
        hidden(f"{GOOD}\n@pytest.mark.call_timeout(-1)"))
    with pytest.raises(CourseError, match=r"@pytest.mark.call_timeout\(-1\) is not valid"):
        grade(course.week("week99"), [], isolation=Sandboxed())


@pytest.mark.slow
@pytest.mark.parametrize("points", [12, 8])
def test_pytest_on_the_source_refuses_tests_that_do_not_add_up_to_the_tasks_points(course: Course,
                                                                                  points: int) -> None:
    tests = course.root / "source" / "week99" / "tests"
    (tests / "test_week99.py").write_text(hidden(f"@pytest.mark.task(1)\n@pytest.mark.points({points})"))

    def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", *args, "-q", "-p", "no:randomly"],
                              capture_output=True, text=True, timeout=120)

    run = pytest_run(str(tests))
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert f"hidden tests of task 1 add up to {points} points, the task is worth 10: fix their " \
           "@pytest.mark.points" in run.stderr
    assert pytest_run(str(tests), "-k", "hidden").returncode == pytest.ExitCode.USAGE_ERROR  # -k narrows later
    # one test named alone is not the week's whole suite: its points cannot be judged
    single = pytest_run(f"{tests / 'test_week99.py'}::test_hidden")
    assert single.returncode == 0, single.stdout + single.stderr
    (tests / "test_week99.py").write_text(hidden(GOOD))
    assert pytest_run(str(tests)).returncode == 0
