"""Scores and costs of the slow-but-correct notebooks idle and beside CPU hogs (issue 37).

``python benchmarks/load_invariance.py [--jobs 1 2] [--kind NAME ...]``

For each kind of ``tests/test_budget_load.py`` (its notebook, week and tight limits) and
each ``--jobs``: a batch of its ten copies graded idle through ``grade_parallel``, then
the same batch beside the test's CPU hogs (two spinning processes per core). It prints the
scores of both batches, the CPU seconds per submission (the pool's whole process tree:
parent, graders, sandbox, workers; read from this process's own and reaped children's
rusage, the hogs still running and so not yet counted), the wall seconds per submission
(the batch's wall time over the copies, and the mean of each result's ``duration_s``), and
the ratio of loaded to idle wall time, and how many results carry a note (a limit hit, a
cell skipped), with the first such note. The scores must not move; the wall time does.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.course import Course  # noqa: E402
from autograder.grading.parallel import grade_parallel  # noqa: E402
from autograder.results import SubmissionResult  # noqa: E402
from tests.helpers import cpu_hogs  # noqa: E402
from tests.test_budget_load import KINDS, SlowKind, feedback  # noqa: E402


def cpu_seconds() -> float:
    """CPU seconds of this process and of the children it has reaped (the pool's graders,
    which have reaped their sandboxes and workers): the hogs are reaped only once killed."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def graded(course: Course, slow: SlowKind, jobs: int) -> tuple[list[SubmissionResult], float, float]:
    """The batch's results, its CPU seconds and its wall seconds (pool start included)."""
    cpu, started = cpu_seconds(), time.monotonic()
    results = grade_parallel(course.week(slow.week), slow.batch(), jobs=jobs, limits=slow.limits)
    return results, cpu_seconds() - cpu, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--kind", choices=sorted(KINDS), nargs="+", default=list(KINDS))
    args = parser.parse_args()
    course = Course.locate(ROOT)
    for name in args.kind:
        slow = KINDS[name]
        for jobs in args.jobs:
            idle, idle_cpu, idle_wall = graded(course, slow, jobs)
            with cpu_hogs():
                busy, busy_cpu, busy_wall = graded(course, slow, jobs)
            n = len(idle)
            same = all(feedback(r) == feedback(idle[0]) for r in idle + busy)
            limits = slow.limits
            print(f"{name} ({slow.week}, {limits.cell_timeout_s:g} s a cell, {limits.call_timeout_s:g} s a call), "
                  f"--jobs {jobs}, {n} copies")
            for label, results, cpu, wall in (("idle", idle, idle_cpu, idle_wall),
                                              ("loaded", busy, busy_cpu, busy_wall)):
                noted = [r for r in results if r.messages]
                print(f"  {label:6}  scores {' '.join(f'{r.score:g}' for r in results)}, {len(noted)} with a note  "
                      f"CPU {cpu / n:.2f} s, wall {wall / n:.2f} s (batch / {n}), "
                      f"duration_s mean {statistics.mean(r.duration_s for r in results):.2f} s per submission")
                if noted:  # a limit hit: what the student reads
                    print(f"          e.g. {noted[0].messages[0]}")
            print(f"  loaded / idle wall: batch {busy_wall / idle_wall:.2f}, duration_s "
                  f"{statistics.mean(r.duration_s for r in busy) / statistics.mean(r.duration_s for r in idle):.2f}; "
                  f"the same feedback in all {2 * n}: {same}", flush=True)


if __name__ == "__main__":
    main()
