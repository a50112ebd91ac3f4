"""The grader's own bounds and traces between submissions, against the cases of
``tests/hostile/bounds_cases.py``, with ``--jobs 1`` and ``--jobs 2``.

Every case sits between honest neighbours in one batch, graded through
``grade_parallel`` (what ``autograder grade`` runs for every ``--jobs``, 1 included): each
neighbour keeps exactly 60/60, each case gets exactly its expected outcome, and the
batch ends within its budget. On ``main`` the first case alone never returned.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Limits
from autograder.grading.parallel import grade_parallel
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission
from tests.hostile.bounds_cases import CASES, REAL_WEEK_CASES
from tests.hostile.bounds_week import HONEST, notebook, write_course

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parent.parent
LIMITS = Limits(memory_mb=768, zygote_mb=256, nproc=64, scratch_mb=128, cell_timeout_s=5, call_timeout_s=3,
                submission_timeout_s=10, tests_timeout_s=10, restarts=1, grader_test_wall_s=5, grader_test_cpu_s=2)
# 2 s of the grader's CPU per check (5 s before): every honest neighbour keeps 60/60 within it,
# and each case stopped for spinning in the grader costs the CPU it is allowed, in both runs
# the real weeks' honest notebooks need the worker's usual budgets (week 4 takes ~10 s under load)
REAL_WEEK_LIMITS = Limits(grader_test_wall_s=5, grader_test_cpu_s=5)
STOPPED = "made the grader itself work past its"
# a stopped case costs its budgets (at most the worker's time left, 20 s, plus 5 s) and a
# fresh grader process; the rest are seconds each
BUDGET_S = 40.0 * sum(case["expect"] == "stopped" for case in CASES) + 10.0 * len(CASES)


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Course:
    return Course(write_course(tmp_path_factory.mktemp("bounds-course")))


def _batch() -> list[Submission]:
    """honest, case, honest, case, ...: every case has a neighbour on each side."""
    batch = [Submission(origin="honest-0", key="honest-0", content=notebook(HONEST), seed=1)]
    for index, case in enumerate(CASES, start=1):
        batch.append(Submission(origin=case["name"], key=case["name"], content=notebook(HONEST, case["cell"]),
                                seed=1))
        batch.append(Submission(origin=f"honest-{index}", key=f"honest-{index}", content=notebook(HONEST), seed=1))
    return batch


@pytest.fixture(scope="module", params=[1, 2], ids=["jobs1", "jobs2"])
def graded(request: pytest.FixtureRequest, week: Course) -> tuple[dict[str, SubmissionResult], float]:
    started = time.monotonic()
    results = grade_parallel(week.week("week09"), _batch(), jobs=request.param, limits=LIMITS)
    return {r.key: r for r in results}, time.monotonic() - started


def test_every_honest_neighbour_keeps_full_marks(graded: tuple[dict[str, SubmissionResult], float]) -> None:
    results, _ = graded
    honest = {k: r for k, r in results.items() if k.startswith("honest-")}
    assert set(honest) == {f"honest-{index}" for index in range(len(CASES) + 1)}
    assert {k: (r.status, r.score) for k, r in honest.items()} == {k: (Status.GRADED, 60.0) for k in honest}, \
        {k: r.messages for k, r in honest.items() if r.score != 60.0}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_gets_its_outcome(graded: tuple[dict[str, SubmissionResult], float], case: dict) -> None:
    result = graded[0][case["name"]]
    if case["expect"] == "stopped":
        assert result.status is Status.ERROR and result.score == 0.0, (result.status, result.messages)
        assert any(STOPPED in m for m in result.messages), result.messages
    else:
        lost = set(case["lost"])
        assert result.status is Status.GRADED, (result.status, result.messages)
        assert {t.task: t.score for t in result.tasks} == {n: 0.0 if n in lost else 10.0 for n in range(1, 7)}, \
            [t.output for t in result.tests]
        if case.get("runs_clean"):  # the attack itself ran (a planter that raised would prove nothing)
            assert result.messages == [], result.messages


def test_the_batch_ends_within_its_budget(graded: tuple[dict[str, SubmissionResult], float]) -> None:
    results, seconds = graded
    assert sorted(results) == sorted(s.key for s in _batch())  # one result for each submission
    assert seconds < BUDGET_S


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("case", REAL_WEEK_CASES, ids=[c["name"] for c in REAL_WEEK_CASES])
def test_the_issues_attacks_on_the_real_weeks(course: Course, case: dict, jobs: int) -> None:
    """Whatever a week's hidden tests do with these notebooks, the neighbour keeps its score
    and the attack gains nothing; on main the week-1 case alone never returned."""
    fixture = (ROOT / "tests" / "fixtures" / case["week"] / case["fixture"]).read_bytes()
    nb = nbformat.reads(fixture, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(case["cell"]))
    honest = [Submission(origin=f"honest-{i}", key=f"honest-{i}", content=fixture, seed=3) for i in range(2)]
    attack = Submission(origin="attack", key="attack", content=nbformat.writes(nb).encode(), seed=3)
    started = time.monotonic()
    first, hit, second = grade_parallel(course.week(case["week"]), [honest[0], attack, honest[1]], jobs=jobs,
                                        limits=REAL_WEEK_LIMITS)
    assert time.monotonic() - started < 400
    assert first.status is second.status is Status.GRADED and first.score == second.score
    assert [(t.name, t.score) for t in first.tests] == [(t.name, t.score) for t in second.tests]
    assert hit.score <= first.score
