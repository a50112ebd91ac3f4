"""``--jobs N``: several grader processes give the results of one, in the same order, and a
grader process that dies costs only the submission it was grading."""

from __future__ import annotations

import multiprocessing
import threading

import nbformat
import pytest

from autograder.course import Course
from autograder.grading.parallel import grade_parallel
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission


def sleeping_notebook(seconds: int) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import time\ntime.sleep({seconds})")]
    return nbformat.writes(nb).encode()


def test_two_jobs_give_the_results_of_one_in_the_same_order(course: Course, week01_mix, week01_mix_local,
                                                              as_comparable):
    arrived: list[str] = []
    results = grade_parallel(course.week("week01"), iter(week01_mix), jobs=2,
                             on_result=lambda r: arrived.append(r.key))
    assert as_comparable(results) == week01_mix_local
    assert sorted(arrived) == sorted(r["key"] for r in week01_mix_local)
    assert {r["status"] for r in week01_mix_local} >= {"graded", "not_attempted", "error"}


@pytest.mark.sandbox
def test_a_grader_process_that_dies_loses_only_its_submission(course: Course, week01_mix, week01_mix_local,
                                                                as_comparable):
    first, last = week01_mix[0], week01_mix[1]
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
    by_key = {r["key"]: r for r in week01_mix_local}
    assert as_comparable([results[0], results[2]]) == [by_key[first.key], by_key[last.key]]


def test_no_submissions_starts_no_process(course: Course):
    assert grade_parallel(course.week("week01"), [], jobs=4) == []
    with pytest.raises(ValueError):
        grade_parallel(course.week("week01"), [], jobs=0)
