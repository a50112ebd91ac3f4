"""``--jobs N``: several grader processes give the results of one, in the same order, and a
grader process that dies costs only the submission it was grading."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution.run import ZygoteSlot
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.grading.parallel import grade_parallel
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "week01"


CHOSEN = ["correct_fresh_notebook", "wrong_no_bias", "untouched_stub", "cheat_allclose", "wrong_unfitted_ppn",
          "correct_loop_eta_y_x"]


def week01_submissions() -> list[Submission]:
    """Week-1 fixtures (right, wrong, untouched, cheating) and one file that is not a notebook."""
    return [Submission(origin=f"{name}.ipynb", key=name, content=(FIXTURES / f"{name}.ipynb").read_bytes())
            for name in CHOSEN] + [Submission(origin="broken.ipynb", key="broken", content=b"{not json")]


def sleeping_notebook(seconds: int) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import time\ntime.sleep({seconds})")]
    return nbformat.writes(nb).encode()


def comparable(results: list[SubmissionResult]) -> list[dict]:
    return [{k: v for k, v in to_dict(r).items() if k != "duration_s"} for r in results]


@pytest.fixture(scope="module")
def one_job(course: Course, slot: ZygoteSlot) -> list[dict]:
    return comparable(grade(course.week("week01"), week01_submissions(), slot=slot))


def test_two_jobs_give_the_results_of_one_in_the_same_order(course: Course, one_job: list[dict]):
    arrived: list[str] = []
    results = grade_parallel(course.week("week01"), iter(week01_submissions()), jobs=2,
                             on_result=lambda r: arrived.append(r.key))
    assert comparable(results) == one_job
    assert sorted(arrived) == sorted(r["key"] for r in one_job)
    assert {r["status"] for r in one_job} >= {"graded", "not_attempted", "error"}


def test_a_grader_process_that_dies_loses_only_its_submission(course: Course, one_job: list[dict]):
    first, last = week01_submissions()[0], week01_submissions()[1]
    slow = Submission(origin="slow.ipynb", key="slow", content=sleeping_notebook(20))
    killed: list[int] = []

    def kill_the_grader() -> None:
        for child in multiprocessing.active_children():
            if child.name.startswith("autograder-grader") and child.pid is not None:
                killed.append(child.pid)
                child.kill()

    def on_result(result: SubmissionResult) -> None:
        if result.key == first.key:  # the grader now runs `slow`, sleeping
            threading.Timer(1.0, kill_the_grader).start()

    results = grade_parallel(course.week("week01"), [first, slow, last], jobs=1, on_result=on_result)
    assert len(killed) == 1
    assert [r.key for r in results] == ["correct_fresh_notebook", "slow", "wrong_no_bias"]
    assert results[1].status is Status.ERROR and results[1].score == 0
    assert "grading stopped unexpectedly" in results[1].messages[0] and "exit code -9" in results[1].messages[0]
    by_key = {r["key"]: r for r in one_job}
    assert comparable([results[0], results[2]]) == [by_key[first.key], by_key[last.key]]


def test_no_submissions_starts_no_process(course: Course):
    assert grade_parallel(course.week("week01"), [], jobs=4) == []
    with pytest.raises(ValueError):
        grade_parallel(course.week("week01"), [], jobs=0)
