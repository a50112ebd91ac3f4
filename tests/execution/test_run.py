"""The pieces ``SubmissionRun`` is made of, each on its own (issue 15): the CPU-time
budget and its wall-clock backstops (issue 37) and the restart policy; and the isolation
``grade``'s caller chooses. The sandboxed behaviour they add up to is in
test_worker.py and test_hostile.py; here each rule is pinned at its boundary, with the
seconds spent charged by hand, so a rule that drifts (an off-by-one in the restarts, a budget
that forgets re-runs) fails here by name."""

from __future__ import annotations

import nbformat
import pytest

from autograder.exceptions import StudentTimeout, WorkerCrashed
from autograder.execution import InProcess, Isolation, Limits, Sandboxed
from autograder.execution.budget import Allowance, Budget
from autograder.execution.restarts import RestartPolicy
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.submission import Submission

LIMITS = Limits(cell_timeout_s=30.0, submission_timeout_s=120.0, call_timeout_s=10.0, tests_timeout_s=60.0,
                restarts=2)


# -- the budget -------------------------------------------------------------------------------
def test_a_cell_gets_the_cell_limit_in_cpu_time_until_the_notebook_has_less_left():
    budget = Budget(LIMITS)
    assert budget.cell_allowance() == Allowance(30.0, 120.0)  # the backstop: 4 times the CPU limit
    budget.charge_cell(100.0, 100.0)
    assert budget.cell_allowance() == Allowance(pytest.approx(20.0), 120.0)  # 120 - 100: less than a cell's 30
    assert budget.cut_short(Allowance(20.0, 120.0)) and not budget.cut_short(Allowance(30.0, 120.0))
    budget.charge_cell(20.0, 20.0)
    assert budget.cell_allowance() is None  # spent: the notebook timed out


def test_cells_that_wait_spend_the_backstop_and_not_the_cpu_budget():
    budget = Budget(LIMITS)
    budget.charge_cell(25.0, 100.0)  # 75 s of it asleep
    assert budget.cell_allowance() == Allowance(30.0, 120.0)
    budget.charge_cell(1.0, 350.0)  # a cell that slept: the notebook's backstop (480 s) nearly gone
    assert budget.cell_allowance() == Allowance(30.0, pytest.approx(30.0))
    budget.charge_cell(0.0, 30.0)
    assert budget.cell_allowance() is None


def test_every_run_of_the_notebook_draws_on_one_budget_even_when_a_cell_fails():
    budget = Budget(LIMITS)
    for _ in range(3):  # a cell stopped after 30 s of CPU time, then two re-runs: each charged
        budget.charge_cell(30.0, 30.0)
    assert budget.notebook_cpu == pytest.approx(90.0)
    assert budget.cell_allowance() == Allowance(pytest.approx(30.0), 120.0)


def test_calls_get_their_marker_or_the_call_limit_cut_to_what_the_tests_have_left():
    budget = Budget(LIMITS)
    assert budget.call_allowance() == Allowance(10.0, 40.0)
    assert budget.call_allowance(25.0) == Allowance(25.0, 100.0)  # a test's call_timeout marker
    budget.charge_call(55.0, 55.0)
    assert budget.call_allowance() == Allowance(pytest.approx(5.0), 40.0)
    budget.charge_call(5.0, 5.0)
    with pytest.raises(StudentTimeout) as caught:
        budget.call_allowance()
    assert caught.value.seconds == 60.0 and not caught.value.wall  # the tests' budget, as the student is told


def test_the_tests_backstop_ends_calls_that_spend_no_cpu_time():
    budget = Budget(LIMITS)
    budget.charge_call(0.0, 230.0)  # calls that slept: no CPU time spent, 240 s of backstop nearly gone
    assert budget.call_allowance() == Allowance(10.0, pytest.approx(10.0))
    budget.charge_call(0.0, 10.0)
    with pytest.raises(StudentTimeout) as caught:
        budget.call_allowance()
    assert caught.value.seconds == 240.0 and caught.value.wall


def test_the_grader_is_waited_for_through_the_notebooks_backstop_then_the_cpu_seconds_left():
    budget = Budget(LIMITS)
    assert budget.worker_time_left() == 480.0 + 60.0  # cells that wait end only at the backstop
    budget.charge_cell(20.0, 100.0)
    assert budget.worker_time_left() == pytest.approx(380.0 + 60.0)
    budget.start_tests()
    assert budget.worker_time_left() == pytest.approx(100.0 + 60.0)  # re-runs and calls: their CPU seconds
    budget.charge_call(10.0, 30.0)
    assert budget.worker_time_left() == pytest.approx(100.0 + 50.0)


# -- the restart policy -------------------------------------------------------------------------
def test_fresh_workers_are_counted_and_refused_past_the_limit():
    policy = RestartPolicy(LIMITS.restarts)
    assert policy.take_restart() and policy.take_restart()
    assert not policy.take_restart()
    assert not policy.take_restart()  # stays refused
    assert policy.restarts == 2


def test_no_fresh_worker_at_all_when_none_are_allowed():
    assert not RestartPolicy(0).take_restart()


def test_a_dropped_cell_is_skipped_from_then_on():
    policy = RestartPolicy(LIMITS.restarts)
    policy.drop_cell(3)
    assert policy.skips(3) and not policy.skips(2) and not policy.skips(4)


def test_once_out_of_workers_later_tests_hear_why_the_last_worker_was_lost():
    policy = RestartPolicy(0)
    assert isinstance(policy.out_of_workers(), WorkerCrashed)
    hung = policy.call_hung(7.04)
    assert hung.seconds == 7.0
    later = policy.out_of_workers()
    assert isinstance(later, StudentTimeout) and later.seconds == 7.0  # a hang, not "ended the process"
    policy.call_crashed("the worker ended")
    assert isinstance(policy.out_of_workers(), WorkerCrashed)


# -- the isolation is the caller's choice -------------------------------------------------------
def test_in_process_grading_of_a_trusted_notebook_matches_the_sandbox(course, slot):
    """The same notebook graded both ways gives the same result, cell errors worded alike:
    ``InProcess`` is a real choice for trusted notebooks, not a different grader."""
    week = course.week("week01")
    notebook = nbformat.read(week.source_notebook, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("raise ValueError('my own mistake')"))
    content = nbformat.writes(notebook).encode()

    def graded(isolation: Isolation) -> dict:
        [result] = grade(week, [Submission(origin="ref.ipynb", key="ref", content=content, seed=5)],
                         isolation=isolation)
        return {k: v for k, v in to_dict(result).items() if k != "duration_s"}

    here, sandboxed = graded(InProcess()), graded(Sandboxed(slot=slot))
    assert here == sandboxed
    assert here["status"] == "graded" and here["score"] == here["max_score"] - sum(
        t["max_score"] for t in here["tasks"] if t["manual"])
    assert any("raised ValueError: my own mistake" in m for m in here["messages"])
