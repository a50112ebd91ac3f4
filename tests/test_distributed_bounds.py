"""The grader's own bounds on a real Dask cluster (``--scheduler``), as with ``--jobs``.

Cases of ``tests/hostile/bounds_cases.py`` between honest week-9 neighbours, graded through
``grade_on_cluster`` on a ``distributed.LocalCluster`` whose worker processes Dask's nanny
started (daemonic, as by default): a check past its CPU or wall budget is that
submission's ``error`` naming the check, the grader's memory limit turns a 3 GiB table into
a failed check, every neighbour keeps 60/60, the batch returns and the Dask worker process
lives on. On ``main`` a task ran ``grade()`` in a thread of the Dask worker itself, and
the batch never returned.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.course import Course, Week
from autograder.grading.distributed import grade_on_cluster, grade_task, warm_graders
from autograder.grading.messages import SubmissionData
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission
from tests.hostile.bounds_cases import CASES
from tests.hostile.bounds_week import HONEST, notebook, write_course
from tests.test_hostile_bounds import LIMITS, STOPPED

pytestmark = pytest.mark.sandbox

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

BY_NAME = {case["name"]: case for case in CASES}
# (case, the check its grader-side work runs in: the hidden test's docstring)
STOPPED_CASES = [("refit_max_iter_for_hours", "ppn's settings, fitted by the grader, separate the blobs"),
                 ("pause_forever", "the grader waits pause seconds")]
MEMORY_CASE = "table_past_the_graders_memory"
# as in test_hostile_bounds: a stopped case costs at most 40 s (its budgets, a fresh grader),
# any other submission 10 s
STOPPED_S, OTHER_S = 40.0, 10.0


def _cluster():
    return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                    silence_logs=40)


def _submission(key: str, *cells: str) -> Submission:
    return Submission(origin=key, key=key, content=notebook(HONEST, *cells), seed=1)


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Week:
    return Course(write_course(tmp_path_factory.mktemp("bounds-course"))).week("week09")


@pytest.fixture(scope="module")
def graded(week: Week) -> Iterator[tuple[dict[str, SubmissionResult], dict[str, int], dict[str, int], list[dict]]]:
    """honest, case, honest, case, ..., graded on a one-worker cluster within the budget."""
    batch = [_submission("honest-0")]
    for index, name in enumerate([name for name, _ in STOPPED_CASES] + [MEMORY_CASE], start=1):
        batch += [_submission(name, BY_NAME[name]["cell"]), _submission(f"honest-{index}")]
    budget_s = STOPPED_S * len(STOPPED_CASES) + OTHER_S * (len(batch) - len(STOPPED_CASES))
    with _cluster() as cluster, distributed.Client(cluster) as client:
        before = client.run(os.getpid)
        returned: list[list[SubmissionResult]] = []
        thread = threading.Thread(target=lambda: returned.append(grade_on_cluster(week, batch, scheduler=client,
                                                                                  limits=LIMITS)), daemon=True)
        thread.start()
        thread.join(budget_s)  # on main it never returned: fail, not hang
        assert returned, f"the batch had not returned after {budget_s:g} s"
        yield {r.key: r for r in returned[0]}, before, client.run(os.getpid), \
            [g for found in client.run(warm_graders).values() for g in found]


def test_a_check_past_its_budget_on_a_cluster_is_that_submissions_error_naming_the_check(graded) -> None:
    results = graded[0]
    for name, check in STOPPED_CASES:
        result = results[name]
        assert (result.status, result.score) == (Status.ERROR, 0.0), (name, result.status, result.messages)
        assert any(STOPPED in m and f'"{check}"' in m for m in result.messages), (name, result.messages)


def test_the_graders_memory_limit_holds_on_a_cluster(graded) -> None:
    result = graded[0][MEMORY_CASE]
    assert result.status is Status.GRADED, (result.status, result.messages)
    assert {t.task: t.score for t in result.tasks} == {n: 0.0 if n == 4 else 10.0 for n in range(1, 7)}, \
        [t.output for t in result.tests]


def test_honest_neighbours_keep_full_marks_and_the_dask_worker_lives_on(graded) -> None:
    results, before, after, graders = graded
    honest = {k: (r.status, r.score) for k, r in results.items() if k.startswith("honest-")}
    assert honest == {f"honest-{i}": (Status.GRADED, 60.0) for i in range(len(STOPPED_CASES) + 2)}, \
        {k: results[k].messages for k, v in honest.items() if v != (Status.GRADED, 60.0)}
    assert after == before  # the same Dask worker process graded the whole batch
    # one pool in that process; a fresh grader after each stopped one, and only then
    assert [(g["pid"], g["started"], g["graded"]) for g in graders] == \
        [(next(iter(before.values())), 1 + len(STOPPED_CASES), len(results))]


def _sleeping_grader(worker: int, deadline_s: float, asleep_s: float = 3.0):
    """The grader process Dask worker ``worker`` started, once it has slept for ``asleep_s``
    (in the hidden test's ``sleep(pause)``: it reads nothing from its parent then)."""
    end, since = time.monotonic() + deadline_s, None
    while time.monotonic() < end:
        graders = [p for p in psutil.Process(worker).children() if "spawn_main" in " ".join(p.cmdline())]
        asleep = [p for p in graders if "nanosleep" in Path(f"/proc/{p.pid}/wchan").read_text()]
        since = (since or time.monotonic()) if asleep else None
        if asleep and time.monotonic() - since >= asleep_s:
            return asleep[0]
        time.sleep(0.2)
    raise AssertionError(f"no grader process of Dask worker {worker} slept in a hidden test within {deadline_s:g} s")


def test_a_dask_worker_killed_while_its_grader_works_takes_the_grader_with_it(week: Week) -> None:
    patient = dataclasses.replace(LIMITS, grader_test_wall_s=600)  # nothing of ours stops the pause
    with _cluster() as cluster, distributed.Client(cluster) as client:
        (worker,) = client.run(os.getpid).values()
        pause = SubmissionData.of(_submission("pause", BY_NAME["pause_forever"]["cell"]))
        task = client.submit(grade_task, week, patient, pause.model_dump_json(), pure=False)
        grader = _sleeping_grader(worker, 120)
        task.cancel()
        os.kill(worker, signal.SIGKILL)
        _, alive = psutil.wait_procs([grader], timeout=10)
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not alive, f"grader {grader.pid} outlived its Dask worker {worker}"
