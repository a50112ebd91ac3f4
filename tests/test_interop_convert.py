"""Import and grade-sheet conversions, without nbgrader or otter installed."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.interop import import_nbgrader, import_otter, to_nbgrader_grades_csv, to_otter_final_grades_csv
from autograder.interop.grades import NBGRADER_COLUMNS
from autograder.results import Participant, Status, SubmissionResult, TaskResult

FIXTURES = Path(__file__).parent / "fixtures" / "interop"


def run_hidden_tests(root: Path, week: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "source" / week / "tests"), *extra],
                          capture_output=True, text=True, cwd=root)


@pytest.mark.parametrize("importer, fixture, tasks", [
    (import_nbgrader, "squares.ipynb", [(1, 2.0, False), (2, 1.0, False), (3, 2.0, False), (4, 3.0, True)]),
    (import_otter, "cubes.ipynb", [(1, 3.0, False), (2, 2.0, True)]),
])
def test_import_gives_a_week_whose_tests_pass_on_the_reference(tmp_path: Path, importer, fixture, tasks):
    importer(FIXTURES / fixture, week="week90", out_root=tmp_path)
    week = Course.locate(tmp_path).week("week90")
    assert [(t.number, t.points, t.manual) for t in week.tasks] == tasks
    result = run_hidden_tests(tmp_path, "week90")
    assert result.returncode == 0, result.stdout


def test_imported_tests_fail_on_a_wrong_answer(tmp_path: Path):
    import nbformat

    notebook = import_nbgrader(FIXTURES / "squares.ipynb", week="week90", out_root=tmp_path).notebook
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("return [i ** 2 for i in range(1, n + 1)]", "return [i * 2 for i in range(1, n + 1)]")
    wrong = tmp_path / "wrong.ipynb"
    nbformat.write(nb, wrong)
    result = run_hidden_tests(tmp_path, "week90", "--submission", str(wrong))
    assert "2 failed, 1 passed" in result.stdout, result.stdout  # squares and sum_of_squares; input check keeps


def test_a_student_exception_subclassing_the_expected_one_passes_as_in_nbgrader(tmp_path: Path):
    """nbgrader runs the test cell in the student's kernel, where ``except ValueError``
    catches ``class NotPositive(ValueError)``: the imported test must agree."""
    import nbformat

    notebook = import_nbgrader(FIXTURES / "squares.ipynb", week="week90", out_root=tmp_path).notebook
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("def squares(n):", "class NotPositive(ValueError):\n    pass\n\n\ndef squares(n):")
        cell.source = cell.source.replace('raise ValueError("n must be positive")', 'raise NotPositive("n must be positive")')
    assert "class NotPositive(ValueError)" in "".join(c.source for c in nb.cells)
    subclass = tmp_path / "subclass.ipynb"
    nbformat.write(nb, subclass)
    result = run_hidden_tests(tmp_path, "week90", "--submission", str(subclass))
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout


def results() -> list[SubmissionResult]:
    tasks = [TaskResult(1, 30.0, 40.0), TaskResult(2, 20.0, 20.0), TaskResult(3, 5.0, 20.0, manual=True)]
    return [
        SubmissionResult("a.ipynb", "a", Status.GRADED, tasks=tasks, week="week01",
                         participant=Participant(participant_id="123", full_name="Jane Q Doe")),
        SubmissionResult("b.ipynb", "b", Status.ERROR, week="week01", messages=["not a notebook"]),
    ]


def test_nbgrader_grades_csv_has_nbgraders_columns(tmp_path: Path):
    rows = list(csv.DictReader(to_nbgrader_grades_csv(results(), tmp_path / "grades.csv").open()))
    assert tuple(rows[0]) == NBGRADER_COLUMNS
    assert rows[0] == {"assignment": "week01", "duedate": "", "timestamp": "", "student_id": "123",
                            "last_name": "Doe", "first_name": "Jane Q", "email": "", "raw_score": "55.0",
                            "late_submission_penalty": "0.0", "score": "55.0", "max_score": "80.0"}


def test_otter_final_grades_csv_has_otters_columns(tmp_path: Path):
    with to_otter_final_grades_csv(results(), tmp_path / "final_grades.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["file", "task1", "task2", "total_points_earned", "percent_correct", "grading_status"]
    assert rows[1] == ["points-per-question", "40.0", "20.0", "60.0", "1", "--"]
    assert rows[2] == ["a.ipynb", "30.0", "20.0", "50.0", "0.8333", "Completed"]
    assert rows[3] == ["b.ipynb", "0.0", "0.0", "0.0", "0.0", "not a notebook"]


def test_the_authors_headings_stay_the_task_headings(tmp_path: Path):
    """A '## ...' heading of the author's before a task's solution becomes the task cell: no second heading."""
    import nbformat

    nb = nbformat.read(FIXTURES / "squares.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.source.startswith("Write `squares(n)`"):
            cell.source = "## Question 1: squares\n\n" + cell.source
    source = tmp_path / "headed.ipynb"
    nbformat.write(nb, source)

    imported = nbformat.read(import_nbgrader(source, week="week90", out_root=tmp_path / "course").notebook, as_version=4)

    (question,) = [c for c in imported.cells if c.source.startswith("## Task 1 ")]
    assert question.source.startswith("## Task 1 (2 points): Question 1: squares\n")
    assert "autograder" not in question.metadata  # written once: the heading is the declaration
    week = Course.locate(tmp_path / "course").week("week90")
    assert [(t.number, t.title) for t in week.tasks][0] == (1, "Question 1: squares")
    assert run_hidden_tests(tmp_path / "course", "week90").returncode == 0


def test_import_names_the_files_it_wrote_and_the_marker_finds_its_answers(tmp_path: Path):
    import nbformat

    from autograder.manual import write_manual_sheet
    from autograder.submission import Submission

    done = subprocess.run([sys.executable, "-m", "autograder", "import", "nbgrader", str(FIXTURES / "squares.ipynb"),
                           "--week", "week90", "--course", str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "500"})
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert f"wrote {tmp_path / 'source' / 'week90' / 'week90.ipynb'}" in said
    assert f"wrote {tmp_path / 'source' / 'week90' / 'tests' / 'test_week90_nbgrader.py'}" in said
    assert subprocess.run([sys.executable, "-m", "autograder", "generate", "week90", "--course", str(tmp_path)],
                          capture_output=True).returncode == 0

    week = Course.locate(tmp_path).week("week90")
    handed_out = nbformat.read(week.assignment_notebook, as_version=4)
    student = nbformat.from_dict(handed_out)
    for cell in student.cells:
        if cell.metadata.get("autograder", {}).get("answer") == 4:
            cell.source = "They are never negative."
            cell.metadata = {}  # an editor that drops metadata
    write_manual_sheet(submissions=[Submission(origin="s", key="s", content=nbformat.writes(student).encode())],
                       tasks=week.tasks, csv_path=tmp_path / "m.csv", given=handed_out)
    assert "They are never negative." in (tmp_path / "m.csv").read_text(encoding="utf-8-sig")
