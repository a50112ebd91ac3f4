"""Benchmark: a batch and the service's queue graded on a Dask cluster (``--scheduler``).

Run by hand, never in CI:  .venv/bin/python benchmarks/cluster.py [--n 40] [--workers 2]
[--threads 1] [--week week01]. Starts a ``distributed.LocalCluster`` (worker processes
started by Dask's nanny, as ``dask worker`` starts them) and grades the same N notebooks
twice on it: once as a batch (``grading.distributed.grade_on_cluster``, what ``autograder
grade --scheduler`` runs), once as N uploads queued at once in the service
(``service.runner.GradingService`` with ``scheduler``, what ``serve --scheduler`` runs).
Each is timed from its first result to its last (the graders' cold start excluded: a few
submissions are graded first until every worker thread has a warm grader), and prints the
median gap between results and the wall time per submission: what the number of tasks kept
in flight changes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import distributed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from submissions import build  # noqa: E402

from autograder.course import Course  # noqa: E402
from autograder.grading.distributed import grade_on_cluster, warm_graders  # noqa: E402
from autograder.results import SubmissionResult  # noqa: E402
from autograder.service.policy import WeekPolicy  # noqa: E402
from autograder.service.runner import GradingService  # noqa: E402
from autograder.service.store import Store  # noqa: E402
from autograder.submission import Submission  # noqa: E402

WORK = HERE / ".work"


def figures(arrivals: list[float]) -> dict[str, float]:
    """Median gap between consecutive results and wall seconds per submission after the first."""
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    return {"median_gap_s": statistics.median(gaps), "per_submission_s": (arrivals[-1] - arrivals[0]) / len(gaps)}


def batch(week_name: str, paths: list[Path], client: distributed.Client) -> dict[str, float]:
    week = Course.locate(HERE.parent).week(week_name)
    submissions = [Submission(origin=str(p), key=p.stem, content=p.read_bytes()) for p in paths]
    threads = sum(client.nthreads().values())
    while sum(p["started"] for found in client.run(warm_graders).values() for p in found) < threads:
        grade_on_cluster(week, submissions[:threads], scheduler=client)  # until every worker thread has a warm grader
    arrivals: list[float] = []

    def on_result(_result: SubmissionResult) -> None:
        arrivals.append(time.monotonic())

    grade_on_cluster(week, submissions, scheduler=client, on_result=on_result)
    return figures(arrivals)


def service(week_name: str, paths: list[Path], client: distributed.Client) -> dict[str, float]:
    course = Course.locate(HERE.parent)
    arrivals: list[float] = []
    with tempfile.TemporaryDirectory() as data, Store(Path(data)) as store:
        for index, path in enumerate(paths):
            store.submit(context="bench|1|c", user=f"user{index}", week=week_name, content=path.read_bytes(),
                         policy=WeekPolicy(), now=datetime.now(UTC))
        with GradingService(course, store, scheduler=client, on_graded=lambda _a: arrivals.append(time.monotonic())):
            while len(arrivals) < len(paths):
                time.sleep(0.05)
    return figures(arrivals)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--week", default="week01")
    args = parser.parse_args()
    paths = build(WORK / f"cluster-{args.week}-{args.n}", args.n, args.week)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        for name, run in (("batch", batch), ("service", service)):
            found = run(args.week, paths, client)
            print(f"{name}: {args.n} x {args.week} on {args.workers} worker(s) x {args.threads} thread(s): "
                  f"median gap {found['median_gap_s'] * 1000:.0f} ms, "
                  f"{found['per_submission_s'] * 1000:.0f} ms per submission", flush=True)


if __name__ == "__main__":
    main()
