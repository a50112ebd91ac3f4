"""The course owns its grading environment (course.toml [grading]): a library it adds is
installed from its requirements file, moves the grader version, is preloaded by the
zygote and serves a generated week, with no file of the framework edited.

The library is PyYAML: installed in the virtualenv (nbformat's tools need it) but not in
this course's list, as pandas would be for a course that adds it."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution import Sandboxed
from autograder.generate import generate_course
from autograder.grading.grader import grade
from autograder.provenance import grader_version
from autograder.submission import Submission
from tests.helpers import throwaway_course

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parent.parent
CELLS = [
    ("markdown", "# Week 5: Configuration files (2 points)"),
    ("code", "import sys\n\nPRELOADED = 'yaml' in sys.modules  # before this notebook imports it\n\nimport yaml"),
    ("markdown", "## Task 1 (2 points): read a setting"),
    ("code", "def rate(text):\n    ### BEGIN SOLUTION\n    return yaml.safe_load(text)['rate']\n    ### END SOLUTION"),
]
TESTS = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_rate(student):
    """rate reads the rate of a YAML document"""
    assert student.PRELOADED, "yaml was not imported before the notebook ran"
    assert student.rate("rate: 0.5\\nepochs: 3\\n") == 0.5, "rate('rate: 0.5') should be 0.5"
'''


def test_a_library_the_course_adds_is_versioned_preloaded_and_graded_with(tmp_path: Path) -> None:
    course = throwaway_course(tmp_path, "week05", CELLS, "test_week05_yaml.py", TESTS)
    toml = (ROOT / "course.toml").read_text()
    (tmp_path / "course.toml").write_text(toml[toml.index("[grading]"):])  # this course's environment, English only
    week = course.week("week05")
    before = week.grader_version
    assert before == grader_version(Course(ROOT).grading.libraries)  # the same environment as this course's

    # what an instructor writes, in course.toml: the library at its exact version, its module in preload
    toml = (tmp_path / "course.toml").read_text().replace('preload = [\n', 'preload = [\n    "yaml",\n')
    (tmp_path / "course.toml").write_text(toml + f'PyYAML = "{version("pyyaml")}"\n')
    week = course.week("week05")
    assert ("pyyaml", version("pyyaml")) in week.grading.pins and "yaml" in week.grading.preload
    assert week.grader_version != before  # a change of the environment means a regrade

    assert generate_course(course)  # the week generates, and its student notebook is the untouched hand-in
    handed_in = {"reference": week.source_notebook, "untouched": week.assignment_notebook}
    subs = [Submission(origin=k, key=k, content=path.read_bytes(), seed=1) for k, path in handed_in.items()]
    results = {r.key: r for r in grade(week, subs, isolation=Sandboxed())}
    assert {k: r.score for k, r in results.items()} == {"reference": 2.0, "untouched": 0.0}, \
        {k: r.messages[:3] for k, r in results.items()}
    assert {r.grader_version for r in results.values()} == {week.grader_version}
