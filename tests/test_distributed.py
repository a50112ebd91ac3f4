"""``--scheduler``: a batch graded on a real Dask cluster (worker processes) gives the local
results, in order, and each worker process keeps one warm session across tasks and batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution.run import ZygoteSlot
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.results import SubmissionResult
from autograder.submission import Submission

distributed = pytest.importorskip("distributed")

from autograder.grading.distributed import grade_on_cluster, warm_sessions  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "week01"
CHOSEN = ["correct_fresh_notebook", "wrong_no_bias", "untouched_stub", "cheat_allclose", "wrong_unfitted_ppn",
          "correct_raschka_y_minus_yhat"]


def submissions() -> list[Submission]:
    return [Submission(origin=f"{name}.ipynb", key=name, content=(FIXTURES / f"{name}.ipynb").read_bytes())
            for name in CHOSEN] + [Submission(origin="broken.ipynb", key="broken", content=b"{not json")]


def comparable(results: list[SubmissionResult]) -> list[dict]:
    return [{k: v for k, v in to_dict(r).items() if k != "duration_s"} for r in results]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        yield client


def test_a_cluster_grades_like_a_local_run_and_keeps_its_sessions_warm(course: Course, slot: ZygoteSlot, client):
    week = course.week("week01")
    local = comparable(grade(week, submissions(), slot=slot))
    arrived: list[str] = []
    first = grade_on_cluster(week, iter(submissions()), scheduler=client, on_result=lambda r: arrived.append(r.key))
    assert comparable(first) == local
    assert sorted(arrived) == sorted(r["key"] for r in local)
    second = grade_on_cluster(week, submissions(), scheduler=client.scheduler.address)
    assert comparable(second) == local
    sessions = [s for found in client.run(warm_sessions).values() for s in found]
    # one session per worker process that graded, each grading many tasks of both batches
    assert len({s["pid"] for s in sessions}) == len(sessions) >= 1
    assert sum(s["graded"] for s in sessions) == 2 * len(local)
