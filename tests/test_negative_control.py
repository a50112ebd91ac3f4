"""The negative control (autograder/grading/negative_control.py): a week whose hidden tests
give a point to its student notebook, untouched or with every answer emptied, is refused
by `generate` and by `import`, the tests named. The course's own six weeks pass it in
`make test`'s first step, `autograder generate --check` on the committed notebooks (CI runs it)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

from autograder.audit.run import run_audit
from autograder.cli import app
from autograder.exceptions import CourseError, InteropError
from autograder.generate.week import plan_week
from autograder.grading.negative_control import EMPTIED, UNTOUCHED, check_weeks
from autograder.interop import import_nbgrader
from tests.helpers import throwaway_course

pytestmark = pytest.mark.sandbox

CELLS = [
    ("markdown", "# Week 97: Doubling (3 points)"),
    ("markdown", "## Task 1 (3 points): double"),
    ("code", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
]
REAL = "@pytest.mark.task(1)\n@pytest.mark.points(1)\ndef test_doubles(student):\n    assert student.double(3) == 6\n"


def week_with(tmp_path: Path, weak: str):
    """week97: one real test worth a point, and ``weak`` (two points) beside it."""
    course = throwaway_course(tmp_path, "week97", CELLS, "test_week97_control.py",
                              "import pytest\n\n\n" + REAL + "\n\n" + weak)
    return course.week("week97")


def test_generate_refuses_a_test_that_passes_without_calling_the_students_code(tmp_path: Path):
    # otter's function-style test, its call dropped: it defines a check and passes for everyone
    week = week_with(tmp_path, "@pytest.mark.task(1)\n@pytest.mark.points(2)\ndef test_q1(student):\n"
                               "    def check(double):\n        assert double(3) == 6\n")
    refused = CliRunner().invoke(app, ["generate", "--course", str(tmp_path)])
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2, refused.output
    assert "test_q1 (task 1) earns 2 of 2 point(s) on the untouched student notebook" in said
    assert "test_doubles" not in said
    assert "make it call the student's code" in said
    assert not (tmp_path / "assignments").exists()  # refused before anything was written
    assert "earns 2 of 2 point(s) on the student notebook with every answer emptied" in said
    assert week.name in said


def test_the_audit_refuses_the_week_before_judging_any_mutant(tmp_path: Path):
    week = week_with(tmp_path, "@pytest.mark.task(1)\n@pytest.mark.points(2)\ndef test_q1(student):\n"
                               "    assert student.double is not None\n")
    with pytest.raises(CourseError, match=r"week97: test_q1 \(task 1\) earns 2 of 2 point\(s\) on the untouched"):
        run_audit(week, jobs=1, budget_s=0)


def test_the_emptied_notebook_catches_a_test_the_stubs_error_hides(tmp_path: Path):
    # calls the student's function but never looks at what it returns: the stub's
    # NotImplementedError fails it, an empty answer (None) passes it
    week = week_with(tmp_path, "@pytest.mark.task(1)\n@pytest.mark.points(2)\ndef test_runs(student):\n"
                               "    student.double(3)\n")
    found = check_weeks([(week, plan_week(week).files[week.assignment_notebook])], jobs=1)
    assert [(f.control, f.test.name, f.test.score) for f in found] == [(EMPTIED, "test_runs", 2.0)]
    assert UNTOUCHED not in {f.control for f in found}


NBGRADER_TEST = {"grade": True, "locked": True, "points": 1, "schema_version": 3, "solution": False, "task": False}


def test_import_refuses_an_nbgrader_test_cell_that_passes_on_the_stub(tmp_path: Path):
    nb = nbformat.read(Path(__file__).parent / "fixtures" / "interop" / "squares.ipynb", as_version=4)
    weak = nbformat.v4.new_code_cell('"""squares is a function"""\nassert callable(squares)')
    weak.metadata["nbgrader"] = {**NBGRADER_TEST, "grade_id": "squares_is_callable"}
    del weak["id"]  # the fixture is nbformat 4.4: no cell ids
    nb.cells.insert(5, weak)
    nbformat.write(nb, tmp_path / "weak.ipynb")
    with pytest.raises(InteropError) as refused:
        import_nbgrader(tmp_path / "weak.ipynb", week="week90", out_root=tmp_path / "course")
    said = " ".join(str(refused.value).split())
    assert "week90: test_squares_is_callable (task " in said
    assert ") earns 1 of 1 point(s) on the untouched student notebook" in said
    assert "correct_squares" not in said and "invalid_input" not in said  # the fixture's own tests call squares
    assert not (tmp_path / "course" / "source" / "week90").exists()
