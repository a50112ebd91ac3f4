"""`autograder generate` of a week (autograder/generate/week.py): the student and solution
notebooks written from a source notebook, the data copied, check mode, determinism.

The expected-output files beside the source fixture (nbstripout style) are the spec:
tests/fixtures/generate/week99.ipynb generates week99.student.ipynb and
week99.solution.ipynb byte for byte. After an intended change of output, regenerate them
with ``generate_week`` and review the diff before committing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.exceptions import GenerationError, MarkerError
from autograder.generate import Difference, generate_course, generate_week
from autograder.testing.budgets import source_cells
from tests.helpers import GENERATE_SOURCE as SOURCE
from tests.helpers import WEEK99_HIDDEN as HIDDEN
from tests.helpers import edit_week99, week99_course, write_week_from_the_docs

FIXTURES = SOURCE.parent


@pytest.fixture
def course(tmp_path: Path) -> Course:
    return week99_course(tmp_path)


# --- the generated files ---------------------------------------------------------------


def test_generated_notebooks_match_the_expected_files(course: Course) -> None:
    week = course.week("week99")
    generate_week(week)
    assert week.assignment_notebook.read_bytes() == (FIXTURES / "week99.student.ipynb").read_bytes()
    assert week.solution_notebook.read_bytes() == (FIXTURES / "week99.solution.ipynb").read_bytes()


def test_data_files_are_copied_to_both_outputs_and_hidden_tests_are_not(course: Course) -> None:
    week = course.week("week99")
    written = generate_week(week)
    for folder in ("assignments", "solutions"):
        out = course.root / folder / "week99" / "en"
        assert (out / "data" / "points.csv").read_text() == "x,y\n1,2\n"
        assert (out / "data" / "notes.txt").read_text() == "small data\n"
        assert not (out / "tests").exists()
        assert not (out / ".ipynb_checkpoints").exists()
    assert written == sorted(
        Difference(Path(folder, "week99", "en", name), "missing")
        for folder in ("assignments", "solutions")
        for name in ("week99.ipynb", "data/points.csv", "data/notes.txt")
    )


def test_the_student_notebook_keeps_metadata_and_answer_cells_for_the_grader(course: Course) -> None:
    week = course.week("week99")
    generate_week(week)
    student = nbformat.read(week.assignment_notebook, as_version=4)
    source = nbformat.read(SOURCE, as_version=4)
    source.metadata.autograder["language"] = "en"  # the one key generation adds: feedback's language
    assert student.metadata == source.metadata
    assert [c.id for c in source_cells(student.cells)] == [c.id for c in source.cells]
    answer = student.cells[-1]
    assert answer.metadata["autograder"] == {"answer": 2}
    assert answer.source == "*Write your answer to task 2 here.*"
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in student.cells)
    assert source_cells(student.cells)[3].metadata == {"tags": ["keep-me"]}  # run timings go, the rest stays


def test_a_refused_week_writes_nothing(course: Course) -> None:
    week = course.week("week99")
    nb = nbformat.read(week.source_notebook, as_version=nbformat.NO_CONVERT)
    nb.cells[3].source += "\n### END SOLUTION"
    nbformat.write(nb, week.source_notebook)
    with pytest.raises(MarkerError, match=rf"^{week.source_notebook}: cell 4, line 19: "):
        generate_week(week)
    assert not (course.root / "assignments").exists()
    assert not (course.root / "solutions").exists()


def test_a_second_notebook_in_the_week_folder_is_refused(course: Course) -> None:
    shutil.copy(SOURCE, course.root / "source" / "week99" / "draft.ipynb")
    with pytest.raises(GenerationError, match=r"draft\.ipynb: only week99\.ipynb is generated"):
        generate_week(course.week("week99"))
    assert not (course.root / "assignments").exists()


# --- determinism -------------------------------------------------------------------------


def _generated_bytes(course: Course) -> dict[str, bytes]:
    return {
        str(p.relative_to(course.root)): p.read_bytes()
        for folder in ("assignments", "solutions")
        for p in sorted((course.root / folder).rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_generation_is_byte_identical_across_runs_and_places(tmp_path: Path) -> None:
    courses = []
    for place in ("one", "two/deeper"):
        week = tmp_path / place / "source" / "week99"
        (week / "tests").mkdir(parents=True)
        shutil.copy(SOURCE, week / "week99.ipynb")
        (week / "tests" / "test_week99.py").write_text(HIDDEN)
        courses.append(Course(tmp_path / place))
        generate_week(courses[-1].week("week99"))
    assert _generated_bytes(courses[0]) == _generated_bytes(courses[1])
    notebook_path = courses[0].week("week99").assignment_notebook
    before = notebook_path.stat().st_mtime_ns
    assert generate_week(courses[0].week("week99")) == []
    assert notebook_path.stat().st_mtime_ns == before  # an up-to-date file is not rewritten


@pytest.mark.slow
def test_a_source_without_cell_ids_gets_stable_ones(course: Course) -> None:
    week = course.week("week99")
    nb = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    nb.nbformat_minor = 4
    for cell in nb.cells:
        del cell["id"]
    nbformat.write(nb, week.source_notebook)
    generate_week(week)
    first = week.assignment_notebook.read_bytes()
    week.assignment_notebook.unlink()
    generate_week(week)
    assert week.assignment_notebook.read_bytes() == first
    student = nbformat.reads(first.decode(), as_version=nbformat.NO_CONVERT)
    assert student.nbformat_minor == 5
    assert [c.id for c in source_cells(student.cells)] == [f"cell-{i}" for i in range(len(nb.cells))]


# --- check mode --------------------------------------------------------------------------

ALL_FILES = [
    Path(folder, "week99", "en", name)
    for folder in ("assignments", "solutions")
    for name in ("week99.ipynb", "data/points.csv", "data/notes.txt")
]


def test_check_reports_missing_files_and_writes_nothing(course: Course) -> None:
    differences = generate_week(course.week("week99"), check=True)
    assert differences == sorted(Difference(path, "missing") for path in ALL_FILES)
    assert not (course.root / "assignments").exists()
    assert not (course.root / "solutions").exists()


@pytest.mark.slow
def test_check_is_clean_when_the_committed_files_are_up_to_date(course: Course) -> None:
    generate_week(course.week("week99"))
    (course.root / "assignments" / "week99" / ".ipynb_checkpoints").mkdir()  # Jupyter's, ignored
    (course.root / "assignments" / "week99" / ".ipynb_checkpoints" / "x.ipynb").write_text("{}")
    assert generate_week(course.week("week99"), check=True) == []
    assert generate_course(course, check=True) == []


@pytest.mark.slow
def test_check_reports_stale_missing_and_extra_files_and_a_write_fixes_them(course: Course) -> None:
    week = course.week("week99")
    generate_week(week)
    source = nbformat.read(week.source_notebook, as_version=nbformat.NO_CONVERT)
    source.cells[0].source = "# Week 99, revised"
    nbformat.write(source, week.source_notebook)
    (week.source_dir / "data" / "points.csv").unlink()  # its copies are now extra
    (week.source_dir / "data" / "new.csv").write_text("a\n")  # its copies are missing
    (course.root / "solutions" / "week99" / "en" / "stray.txt").write_text("left over")
    expected = sorted(
        [
            Difference(Path("assignments/week99/en/week99.ipynb"), "different"),
            Difference(Path("solutions/week99/en/week99.ipynb"), "different"),
            Difference(Path("assignments/week99/en/data/points.csv"), "extra"),
            Difference(Path("solutions/week99/en/data/points.csv"), "extra"),
            Difference(Path("solutions/week99/en/stray.txt"), "extra"),
            Difference(Path("assignments/week99/en/data/new.csv"), "missing"),
            Difference(Path("solutions/week99/en/data/new.csv"), "missing"),
        ]
    )
    assert generate_week(week, check=True) == expected
    assert generate_course(course, weeks=["99"], check=True) == expected
    assert str(expected[0]) == "not generated yet: assignments/week99/en/data/new.csv"
    assert expected[0].done() == "wrote assignments/week99/en/data/new.csv"

    assert generate_week(week) == expected
    assert generate_week(week, check=True) == []
    assert not (course.root / "solutions" / "week99" / "en" / "stray.txt").exists()
    assert nbformat.read(week.assignment_notebook, as_version=4).cells[0].source == "# Week 99, revised"


@pytest.mark.slow
def test_a_write_prunes_folders_it_emptied(course: Course) -> None:
    week = course.week("week99")
    generate_week(week)
    shutil.rmtree(week.source_dir / "data")
    generate_week(week)
    assert not (course.root / "assignments" / "week99" / "en" / "data").exists()
    assert (course.root / "assignments" / "week99" / "en" / "week99.ipynb").is_file()


def test_a_stray_file_in_the_week_folder_is_refused_and_audit_toml_is_not_copied(course: Course) -> None:
    week = course.root / "source" / "week99"
    (week / "audit.toml").write_text("[audit]\n")
    generate_week(course.week("week99"))
    assert not (course.root / "assignments" / "week99" / "en" / "audit.toml").exists()
    (week / "points.csv").write_text("x\n")
    with pytest.raises(GenerationError, match=r"points\.csv: nothing was written: a week's folder holds only "
                                              r"week99\.ipynb, tests/, data/, locale/, audit\.toml and week\.toml\. "
                                              r"Move a data file into data/"):
        generate_week(course.week("week99"), check=True)


@pytest.mark.sandbox
def test_the_command_says_what_it_wrote_and_what_was_up_to_date(course: Course) -> None:
    from typer.testing import CliRunner

    from autograder.cli import app

    first = CliRunner().invoke(app, ["generate", "--course", str(course.root)])
    assert first.exit_code == 0, first.output
    assert "wrote assignments/week99/en/week99.ipynb" in first.output
    assert "missing" not in first.output
    again = CliRunner().invoke(app, ["generate", "--course", str(course.root)])
    assert again.exit_code == 0 and "week99: up to date" in again.output, again.output
    edit_week99(course, lambda nb: nb.cells[7].metadata.clear())
    refusal = CliRunner().invoke(app, ["generate", "--course", str(course.root)])
    assert refusal.exit_code == 2
    assert "task 2 is graded by hand but has no model-answer cell" in " ".join(refusal.output.split())


# --- authoring in the cells' text, without the metadata editor ------------------------------


def test_headings_declare_the_week_and_tasks_and_a_model_answer_heading_its_answer(course: Course) -> None:
    def text_only(nb):
        nb.metadata.pop("autograder")
        for cell in nb.cells:
            cell.metadata.pop("autograder", None)
        nb.cells[0].source = "# Week 99: a tiny test week (15 points)"
        nb.cells[7].source = "### Model answer\n\nThe mean minimises the squared error."

    edit_week99(course, text_only)
    week = course.week("week99")
    assert [(t.number, t.points, t.manual, t.title) for t in week.tasks] == [
        (1, 10.0, False, "a constant predictor"), (2, 5.0, True, "why the mean?")]
    assert week.title == "a tiny test week"
    generate_week(week)
    student = nbformat.read(week.assignment_notebook, as_version=4)
    solution = nbformat.read(week.solution_notebook, as_version=4)
    assert source_cells(student.cells)[7].source == "*Write your answer to task 2 here.*"
    assert "minimises" in source_cells(solution.cells)[7].source
    for nb in (student, solution):  # what the grader and the marking sheet read
        assert nb.metadata["autograder"] == {"week": "week99", "title": "a tiny test week", "language": "en"}
        cells = source_cells(nb.cells)
        assert cells[1].metadata["autograder"] == {"task": 1, "points": 10}
        assert cells[6].metadata["autograder"] == {"task": 2, "points": 5, "manual": True}
        assert cells[7].metadata["autograder"] == {"answer": 2}


# --- a week written from scratch, as docs/AUTHORING.md tells -------------------------------------

@pytest.mark.slow
def test_the_week_written_from_scratch_in_the_docs_generates_and_its_tests_pass(tmp_path: Path) -> None:
    import subprocess
    import sys

    source = write_week_from_the_docs(tmp_path)
    (source.parent / "data").mkdir()
    (source.parent / "data" / "starts.csv").write_text("0,1\n")
    week = Course(tmp_path).week("week07")
    assert week.title == "k-means"
    assert [(t.number, t.points, t.manual) for t in week.tasks] == [(1, 40, False), (2, 40, False), (3, 20, True)]
    written = generate_week(week)
    assert Difference(Path("assignments/week07/en/data/starts.csv"), "missing") in written
    student = nbformat.read(week.assignment_notebook, as_version=4)
    text = "\n".join(c.source for c in student.cells)
    assert "argmin" not in text and "k-means only finds a local minimum" not in text
    assert "*Write your answer to task 3 here.*" in text
    assert generate_week(week, check=True) == []

    def hidden_tests(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", str(week.tests_dir), "-q", "-p", "no:cacheprovider",
                               "-p", "no:randomly", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)

    for seed in ("0", "7"):
        on_reference = hidden_tests("--seed", seed)
        assert on_reference.returncode == 0, on_reference.stdout[-3000:]
    wrong = nbformat.read(week.solution_notebook, as_version=4)
    for cell in wrong.cells:
        cell.source = cell.source.replace("X[labels == c].mean(axis=0) for c in range(k)",
                                          "np.median(X[labels == c], axis=0) for c in range(k)")
    nbformat.write(wrong, tmp_path / "wrong_median.ipynb")
    on_wrong = hidden_tests("--submission", str(tmp_path / "wrong_median.ipynb"))
    assert on_wrong.returncode == 1 and "1 failed, 3 passed" in on_wrong.stdout, on_wrong.stdout[-3000:]
