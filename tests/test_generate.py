"""`autograder generate`: student and solution notebooks from a source notebook.

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
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.course import Course
from autograder.exceptions import GenerationError, MarkerError
from autograder.generate import Difference, generate_course, generate_week, solution_notebook, student_notebook
from autograder.generate.pipeline import STUDENT_STEPS, run
from autograder.generate.steps import (
    AnswerPrompts,
    ClearOutputs,
    ClearSolutions,
    Context,
    LeakGuard,
    Preprocessor,
    StripMarkers,
)
from autograder.testing.budgets import source_cells
from tests.helpers import numbered_notebook, write_week_from_the_docs

FIXTURES = Path(__file__).parent / "fixtures" / "generate"
SOURCE = FIXTURES / "week99.ipynb"
STUB = "# your code here\nraise NotImplementedError()"
# it calls the student's code: `autograder generate` refuses a test that passes without an answer
HIDDEN = ("import numpy as np\nimport pytest\n\n\n@pytest.mark.task(1)\n@pytest.mark.points(10)\n"
          "def test_hidden(student):\n    model = student.Mean().fit(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]))\n"
          "    assert list(model.predict(np.zeros((2, 1)))) == [2.0, 2.0]\n")


@pytest.fixture
def course(tmp_path: Path) -> Course:
    """A tiny course: the fixture notebook as source/week99, a data file, hidden tests."""
    week = tmp_path / "source" / "week99"
    (week / "tests").mkdir(parents=True)
    (week / "data").mkdir()
    shutil.copy(SOURCE, week / "week99.ipynb")
    (week / "data" / "points.csv").write_text("x,y\n1,2\n")
    (week / "data" / "notes.txt").write_text("small data\n")
    (week / "tests" / "test_week99.py").write_text(HIDDEN)
    (week / ".ipynb_checkpoints").mkdir()
    (week / ".ipynb_checkpoints" / "week99-checkpoint.ipynb").write_text("{}")
    return Course(tmp_path)


def code_cell_source(cell_source: str, *, solution: bool = False) -> str:
    nb = numbered_notebook(new_code_cell(cell_source))
    build = solution_notebook if solution else student_notebook
    return build(nb, path=Path("w.ipynb")).cells[0].source


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


@pytest.mark.parametrize(
    ("source", "student", "solution"),
    [
        pytest.param("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", STUB, "x = 1", id="whole-cell"),
        pytest.param(
            "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",
            "def f(x):\n    # your code here\n    raise NotImplementedError()",
            "def f(x):\n    return x",
            id="indented",
        ),
        pytest.param(
            "if True:\n\t### BEGIN SOLUTION\n\ty = 2\n\t### END SOLUTION\nz = 3",
            "if True:\n\t# your code here\n\traise NotImplementedError()\nz = 3",
            "if True:\n\ty = 2\nz = 3",
            id="tab-indented",
        ),
        pytest.param(
            "a = 0\n### BEGIN SOLUTION\nb = 1\n### END SOLUTION\nc = 2\n  ### BEGIN SOLUTION\n  d = 3\n  ### END SOLUTION",
            f"a = 0\n{STUB}\nc = 2\n  # your code here\n  raise NotImplementedError()",
            "a = 0\nb = 1\nc = 2\n  d = 3",
            id="two-regions",
        ),
        pytest.param("### BEGIN SOLUTION\n### END SOLUTION", STUB, "", id="empty-region"),
        pytest.param("print('no regions')", "print('no regions')", "print('no regions')", id="no-region"),
    ],
)
def test_regions_become_stubs_in_the_student_notebook_and_plain_code_in_the_solution(
    source: str, student: str, solution: str
) -> None:
    assert code_cell_source(source) == student
    assert code_cell_source(source, solution=True) == solution


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line", "says"),
    [
        pytest.param("x = 1\n### BEGIN SOLUTION\ny = 2", 2, "never closed", id="unclosed"),
        pytest.param("x = 1\n### END SOLUTION", 2, "without a ### BEGIN SOLUTION", id="end-without-begin"),
        pytest.param(
            "### BEGIN SOLUTION\nx = 1\n### BEGIN SOLUTION\ny = 2\n### END SOLUTION\n### END SOLUTION",
            3,
            "may not nest",
            id="nested",
        ),
        pytest.param("# BEGIN SOLUTION\nx = 1\n# END SOLUTION", 1, "malformed", id="one-hash"),
        pytest.param("### BEGIN SOLUTION\nx = 1\n## END SOLUTION", 3, "malformed", id="two-hashes"),
        pytest.param("#### BEGIN SOLUTION\nx = 1", 1, "malformed", id="four-hashes"),
        pytest.param("### begin solution\nx = 1\n### end solution", 1, "malformed", id="lower-case"),
        pytest.param("### BEGIN SOLUTIONS\nx = 1\n### END SOLUTIONS", 1, "malformed", id="plural"),
        pytest.param("###BEGIN SOLUTION\nx = 1\n###END SOLUTION", 1, "malformed", id="no-space"),
        pytest.param("### BEGIN_SOLUTION\nx = 1", 1, "malformed", id="underscore"),
        pytest.param("### BEGIN SOLUTION\nx = 1\n### END SOLUTON", 3, "malformed", id="misspelt-end"),
        pytest.param("    # Begin Soltuion\nx = 1", 1, "malformed", id="misspelt-begin"),
        pytest.param("x = 1  ### BEGIN SOLUTION\ny = 2\n### END SOLUTION", 1, "malformed", id="code-before"),
        pytest.param("### BEGIN SOLUTION\ny = 2\n### END SOLUTION  # done", 3, "malformed", id="comment-after"),
        pytest.param("BEGIN SOLUTION\nx = 1\nEND SOLUTION", 1, "malformed", id="capitals-without-hash"),
        pytest.param("x = 1\n# Begin Solution here", 2, "malformed", id="comment"),
        pytest.param(
            "def f():\n    ### BEGIN SOLUTION\n    return 1\n### END SOLUTION", 4, "indented differently", id="indent"
        ),
    ],
)
def test_bad_markers_are_refused_with_file_cell_and_line(source: str, line: int, says: str) -> None:
    nb = numbered_notebook(new_markdown_cell("## Task 1"), new_code_cell(source))
    for build in (student_notebook, solution_notebook):
        with pytest.raises(MarkerError, match=rf"^src/w\.ipynb: cell 2, line {line}: .*{says}"):
            build(nb, path=Path("src/w.ipynb"))


def test_words_that_merely_resemble_markers_are_not_refused() -> None:
    source = ("the_end_solution = 1\nprint('we begin, solution follows')  # fine\nprint('the end solution')\n"
              "# end of the solving loop\n# begin solving")
    assert code_cell_source(source) == source


def test_marker_text_outside_code_cells_is_refused() -> None:
    nb = numbered_notebook(new_code_cell("x = 1"), new_markdown_cell("Answer:\n### BEGIN SOLUTION\n42\n### END SOLUTION"))
    with pytest.raises(MarkerError, match=r"cell 2, line 2: solution markers work only in code cells"):
        student_notebook(nb, path=Path("w.ipynb"))


def test_a_refused_week_writes_nothing(course: Course) -> None:
    week = course.week("week99")
    nb = nbformat.read(week.source_notebook, as_version=nbformat.NO_CONVERT)
    nb.cells[3].source += "\n### END SOLUTION"
    nbformat.write(nb, week.source_notebook)
    with pytest.raises(MarkerError, match=rf"^{week.source_notebook}: cell 4, line 19: "):
        generate_week(week)
    assert not (course.root / "assignments").exists()
    assert not (course.root / "solutions").exists()


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        (new_code_cell("model answer", metadata={"autograder": {"answer": 3}}), "an answer cell .* must be markdown"),
        (new_markdown_cell("model answer", metadata={"autograder": {"answer": "3"}}), "autograder.answer must be a task number"),
    ],
)
def test_a_malformed_answer_cell_is_refused(cell: nbformat.NotebookNode, says: str) -> None:
    with pytest.raises(GenerationError, match=rf"^w\.ipynb: cell 1: {says}"):
        student_notebook(numbered_notebook(cell), path=Path("w.ipynb"))


def test_a_second_notebook_in_the_week_folder_is_refused(course: Course) -> None:
    shutil.copy(SOURCE, course.root / "source" / "week99" / "draft.ipynb")
    with pytest.raises(GenerationError, match=r"draft\.ipynb: only week99\.ipynb is generated"):
        generate_week(course.week("week99"))
    assert not (course.root / "assignments").exists()


# --- the leak guard ----------------------------------------------------------------------


def student_steps_with(replaced: type[Preprocessor], by: list[Preprocessor]) -> list[Preprocessor]:
    """The student pipeline with one step swapped for others: a broken generator."""
    steps: list[Preprocessor] = []
    for step in STUDENT_STEPS:
        steps.extend(by if isinstance(step, replaced) else [step])
    return steps


def test_the_leak_guard_refuses_a_solution_line_that_survives() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    broken = student_steps_with(ClearSolutions, [StripMarkers()])  # keeps the solution, drops markers
    with pytest.raises(GenerationError, match=r"cell 4, line 8: .*'self\.mean_ = float\(np\.mean\(y\)\) \+ self\.shift'"):
        run(broken, source, path=SOURCE)


def test_the_leak_guard_refuses_a_model_answer_that_survives() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    with pytest.raises(GenerationError, match=r"cell 8, line 1: .*The mean minimises the squared error"):
        run(student_steps_with(AnswerPrompts, []), source, path=SOURCE)


def test_the_leak_guard_refuses_the_reference_outputs() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    with pytest.raises(GenerationError, match=r"cell 5: the student notebook would carry the reference's outputs"):
        run(student_steps_with(ClearOutputs, []), source, path=SOURCE)


def test_the_marker_guard_refuses_surviving_markers() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    with pytest.raises(GenerationError, match=r"cell 4, line 8: solution-marker text survives"):
        run(student_steps_with(ClearSolutions, []), source, path=SOURCE)


def test_the_leak_guard_refuses_a_solution_line_moved_to_another_cell() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    student = student_notebook(source, path=SOURCE)
    student.cells[2].source += "\n    return  np.full(len(X),self.mean_)"  # re-spaced, re-indented
    with pytest.raises(GenerationError, match=r"cell 3, line 2: "):
        LeakGuard().preprocess(student, Context(path=SOURCE, source=source))


def test_lines_shared_with_public_code_and_empty_lines_are_not_leaks() -> None:
    """A region may repeat what its cell shows outside it, and keywords reveal nothing."""
    nb = numbered_notebook(
        new_code_cell("total = compute(x)\nfor item in items:\n    pass\nelse:\n    pass"),
        new_code_cell(
            "def f(x):\n"
            "    total = compute(x)\n"
            "    ### BEGIN SOLUTION\n"
            "    total = compute(x)\n"
            "    if total:\n"
            "        return self\n"
            "    else:\n"
            "        pass\n"
            "    )\n"
            "    raise NotImplementedError()\n"
            "    ### END SOLUTION\n"
            "    return self"
        ),
        new_markdown_cell("The model answer line.", metadata={"autograder": {"answer": 1}}),
        new_markdown_cell("The model answer line."),
    )
    student = student_notebook(nb, path=Path("w.ipynb"))
    assert student.cells[1].source == "def f(x):\n    total = compute(x)\n    # your code here\n    raise NotImplementedError()\n    return self"


def test_the_leak_guard_ignores_lines_that_reveal_nothing_but_not_the_rest() -> None:
    """Blank lines, punctuation and keyword-only lines are never secret, wherever they turn up."""
    source = numbered_notebook(
        new_code_cell("x = 1"),
        new_code_cell("### BEGIN SOLUTION\nif ready:\n    return self\nelse:\n    pass\n)\n\nsteps = 2 * x\n### END SOLUTION"),
    )
    student = student_notebook(source, path=Path("w.ipynb"))
    student.cells[0].source += "\n\nelse:\n    return self\n    pass\n)"
    LeakGuard().preprocess(student, Context(path=Path("w.ipynb"), source=source))
    student.cells[0].source += "\nif ready:"
    with pytest.raises(GenerationError, match=r"cell 1, line 7: .*'if ready:'"):
        LeakGuard().preprocess(student, Context(path=Path("w.ipynb"), source=source))


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


# --- the whole week is checked before anything is written ----------------------------------


def edit_source(course: Course, change) -> None:
    week = course.week("week99")
    nb = nbformat.read(week.source_notebook, as_version=nbformat.NO_CONVERT)
    change(nb)
    nbformat.write(nb, week.source_notebook)


def refused(course: Course, *says: str) -> str:
    """Generate week99, expecting a refusal that says each of ``says``; nothing written."""
    with pytest.raises(GenerationError) as caught:
        generate_week(course.week("week99"))
    message = str(caught.value)
    assert message.startswith(f"{course.week('week99').source_notebook}: nothing was written"), message
    for text in says:
        assert text in message
    assert not (course.root / "assignments").exists()
    assert not (course.root / "solutions").exists()
    return message


@pytest.mark.parametrize(("cell", "says"), [
    (new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\nassert f(1) == 1"),
     "holds a solution region, so students would get a stub instead of the check"),
    (new_code_cell("from autograder.testing import MissingName\nassert True"), "imports autograder"),
    (new_markdown_cell("Check that `square(2) == 4`."), "must be a code cell of plain asserts"),
])
def test_a_public_check_that_would_not_reach_students_whole_or_run_on_colab_is_refused(
        course: Course, cell: nbformat.NotebookNode, says: str) -> None:
    cell.metadata["autograder"] = {"check": True}
    cell.id = "public-check"
    edit_source(course, lambda nb: nb.cells.append(cell))
    count = len(nbformat.read(course.week("week99").source_notebook, as_version=4).cells)
    refused(course, f'cell {count}: a public check (metadata "check": true)', says)


def test_a_public_check_of_plain_asserts_reaches_students_as_written(course: Course) -> None:
    check = new_code_cell("import numpy as np\nassert np.isclose(square(2), 4), 'square(2) should be 4'",
                          metadata={"autograder": {"check": True}})
    check.id = "public-check"
    edit_source(course, lambda nb: nb.cells.append(check))
    generate_week(course.week("week99"))
    student = nbformat.read(course.week("week99").assignment_notebook, as_version=4)
    assert student.cells[-1].source == check.source and student.cells[-1].metadata.autograder.check is True


def test_a_hand_graded_task_without_a_model_answer_cell_is_refused(course: Course) -> None:
    def forget_answer_metadata(nb):
        del nb.cells[7].metadata["autograder"]

    edit_source(course, forget_answer_metadata)
    refused(course, "cell 7: task 2 is graded by hand but has no model-answer cell", "'### Model answer'")


def test_heading_points_that_differ_from_the_metadata_are_refused(course: Course) -> None:
    edit_source(course, lambda nb: setattr(nb.cells[1], "source", "## Task 1 (25 points): a constant predictor"))
    refused(course, "cell 2: the heading of task 1 says 25 points, its metadata 10: make them agree")


@pytest.mark.parametrize("declared", ["heading", "metadata"])
def test_tasks_that_do_not_add_up_to_the_weeks_total_are_refused(course: Course, declared: str) -> None:
    def declare_total(nb):
        if declared == "heading":
            nb.cells[0].source = "# Week 99: a tiny test week (20 points)"
        else:
            nb.metadata["autograder"]["points"] = 20

    edit_source(course, declare_total)
    refused(course, "the tasks' points add up to 15 (10 + 5), the week's total is 20")


def test_an_autograded_task_without_a_hidden_test_is_refused(course: Course) -> None:
    (course.root / "source" / "week99" / "tests" / "test_week99.py").write_text("def helper():\n    pass\n")
    refused(course, "cell 2: task 1 has no hidden test: add one marked @pytest.mark.task(1)")


def test_a_hidden_test_naming_a_task_the_notebook_lacks_is_refused(course: Course) -> None:
    tests = course.root / "source" / "week99" / "tests"
    (tests / "test_more.py").write_text(
        "import pytest\n\n\n@pytest.mark.task(3)\n@pytest.mark.points(4)\ndef test_extra(student):\n    pass\n"
    )
    refused(course, f"{tests}: hidden tests name task 3, which the notebook lacks (test_more.py::test_extra)")


def test_hidden_tests_that_do_not_collect_are_refused(course: Course) -> None:
    (course.root / "source" / "week99" / "tests" / "test_broken.py").write_text("def broken(:\n")
    with pytest.raises(GenerationError, match=r"the hidden tests do not collect, so nothing was written"):
        generate_week(course.week("week99"))
    assert not (course.root / "assignments").exists()


def test_a_notebook_that_does_not_say_its_week_is_refused(course: Course) -> None:
    def forget_week(nb):
        del nb.metadata["autograder"]
        nb.cells[0].source = "# A tiny test week"

    edit_source(course, forget_week)
    refused(course, "the notebook does not say which week it is: open it with a title cell '# Week 99: title")


def test_a_notebook_that_names_another_week_is_refused(course: Course) -> None:
    edit_source(course, lambda nb: nb.metadata["autograder"].update(week="week98"))
    refused(course, "metadata says week 'week98', its title heading 'week99'", "lives in source/week99")


def test_every_problem_is_listed_at_once(course: Course) -> None:
    def break_twice(nb):
        nb.cells[1].source = "## Task 1 (25 points): a constant predictor"
        del nb.cells[7].metadata["autograder"]

    edit_source(course, break_twice)
    message = refused(course)
    assert message.count("\n  - ") == 2, message


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
    edit_source(course, lambda nb: nb.cells[7].metadata.clear())
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

    edit_source(course, text_only)
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


def test_a_model_answer_to_an_autograded_task_is_refused(course: Course) -> None:
    edit_source(course, lambda nb: nb.cells.insert(2, new_markdown_cell("### Model answer\n\nsecret")))
    refused(course, "cell 3: a model answer to task 1, which is not graded by hand")


def test_a_model_answer_under_another_tasks_heading_is_refused(course: Course) -> None:
    edit_source(course, lambda nb: nb.cells.insert(2, new_markdown_cell("x", metadata={"autograder": {"answer": 2}})))
    refused(course, "cell 3: the model answer to task 2 sits under the heading of task 1: move it under task 2's heading")


def test_a_task_heading_without_points_is_refused(course: Course) -> None:
    edit_source(course, lambda nb: nb.cells.insert(5, new_markdown_cell("## Task 3: more")))
    refused(course, "cell 6: task 3 has no points: write them in its heading, '## Task 3 (10 points): what to do'")


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
