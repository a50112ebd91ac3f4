"""Where a batch is graded: the one choice every batch makes (``autograder grade``, the
Moodle sync, the audit). Every batch is graded by a ``pool.FeedRunner`` (its submissions one
feed of it, settled by the pool's rule); only whose runner it is differs:

- lent (``graders``): a Moodle sync inside ``autograder serve`` grades in the service's
  own pool, relayed to it (``grading.relay``), so ``serve --jobs N`` never runs more than
  N graders; the batch leaves it running;
- the batch's own, closed when the batch ends: with ``--scheduler`` a
  ``distributed.ClusterGraders`` (tasks on that Dask cluster, each graded in a pool of
  grader processes in its Dask worker process), otherwise a ``GraderPool`` of ``jobs``
  grader processes, 1 included: a grader process of its own is what bounds the grader's
  work (its memory limit, each test's wall and CPU budgets, enforced from this process),
  and it costs one process start per batch, not per submission. No batch is graded in the
  calling process.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from autograder.course import Week
from autograder.execution import Limits
from autograder.grading.loop import OnResult
from autograder.grading.pool import GraderPool, Graders
from autograder.results import SubmissionResult
from autograder.submission import Submission


def grade_parallel(
    week: Week,
    submissions: Iterable[Submission],
    *,
    jobs: int,
    limits: Limits | None = None,
    on_result: OnResult | None = None,
) -> list[SubmissionResult]:
    """Grade ``submissions`` in a pool of ``jobs`` grader processes of their own; results in
    submission order, the same as ``grade()`` gives (but for ``duration_s``). ``on_result``
    runs here, in arrival order."""
    return GraderPool(jobs, limits).grade_once(week, submissions, on_result)


def grade_batch(
    week: Week,
    submissions: Iterable[Submission],
    *,
    jobs: int = 0,
    scheduler: str | None = None,
    graders: Graders | None = None,
    limits: Limits | None = None,
    on_result: OnResult | None = None,
) -> list[SubmissionResult]:
    """Grade ``submissions`` sandboxed where the module says; ``jobs`` 0 is one per core."""
    if graders is not None:
        return graders.grade(week, submissions, on_result)
    if scheduler is not None:
        from autograder.grading.distributed import grade_on_cluster  # Dask is imported only for a cluster

        return grade_on_cluster(week, submissions, scheduler=scheduler, limits=limits, on_result=on_result)
    return grade_parallel(week, submissions, jobs=jobs or os.cpu_count() or 1, limits=limits, on_result=on_result)

