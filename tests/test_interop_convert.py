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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- every construct of issue 24: imported whole, checked before writing, refused by name --

COURSE_TOML = Path(__file__).resolve().parent.parent / "course.toml"


def shipped_course(root: Path) -> Path:
    """An empty course set up as this one ships: four languages offered."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_bytes(COURSE_TOML.read_bytes())
    return root


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "500"})


def compiles(source: str) -> bool:
    try:
        compile(source, "-", "exec")
    except SyntaxError:
        return False
    return True


@pytest.mark.slow
def test_an_nbgrader_course_with_every_construct_imports_and_generates_in_the_shipped_course(tmp_path: Path):
    import nbformat

    root = shipped_course(tmp_path / "course")
    done = cli("import", "nbgrader", str(FIXTURES / "nbgrader_constructs.ipynb"), "--week", "week07", "--course", str(root))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "changed: cell 8, line 4: the solution markers sat shallower than the code they enclose" in said
    assert "needs you: cell 12: task cell 'explain_totals'" in said
    assert "needs you: test cells: nbgrader gives test cells no description" in said
    assert f"next: `autograder generate week07 --course {root}`" in said
    assert (root / "source" / "week07" / "week.toml").read_text().count('"en"') == 2

    assert cli("generate", "week07", "--course", str(root)).returncode == 0
    assert sorted(p.name for p in (root / "assignments" / "week07").iterdir()) == ["en"]  # its own language only
    week = Course.locate(root).week("week07")
    assert [(t.number, t.points, t.manual) for t in week.tasks] == [
        (1, 2.0, False), (2, 1.0, False), (3, 3.0, False), (4, 2.0, True), (5, 2.0, True), (6, 1.0, True)]
    student = nbformat.read(week.assignment_notebook, as_version=4)
    assert all(compiles(c.source) for c in student.cells if c.cell_type == "code")  # the column-0 stub moved
    source = nbformat.read(week.source_notebook, as_version=4)
    assert source.cells[0].source.startswith("# Week 7: Running totals (11 points)\n")
    heading = next(i for i, c in enumerate(source.cells) if c.source.startswith("## Task 3 "))
    assert source.cells[heading + 1].source.startswith("Write `running_total")  # its instructions in its section
    assert not any("autograder" in c.metadata for c in source.cells if c.cell_type == "markdown")  # headings only
    assert "autograder" not in source.metadata

    wrong = nbformat.read(week.solution_notebook, as_version=4)
    for cell in wrong.cells:
        cell.source = cell.source.replace("acc += v", "acc = v")
    nbformat.write(wrong, tmp_path / "wrong.ipynb")
    result = run_hidden_tests(root, "week07", "--submission", str(tmp_path / "wrong.ipynb"), "-rA")
    assert "1 failed, 2 passed" in result.stdout, result.stdout
    assert "PASSED source/week07/tests/test_week07_nbgrader.py::test_squares_rebound" in result.stdout


@pytest.mark.slow
def test_an_otter_course_with_every_construct_imports_and_generates_in_the_shipped_course(tmp_path: Path):
    import nbformat

    root = shipped_course(tmp_path / "course")
    done = cli("import", "otter", str(FIXTURES / "otter_constructs.ipynb"), "--week", "8", "--course", str(root))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    for note in ["dropped: cell 3, line 1: 'import otter'", "dropped: cell 3, line 4: 'grader = otter.Notebook()'",
                 "dropped: cell 7, line 10: 'rng_seed = 0 # SEED'", "dropped: cell 7, line 12: 'print(\"mean\"",
                 "dropped: cell 7, line 13: a # BEGIN IGNORE block", "dropped: cell 9: a markdown solution",
                 "dropped: cell 19, line 1: an inline prompt block", "dropped: cell 42, line 1: 'grader.check(\"q1\")'",
                 "changed: ASSIGNMENT CONFIG: files: 'numbers.csv' is the week's data/numbers.csv",
                 "changed: ASSIGNMENT CONFIG: student_files: 'notes.txt'", "next: `autograder generate week08",
                 "needs you: test cells: 4 hidden tests have no success_message"]:
        assert note in said, note
    assert cli("generate", "week08", "--course", str(root)).returncode == 0
    week = Course.locate(root).week("week08")
    assert [(t.number, t.points, t.manual, t.title) for t in week.tasks] == [
        (1, 1.0, False, "q1"), (2, 4.0, False, "q2"), (3, 1.0, False, "q3"), (4, 2.0, True, "q4")]
    assert (root / "assignments" / "week08" / "en" / "data" / "numbers.csv").is_file()
    student = nbformat.read(week.assignment_notebook, as_version=4)
    text = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    prose = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    assert "import numpy as np" in text and "otter" not in text and "# SEED" not in text and "IGNORE" not in text
    assert "PROMPT" not in text and 'np.loadtxt("data/numbers.csv")' in text
    assert "Hint: divide the sum by the count" in prose  # otter_include: given to students
    assert "The mean is the sum over the count" not in prose  # an autograded question's markdown solution
    assert all(compiles(c.source) for c in student.cells if c.cell_type == "code")
    checks = [c.source for c in student.cells if c.metadata.get("autograder", {}).get("check")]
    assert checks == ["mean_of([1, 2, 3]) == 2", "print(round(mean_of(data), 2))", "label_of(1)", "label_of(3)",
                      "spread == 3", "np.isclose(spread, np.ptp(data))"]  # otter's public tests, as grader.check

    wrong = nbformat.read(week.solution_notebook, as_version=4)
    for cell in wrong.cells:
        cell.source = cell.source.replace('return "low" if x < 2.5 else "high"', 'return "high"')
    handed_in = week.solution_notebook.parent / "wrong.ipynb"  # beside the data/ it reads
    nbformat.write(wrong, handed_in)
    result = run_hidden_tests(root, "week08", "--submission", str(handed_in))
    assert "1 failed, 4 passed" in result.stdout, result.stdout
    assert "label_of(1) should be 'low'" in result.stdout  # otter's failure_message


def test_otter_points_are_shared_out_as_otter_does():
    from autograder.interop.otter_import import share_points

    assert share_points(None, [None, None, None]) == [1 / 3] * 3  # no points anywhere: one point shared
    assert share_points(None, [1, None]) == [1.0, 0.0]  # some given: the rest are worth nothing
    assert share_points(4, [None, 1, None]) == [1.5, 1.0, 1.5]
    assert share_points({"each": 2}, [None, None]) == [2.0, 2.0]
    assert share_points([1, 3], [None, None]) == [1.0, 3.0]


def test_expected_output_ending_in_a_quote_is_written_as_a_literal_that_compiles():
    from autograder.interop.week_writer import literal

    for text in ["2\n'None'", "'low'", "ends in a backslash \\", "has ''' inside", "plain\n"]:
        assert eval(literal(text)) == text  # noqa: S307


def test_a_test_cells_names_are_the_students_as_python_scopes_them():
    from autograder.interop.cell_test import cell_names

    rebinding = "orig = squares\ndel squares\ntry:\n    assert orig(3) == [1, 4, 9]\nfinally:\n    squares = orig"
    assert cell_names(rebinding) == ([], ["orig", "squares"])  # fetched when the submission has them
    shadowing = "def check(values: list) -> list:\n    return running_total(values)\nassert check(values) == [1]"
    assert cell_names(shadowing) == (["values", "running_total"], ["check"])
    assert cell_names("import numpy as np\nassert np.all(x) and len(y) == 2") == (["x", "y"], [])


@pytest.mark.slow
@pytest.mark.parametrize("change, problem", [
    (lambda nb: nb.metadata.update(kernelspec={"name": "ir", "language": "R", "display_name": "R"},
                                   language_info={"name": "R"}),
     "the notebook runs on the 'r' kernel ('ir'): only Python notebooks can be imported"),
    (lambda nb: nb.cells[1].update(source="import numpy as np\nimport seaborn as sns"),
     "`import seaborn as sns`: 'seaborn' is not installed in the grading environment"),
    # a magic beside the import: the cell is not Python until IPython's transformers make it so
    (lambda nb: nb.cells[1].update(source="%matplotlib inline\nimport numpy as np\nimport seaborn as sns\n!ls"),
     "`import seaborn as sns`: 'seaborn' is not installed in the grading environment"),
    # nbgrader's documented "uses squares" check: deleting the student's name is not possible here
    (lambda nb: nb.cells[4].update(source='orig = squares\ndel squares\ntry:\n    sum_of_squares(1)\nexcept NameError:\n'
                                          '    pass\nelse:\n    raise AssertionError("does not use squares")\n'
                                          'finally:\n    squares = orig'),
     "hidden test test_correct_squares (from 'correct_squares') fails on the reference"),
    # a student's matplotlib axes indexed in a test cell: it stays in the worker, only its methods reach the test
    (lambda nb: (nb.cells[3].update(source=nb.cells[3].source + "\n\nimport matplotlib.pyplot as plt\n\n"
                                    "fig, ax = plt.subplots()\nax.plot(squares(3))"),
                 nb.cells[4].update(source="assert list(ax.lines[0].get_ydata()) == [1, 4, 9]")),
     "(from 'correct_squares') fails on the reference: the test cell uses the student's ArtistList object as data "
     "(indexes, iterates, compares, measures or computes with it), but a converted test cell reaches the student's "
     "objects only through their attributes and methods, since they stay in the student's process: check the plain "
     "values those return instead"),
    (lambda nb: nb.cells[3].update(source=nb.cells[3].source.replace("### END SOLUTION", "### END SOLUTON")),
     "/course/source/week90/week90.ipynb"),  # generate's own refusal, naming the file where it will be
    # nbgrader's autotest (its documentation's ps1_autotest): only nbgrader expands the directives into checks
    (lambda nb: nb.cells[4].update(source='"""squares returns the right values"""\n### AUTOTEST squares(1); squares(2)'),
     "cell 5, line 2: test cell 'correct_squares' uses nbgrader's `### AUTOTEST` directives, which only nbgrader "
     "expands into checks: here they are comments, and the test would pass for everyone"),
    (lambda nb: nb.cells[3].update(source="def squares(n):\n    # YOUR CODE HERE\n    raise NotImplementedError()"),
     "cell 4: holds nbgrader's stub (# YOUR CODE HERE) where the solution goes"),
])
def test_an_nbgrader_notebook_that_cannot_become_a_week_is_refused_by_name(tmp_path: Path, change, problem):
    import nbformat

    from autograder.exceptions import InteropError

    nb = nbformat.read(FIXTURES / "squares.ipynb", as_version=4)
    change(nb)
    nbformat.write(nb, tmp_path / "changed.ipynb")
    with pytest.raises(InteropError) as refused:
        import_nbgrader(tmp_path / "changed.ipynb", week="week90", out_root=tmp_path / "course")
    assert problem in str(refused.value)
    assert "nothing was written" in str(refused.value) and not (tmp_path / "course" / "source").exists()
    assert "autograder-import-" not in str(refused.value)  # never the staging copy's path


def test_an_otter_test_cell_with_no_recorded_output_is_refused(tmp_path: Path):
    import nbformat

    from autograder.exceptions import InteropError

    nb = nbformat.read(FIXTURES / "cubes.ipynb", as_version=4)
    nb.cells[9].outputs = []
    nbformat.write(nb, tmp_path / "unrun.ipynb")
    with pytest.raises(InteropError, match=r"cell 10: the test cell ends in `cube\(2\) == 8` but has no recorded output"):
        import_otter(tmp_path / "unrun.ipynb", week="week90", out_root=tmp_path / "course")


@pytest.mark.sandbox  # the import's negative control grades the student notebook
def test_an_otter_test_printing_nothing_by_design_imports(tmp_path: Path):
    """A test cell ending in an expression that is None (otter's example test `None`) records no
    output: otter expects none, gets none, and passes it; so does the import."""
    import nbformat

    nb = nbformat.read(FIXTURES / "cubes.ipynb", as_version=4)
    nb.cells[9].source, nb.cells[9].outputs = "assert cube(2) == 8\nNone", []
    nbformat.write(nb, tmp_path / "none.ipynb")
    import_otter(tmp_path / "none.ipynb", week="week90", out_root=tmp_path / "course")
    assert run_hidden_tests(tmp_path / "course", "week90").returncode == 0


@pytest.mark.sandbox  # the import's negative control grades the student notebook
def test_an_older_notebook_without_a_title_cell_imports_as_nbformat_4_5(tmp_path: Path):
    """nbformat 4.0 (4.4 with a title cell: squares.ipynb itself, imported above) without a
    `# Title` cell: the title the import adds made the week invalid 4.4 ('id' was unexpected)."""
    import nbformat

    nb = nbformat.read(FIXTURES / "squares.ipynb", as_version=4)
    assert nb.cells[0].source.startswith("# Squares")
    del nb.cells[0]
    nb.nbformat_minor = 0
    nbformat.write(nb, tmp_path / "squares_ps1.ipynb")

    written = import_nbgrader(tmp_path / "squares_ps1.ipynb", week="week90", out_root=tmp_path / "course").notebook

    imported = nbformat.read(written, as_version=nbformat.NO_CONVERT)
    assert imported.nbformat_minor == 5 and imported.cells[0].source == "# Week 90: squares ps1 (8 points)"
    ids = [c.id for c in imported.cells]
    assert len(set(ids)) == len(ids) == len(nb.cells) + 5  # the title, four task headings: each its own id


@pytest.mark.parametrize("entry", ["../private.txt", "ABSOLUTE", "link.txt", "linked/private.txt"])
def test_an_otter_file_outside_the_notebooks_folder_is_refused(tmp_path: Path, entry: str):
    """otter accepts `../../x` and absolute paths in `files:`; shipped here, such a file would reach
    every student and worker. Refused by name, nothing copied."""
    import nbformat

    from autograder.exceptions import InteropError

    (tmp_path / "private.txt").write_text("the answers")
    folder = tmp_path / "hw"
    folder.mkdir()
    (folder / "link.txt").symlink_to(tmp_path / "private.txt")
    (folder / "linked").symlink_to(tmp_path)
    entry = str(tmp_path / "private.txt") if entry == "ABSOLUTE" else entry
    nb = nbformat.read(FIXTURES / "cubes.ipynb", as_version=4)
    nb.cells[0].source += f"\nfiles:\n  - {entry}"
    nbformat.write(nb, folder / "cubes.ipynb")
    with pytest.raises(InteropError) as refused:
        import_otter(folder / "cubes.ipynb", week="week90", out_root=tmp_path / "course")
    assert f"ASSIGNMENT CONFIG: files: {entry!r} is outside the master notebook's folder ({folder})" in str(refused.value)
    assert "copy the file (only what students may see) into that folder" in str(refused.value)
    assert not (tmp_path / "course" / "source").exists()


@pytest.mark.sandbox  # the import's negative control grades the student notebook
def test_the_courses_own_modules_beside_the_notebook_are_its_helpers_not_libraries(tmp_path: Path):
    """`from utilities import square` in the notebook and `from lib.checks import expected` in a
    hidden test: the course's modules beside the notebook, shipped as the week's helpers (the
    one the notebook imports handed out too), never reported as missing PyPI libraries."""
    done = cli("import", "nbgrader", str(FIXTURES / "helpers" / "squares_helped.ipynb"), "--week", "week07",
               "--course", str(tmp_path))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert ("changed: `from utilities import square`: utilities.py beside the notebook is the course's own module, "
            "not a library: copied into the week's folder and listed in week.toml's [files] helpers") in said
    assert "lib/checks.py beside the notebook is the course's own module" in said and "not installed" not in said
    folder = tmp_path / "source" / "week07"
    assert '[files]\nhelpers = ["lib/checks.py", "utilities.py"]\nhandout = ["utilities.py"]\n' in \
        (folder / "week.toml").read_text()
    for helper in ("utilities.py", "lib/checks.py"):
        assert (folder / helper).read_bytes() == (FIXTURES / "helpers" / helper).read_bytes()
    assert cli("generate", "week07", "--course", str(tmp_path)).returncode == 0
    handed_out = tmp_path / "assignments" / "week07" / "en"
    assert (handed_out / "utilities.py").is_file() and not (handed_out / "lib").exists()


@pytest.mark.sandbox  # the import's negative control grades the student notebook
def test_an_otter_test_calling_its_function_on_an_ignored_line_keeps_the_call(tmp_path: Path):
    """The OK-format function style: `def test_cube(cube): ...` then `test_cube(cube)  # IGNORE`.
    otter drops the line from the student notebook only; the test it runs calls the function."""
    import nbformat

    nb = nbformat.read(FIXTURES / "cubes.ipynb", as_version=4)
    nb.cells[9].source = "def test_cube(cube):\n    assert cube(2) == 8\n\ntest_cube(cube)  # IGNORE"
    nb.cells[9].outputs = []
    nbformat.write(nb, tmp_path / "functions.ipynb")
    import_otter(tmp_path / "functions.ipynb", week="week90", out_root=tmp_path / "course")

    week = Course.locate(tmp_path / "course").week("week90")
    assert "test_cube(cube)  # IGNORE" in (week.tests_dir / "test_week90_otter.py").read_text()
    checks = [c.source for c in nbformat.read(week.source_notebook, as_version=4).cells
              if c.metadata.get("autograder", {}).get("check")]
    assert checks == ["def test_cube(cube):\n    assert cube(2) == 8\n\ntest_cube(cube)"]  # as grader.check runs it
    from autograder.generate.week import generate_week

    generate_week(week)
    untouched = run_hidden_tests(tmp_path / "course", "week90", "--submission", str(week.assignment_notebook))
    assert "2 failed" in untouched.stdout, untouched.stdout  # otter gives the untouched notebook 0 too


@pytest.mark.sandbox  # the import's negative control grades the student notebook
def test_an_otter_module_in_files_is_the_weeks_helper_not_data(tmp_path: Path):
    """otter ships a course's module through `files:` (the notebook imports it from beside
    itself): here it is a helper module, importable while grading and handed out, not data/."""
    import nbformat

    folder = tmp_path / "hw"
    folder.mkdir()
    (folder / "cubing.py").write_text("def cube_of(x):\n    return x ** 3\n")
    nb = nbformat.read(FIXTURES / "cubes.ipynb", as_version=4)
    nb.cells[0].source += "\nfiles:\n  - cubing.py"
    nb.cells[2].source = "import numpy as np\nfrom cubing import cube_of"
    nb.cells[6].source = nb.cells[6].source.replace("return x ** 3", "return cube_of(x)")
    nbformat.write(nb, folder / "cubes.ipynb")

    notes = [str(n) for n in import_otter(folder / "cubes.ipynb", week="week90", out_root=tmp_path / "course").notes]

    week = tmp_path / "course" / "source" / "week90"
    assert not (week / "data").exists() and (week / "cubing.py").is_file()
    assert '[files]\nhelpers = ["cubing.py"]\nhandout = ["cubing.py"]\n' in (week / "week.toml").read_text()
    assert any(n.startswith("changed: ASSIGNMENT CONFIG: files: 'cubing.py' is a Python module: not copied into data/")
               for n in notes)


@pytest.mark.parametrize("change, problem", [
    (lambda nb: nb.cells[0].update(source="# ASSIGNMENT CONFIG\nname: [cubes"),
     "cell 1: the ASSIGNMENT CONFIG settings are not YAML"),
    (lambda nb: nb.cells[10].update(source=nb.cells[10].source.replace("points: 2", "points: [2")),
     "cell 11: its TEST CONFIG block is not YAML"),
    (lambda nb: (nb.cells[0].update(source=nb.cells[0].source + "\ntests:\n  ok_format: false"),
                 nb.cells[9].update(source="def test_cube(env):\n    assert env['cube'](2) == 8"),
                 nb.cells[10].update(source="def test_more(cube):\n    assert cube(3) == 27")),
     "cell 10: test function test_cube() takes `env`, the whole notebook namespace"),
])
def test_an_otter_notebook_that_cannot_become_a_week_is_refused_by_name(tmp_path: Path, change, problem):
    import nbformat

    from autograder.exceptions import InteropError

    nb = nbformat.read(FIXTURES / "cubes.ipynb", as_version=4)
    change(nb)
    nbformat.write(nb, tmp_path / "changed.ipynb")
    with pytest.raises(InteropError) as refused:
        import_otter(tmp_path / "changed.ipynb", week="week90", out_root=tmp_path / "course")
    assert problem in str(refused.value) and str(tmp_path / "changed.ipynb") in str(refused.value)
    assert not (tmp_path / "course" / "source").exists()


@pytest.mark.slow
def test_the_weeks_language_comes_from_the_option_else_the_notebook_else_the_course(tmp_path: Path):
    import nbformat

    nb = nbformat.read(FIXTURES / "squares.ipynb", as_version=4)
    nb.metadata["language"] = "ru"
    nbformat.write(nb, tmp_path / "ru.ipynb")
    settings = "source/week90/week.toml"
    import_nbgrader(tmp_path / "ru.ipynb", week="week90", out_root=shipped_course(tmp_path / "a"))
    assert 'source = "ru"' in (tmp_path / "a" / settings).read_text()
    import_nbgrader(tmp_path / "ru.ipynb", week="week90", out_root=shipped_course(tmp_path / "b"), language="pt")
    assert 'source = "pt"' in (tmp_path / "b" / settings).read_text()
    import_nbgrader(FIXTURES / "squares.ipynb", week="week90", out_root=shipped_course(tmp_path / "c"))
    assert 'source = "en"' in (tmp_path / "c" / settings).read_text()


@pytest.mark.slow
@pytest.mark.parametrize("week", ["week16v1", "week100", "seven"])
def test_a_bad_week_name_is_a_clear_error(tmp_path: Path, week: str):
    done = cli("import", "nbgrader", str(FIXTURES / "squares.ipynb"), "--week", week, "--course", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    said = " ".join(done.stderr.split())
    assert f"--week {week!r} is not a week name" in said and "week07" in said and "week06" not in said


@pytest.mark.slow
def test_an_existing_week_is_never_overwritten(tmp_path: Path):
    from autograder.exceptions import InteropError

    import_nbgrader(FIXTURES / "squares.ipynb", week="week90", out_root=tmp_path)
    with pytest.raises(InteropError, match="exists already"):
        import_otter(FIXTURES / "cubes.ipynb", week="week90", out_root=tmp_path)
    assert not (tmp_path / "source" / "week90" / "tests" / "test_week90_otter.py").exists()


@pytest.mark.sandbox  # the import's negative control grades the student notebook
def test_an_nbgrader_test_cell_sees_what_an_earlier_test_cell_imported(tmp_path: Path):
    """nbgrader runs the test cells in one kernel, so a later cell may use an import only an
    earlier test cell made (the numerical-methods course's `from numpy.testing import
    assert_allclose` in its first hidden test): the converted tests import it too, and a
    name an earlier test cell computed is refused, saying to compute it in the cell."""
    import nbformat

    from autograder.exceptions import InteropError

    nb = nbformat.read(FIXTURES / "squares.ipynb", as_version=4)
    nb.cells[4].source = nb.cells[4].source.replace(
        "### BEGIN HIDDEN TESTS\n", "### BEGIN HIDDEN TESTS\nfrom numpy.testing import assert_array_equal\n")
    nb.cells[8].source = nb.cells[8].source.replace(
        "### END HIDDEN TESTS", "assert_array_equal(squares(3), [1, 4, 9])\n### END HIDDEN TESTS")
    nbformat.write(nb, tmp_path / "shared.ipynb")
    import_nbgrader(tmp_path / "shared.ipynb", week="week90", out_root=tmp_path / "course")
    assert run_hidden_tests(tmp_path / "course", "week90").returncode == 0

    nb.cells[4].source = nb.cells[4].source.replace("### END", "nine = squares(3)\n### END")  # hidden: not in the notebook
    nb.cells[8].source = nb.cells[8].source.replace("squares(3), [1", "nine, [1")
    nbformat.write(nb, tmp_path / "computed.ipynb")
    with pytest.raises(InteropError, match=r"it reads `nine`, which neither .* compute it in this test cell too"):
        import_nbgrader(tmp_path / "computed.ipynb", week="week90", out_root=tmp_path / "other")


def test_an_otter_notebook_in_format_v0_is_refused_naming_the_format(tmp_path: Path):
    """otter's older format v0 (its documentation's assign-code-question.ipynb: BEGIN QUESTION
    in a markdown cell's code block, `## Test ##` cells) has no v1 delimiters: the refusal says
    which format it is and what to do, not only that there are no questions."""
    import nbformat

    from autograder.exceptions import InteropError

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("**Question 1.** Assign `x`.\n\n```\nBEGIN QUESTION\nname: q1\npoints: 2\n```"),
        nbformat.v4.new_code_cell("x = 2 # SOLUTION"),
        nbformat.v4.new_code_cell("## Test ##\nisinstance(x, int)"),
    ])
    nbformat.write(nb, tmp_path / "v0.ipynb")
    with pytest.raises(InteropError, match=r"no questions .*: this looks like otter's older format v0 .* format v1"):
        import_otter(tmp_path / "v0.ipynb", week="week90", out_root=tmp_path / "course")
