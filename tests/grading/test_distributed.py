"""``--scheduler``: a batch graded on a real Dask cluster (worker processes) gives the local
results, in order, and each worker process keeps its grader process warm across tasks and batches."""

from __future__ import annotations

import pytest

from autograder.course import Course

distributed = pytest.importorskip("distributed")

from autograder.grading.distributed import grade_on_cluster, warm_graders  # noqa: E402

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        yield client


def test_a_cluster_grades_like_a_local_run_and_keeps_its_graders_warm(course: Course, client, week01_mix,
                                                                        week01_mix_local, as_comparable):
    week = course.week("week01")
    local = week01_mix_local
    arrived: list[str] = []
    first = grade_on_cluster(week, iter(week01_mix), scheduler=client, on_result=lambda r: arrived.append(r.key))
    assert as_comparable(first) == local
    assert sorted(arrived) == sorted(r["key"] for r in local)
    second = grade_on_cluster(week, week01_mix, scheduler=client.scheduler.address)
    assert as_comparable(second) == local
    pools = [p for found in client.run(warm_graders).values() for p in found]
    # one pool per worker process that graded, whose one grader process graded its tasks of both batches
    assert len({p["pid"] for p in pools}) == len(pools) >= 1
    assert [(p["jobs"], p["started"]) for p in pools] == [(1, 1)] * len(pools)
    assert sum(p["graded"] for p in pools) == 2 * len(local)
