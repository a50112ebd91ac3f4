"""A week's own files (week.toml [files]): helper modules importable by the reference, the
student's code and the hidden tests, read-only in every worker; files handed out beside the
student notebook; and every path that would reach outside the week's folder refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.exceptions import CourseError
from autograder.execution import InProcess, Sandboxed
from autograder.generate import generate_course
from autograder.grading.grader import grade
from autograder.submission import Submission
from tests.helpers import notebook_bytes, throwaway_course

HELPER = "def double(x):\n    return 2 * x\n"
SCALE = "def triple(x):\n    return 3 * x\n"
CELLS = [
    ("markdown", "# Week 8: Helpers (4 points)"),
    ("markdown", "## Task 1 (4 points): use the course's helpers"),
    ("code", "from utilities import double\nfrom lib.scale import triple\n\n"
             "def answer(x):\n    ### BEGIN SOLUTION\n    return double(x) + triple(x)\n    ### END SOLUTION"),
]
# the hidden test imports the helpers too, in the grader
TESTS = '''import pytest

from lib.scale import triple
from utilities import double


@pytest.mark.task(1)
@pytest.mark.points(4)
def test_answer(student):
    """answer(x) is double(x) + triple(x)"""
    assert student.answer(7) == double(7) + triple(7), "answer(7) is not double(7) + triple(7)"
'''
# a submission that tries to change the helper every worker reads: it keeps full marks only
# if the helper cannot be written
WRITER = '''import utilities
from lib.scale import triple


def answer(x):
    try:
        with open(utilities.__file__, "a") as f:
            f.write("\\ndef double(x):\\n    return 0\\n")
    except OSError:
        return utilities.double(x) + triple(x)
    return -1
'''


def _week(root: Path, files: str) -> Course:
    course = throwaway_course(root, "week08", CELLS, "test_week08_helpers.py", TESTS)
    folder = root / "source" / "week08"
    (folder / "utilities.py").write_text(HELPER)
    (folder / "lib").mkdir()
    (folder / "lib" / "scale.py").write_text(SCALE)
    (folder / "week.toml").write_text(files)
    return course


HELPERS = '[files]\nhelpers = ["utilities.py", "lib/scale.py"]\nhandout = ["utilities.py"]\n'


@pytest.mark.sandbox
def test_helpers_import_in_the_sandbox_and_the_grader_and_no_student_can_write_them(tmp_path: Path) -> None:
    course = _week(tmp_path, HELPERS)
    week = course.week("week08")
    reference = Submission(origin="ref", key="ref", content=week.source_notebook.read_bytes(), seed=1)
    assert [r.score for r in grade(week, [reference], isolation=InProcess())] == [4.0]
    subs = [Submission(origin=k, key=k, content=notebook_bytes(code), seed=1) for k, code in {
        "right": "from utilities import double\nfrom lib.scale import triple\n\n"
                 "def answer(x):\n    return double(x) + triple(x)",
        "wrong": "from utilities import double\n\ndef answer(x):\n    return double(x)",
        "writer": WRITER,
    }.items()]
    results = {r.key: r for r in grade(week, subs, isolation=Sandboxed())}
    assert {k: r.score for k, r in results.items()} == {"right": 4.0, "wrong": 0.0, "writer": 4.0}, \
        {k: r.messages[:3] for k, r in results.items()}
    assert (week.source_dir / "utilities.py").read_text() == HELPER


def test_handed_out_files_are_generated_beside_the_student_notebook_and_checked(tmp_path: Path) -> None:
    course = _week(tmp_path, HELPERS)
    generate_course(course)
    student = course.week("week08").assignment_notebook
    assert (student.parent / "utilities.py").read_text() == HELPER
    assert not (student.parent / "lib").exists()  # a helper not handed out stays in the week's folder
    (student.parent / "utilities.py").unlink()
    assert [str(d.path) for d in generate_course(course, check=True)] == ["assignments/week08/en/utilities.py"]


@pytest.mark.parametrize(("entry", "says"), [
    ("/etc/passwd", r"\[files\] helpers '/etc/passwd' is an absolute path: copy the file into"),
    ("../../secret.py", r"\[files\] helpers '../../secret.py' leaves the week's folder: copy the file into"),
    ("outside.py", r"\[files\] helpers 'outside.py' is a symlink leading out of the week's folder"),
])
def test_a_path_reaching_outside_the_week_is_refused_naming_the_entry(tmp_path: Path, entry: str, says: str) -> None:
    course = _week(tmp_path / "course", f'[files]\nhelpers = ["{entry}"]\n')
    (tmp_path / "secret.py").write_text("TOKEN = 'instructor only'\n")
    os.symlink(tmp_path / "secret.py", course.root / "source" / "week08" / "outside.py")
    with pytest.raises(CourseError, match=says):
        generate_course(course)
    with pytest.raises(CourseError, match=says):
        grade(course.week("week08"), [], isolation=InProcess())
    assert not (course.root / "assignments").exists()


def test_a_handed_out_file_that_is_the_hidden_tests_is_refused(tmp_path: Path) -> None:
    course = _week(tmp_path, '[files]\nhandout = ["tests/test_week08_helpers.py"]\n')
    with pytest.raises(CourseError, match="would give the hidden tests or the reference solution"):
        generate_course(course)
