"""What `autograder generate` refuses before it writes anything (autograder/generate/validate.py):
a week's whole source is checked, and every problem listed at once."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.course import Course
from autograder.exceptions import GenerationError
from autograder.generate import generate_week
from tests.helpers import edit_week99, week99_course


@pytest.fixture
def course(tmp_path: Path) -> Course:
    return week99_course(tmp_path)


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
    edit_week99(course, lambda nb: nb.cells.append(cell))
    count = len(nbformat.read(course.week("week99").source_notebook, as_version=4).cells)
    refused(course, f'cell {count}: a public check (metadata "check": true)', says)


def test_a_public_check_of_plain_asserts_reaches_students_as_written(course: Course) -> None:
    check = new_code_cell("import numpy as np\nassert np.isclose(square(2), 4), 'square(2) should be 4'",
                          metadata={"autograder": {"check": True}})
    check.id = "public-check"
    edit_week99(course, lambda nb: nb.cells.append(check))
    generate_week(course.week("week99"))
    student = nbformat.read(course.week("week99").assignment_notebook, as_version=4)
    assert student.cells[-1].source == check.source and student.cells[-1].metadata.autograder.check is True


def test_a_hand_graded_task_without_a_model_answer_cell_is_refused(course: Course) -> None:
    def forget_answer_metadata(nb):
        del nb.cells[7].metadata["autograder"]

    edit_week99(course, forget_answer_metadata)
    refused(course, "cell 7: task 2 is graded by hand but has no model-answer cell", "'### Model answer'")


def test_heading_points_that_differ_from_the_metadata_are_refused(course: Course) -> None:
    edit_week99(course, lambda nb: setattr(nb.cells[1], "source", "## Task 1 (25 points): a constant predictor"))
    refused(course, "cell 2: the heading of task 1 says 25 points, its metadata 10: make them agree")


@pytest.mark.parametrize("declared", ["heading", "metadata"])
def test_tasks_that_do_not_add_up_to_the_weeks_total_are_refused(course: Course, declared: str) -> None:
    def declare_total(nb):
        if declared == "heading":
            nb.cells[0].source = "# Week 99: a tiny test week (20 points)"
        else:
            nb.metadata["autograder"]["points"] = 20

    edit_week99(course, declare_total)
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

    edit_week99(course, forget_week)
    refused(course, "the notebook does not say which week it is: open it with a title cell '# Week 99: title")


def test_a_notebook_that_names_another_week_is_refused(course: Course) -> None:
    edit_week99(course, lambda nb: nb.metadata["autograder"].update(week="week98"))
    refused(course, "metadata says week 'week98', its title heading 'week99'", "lives in source/week99")


def test_every_problem_is_listed_at_once(course: Course) -> None:
    def break_twice(nb):
        nb.cells[1].source = "## Task 1 (25 points): a constant predictor"
        del nb.cells[7].metadata["autograder"]

    edit_week99(course, break_twice)
    message = refused(course)
    assert message.count("\n  - ") == 2, message


def test_a_model_answer_to_an_autograded_task_is_refused(course: Course) -> None:
    edit_week99(course, lambda nb: nb.cells.insert(2, new_markdown_cell("### Model answer\n\nsecret")))
    refused(course, "cell 3: a model answer to task 1, which is not graded by hand")


def test_a_model_answer_under_another_tasks_heading_is_refused(course: Course) -> None:
    edit_week99(course, lambda nb: nb.cells.insert(2, new_markdown_cell("x", metadata={"autograder": {"answer": 2}})))
    refused(course, "cell 3: the model answer to task 2 sits under the heading of task 1: move it under task 2's heading")


def test_a_task_heading_without_points_is_refused(course: Course) -> None:
    edit_week99(course, lambda nb: nb.cells.insert(5, new_markdown_cell("## Task 3: more")))
    refused(course, "cell 6: task 3 has no points: write them in its heading, '## Task 3 (10 points): what to do'")


