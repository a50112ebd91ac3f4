"""``--scheduler tcp://HOST:PORT``: grade a batch on a Dask cluster, one task per submission.

Every Dask worker process keeps one ``grading.pool.GraderPool`` (``WorkerGraders``): as
many grader processes as the worker has threads, started by the first task that needs one
and kept warm across tasks and batches (one idle for ``IDLE_S`` is let go, its memory
freed), so hidden tests are collected and a zygote is started once per grader, not once
per task, and a task costs what a submission costs locally. A task hands its submission
to the pool and waits for its result. The pool grades it in the same bounded grader
process as ``--jobs``: the grader's memory limit (``grader_memory_bytes``), and each
step's wall and CPU budgets enforced from the Dask worker process, the grader's parent.
So the pool's rule when a grader dies (``grading.pool``) holds on the cluster too: killed
by a budget, the task returns that submission's ``error`` result naming the check (never
graded again); any other death fails the task with ``GraderLost`` (``grade_on_cluster``
gives that submission an ``error`` result, the service takes the attempt back, counting a
try); a fresh grader carries on. A hostile hidden test never stalls a Dask worker, nor
takes it down by its memory.

Grader processes are started as locally (``grader_process.START_METHOD``, "spawn"), from
a worker process that Dask's nanny started as *daemonic* (``distributed.worker.daemon``,
true by default), and multiprocessing refuses to start a child from a daemonic process.
Asking every operator to set ``distributed.worker.daemon: False`` (every ``dask worker``
command, every ``LocalCluster``, every ``SLURMCluster``) would leave a cluster started
the usual way unable to grade. So the first task clears the flag of its own worker
process (``multiprocessing.current_process().daemon = False``): the flag says only how
the *nanny* treats that process, which the nanny's own copy still says, and here it
only guards the one thing the rule is about, children orphaned when the worker process
is terminated. The graders cannot be orphaned: they are daemonic themselves (terminated
when the worker process exits), and the kernel kills each one the moment the worker
process dies by any means (``grader_process.end_with_parent``). A worker run without a
nanny (``dask worker --no-nanny``) is not daemonic, and nothing changes there.

The workers read the course from ``week.root``, the same path as the client's: on a real
cluster, the course folder must be mounted at that path on every worker (a shared file
system on SLURM, a volume in Kubernetes). The course is not shipped with the tasks on
purpose: the hidden tests are read where they run, and the hash in each result
(``tests_sha256``) shows which tests graded it.

A task returns ``result_json.to_dict``: plain data. A task lost with its worker (the
worker died, the connection broke) or with its grader yields an ``error`` result for that
submission only; an ``AutograderError`` (e.g. the hidden tests do not collect) stops the
batch, as it does locally.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import uuid
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from autograder.course import Week
from autograder.exceptions import AutograderError, CourseError, GraderLost, GradingError
from autograder.execution import Limits
from autograder.formats.result_json import from_dict, to_dict
from autograder.grading.judge import lost_result
from autograder.grading.loop import OnResult
from autograder.grading.pool import Feed, GraderPool, Job
from autograder.results import SubmissionResult
from autograder.submission import Submission

if TYPE_CHECKING:
    from distributed import Client

MIN_IN_FLIGHT = 64  # tasks handed to the scheduler ahead of results (bounds client memory)
IDLE_S = 600.0  # a Dask worker's grader with no task for this long is let go (a week no longer graded)


class WorkerGraders(Feed):
    """This Dask worker process's grader pool, run by a background thread, and the tasks
    waiting for it: each task is one ``Job`` whose ``tag`` is the future the task waits on."""

    def __init__(self, limits: Limits, jobs: int) -> None:
        self.pool = GraderPool(jobs, limits, idle_s=IDLE_S, name="autograder-dask-grader")
        self.graded = 0
        self._lock = threading.Lock()
        self._queued: deque[Job] = deque()  # waiting for a grader, oldest first
        self._unsettled: set[Job] = set()  # queued or held by a grader
        self._failed: BaseException | None = None
        self.pool.add(self)
        self._thread = threading.Thread(target=self._run, name="autograder-dask-graders", daemon=True)
        self._thread.start()

    def grade_one(self, week: Week, submission: Submission) -> dict[str, Any]:
        """Grade ``submission`` in this pool; its ``to_dict`` document."""
        job = Job(self, week, submission, Future())
        with self._lock:
            if self._failed is not None:
                raise self._failed
            self._queued.append(job)
            self._unsettled.add(job)
        self.pool.wake()
        result: dict[str, Any] = job.tag.result()
        return result

    # -- the feed, called by the pool's thread ----------------------------------------------------
    def waiting(self, room: int) -> list[tuple[Week, int]]:
        counts: dict[Week, int] = {}
        with self._lock:
            for job in self._queued:
                counts[job.week] = counts.get(job.week, 0) + 1
        return list(counts.items())

    def take(self, week: Week) -> Job | None:
        with self._lock:
            for job in self._queued:
                if job.week == week:
                    self._queued.remove(job)
                    return job
        return None

    def done(self, job: Job, result: SubmissionResult) -> None:
        self.graded += 1
        self._settle(job, to_dict(result))

    def lost(self, job: Job, why: str) -> None:
        self._settle(job, GraderLost(why))

    def interrupted(self, job: Job) -> None:
        self._settle(job, GraderLost("the Dask worker's grader pool stopped"))

    def broken(self, week: Week, error: AutograderError) -> None:
        """Every task of ``week`` here fails with ``error``, which stops its batch."""
        with self._lock:
            jobs = [job for job in self._unsettled if job.week == week]
            self._queued = deque(job for job in self._queued if job.week != week)
        for job in jobs:
            self._settle(job, error)

    def _settle(self, job: Job, outcome: dict[str, Any] | BaseException) -> None:
        with self._lock:
            if job not in self._unsettled:
                return  # already failed with its week
            self._unsettled.discard(job)
        if isinstance(outcome, BaseException):
            job.tag.set_exception(outcome)
        else:
            job.tag.set_result(outcome)

    def _run(self) -> None:
        try:
            self.pool.run(until=lambda: False, poll_s=IDLE_S / 10)  # the wake-ups that let idle graders go
            failure: BaseException = GradingError("the Dask worker's grader pool ended")
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting task, which re-raises it
            failure = exc
        _forget(self)
        with self._lock:
            self._failed = failure
            jobs, self._queued = list(self._unsettled), deque()
        for job in jobs:
            self._settle(job, failure)
        self.pool.close()


_GRADERS: dict[Limits, WorkerGraders] = {}
_GRADERS_LOCK = threading.Lock()


def _graders(limits: Limits) -> WorkerGraders:
    with _GRADERS_LOCK:
        if limits not in _GRADERS:
            _allow_graders()
            _GRADERS[limits] = WorkerGraders(limits, _threads())
        return _GRADERS[limits]


def _forget(graders: WorkerGraders) -> None:
    """A pool that ended is dropped, so a later task starts a fresh one."""
    with _GRADERS_LOCK:
        for key, value in list(_GRADERS.items()):
            if value is graders:
                del _GRADERS[key]


def _allow_graders() -> None:
    """Let this (Dask worker) process start grader processes although the nanny started it
    daemonic: the module docstring says why that is safe."""
    me = multiprocessing.current_process()
    if me.daemon:
        me.daemon = False


def _threads() -> int:
    """How many tasks this Dask worker runs at once: its pool runs that many graders."""
    from distributed import get_worker

    try:
        return max(1, int(get_worker().state.nthreads))
    except ValueError:  # called outside a Dask worker (grade_task from Python)
        return 1


def warm_graders() -> list[dict[str, Any]]:
    """This process's grader pools (``client.run(warm_graders)`` asks every worker): how many
    grader processes each started and how many submissions it graded."""
    with _GRADERS_LOCK:
        return [{"pid": os.getpid(), "jobs": graders.pool.jobs, "started": graders.pool.started,
                 "graded": graders.graded} for graders in _GRADERS.values()]


def grade_task(week: Week, limits: Limits, submission: Submission) -> dict[str, Any]:
    """The Dask task: grade one submission in this worker process's grader pool."""
    if not week.tests_dir.is_dir():
        raise CourseError(f"{week.tests_dir} is not on this worker: mount the course folder at the "
                          "same path on every Dask worker")
    return _graders(limits).grade_one(week, submission)


def grade_on_cluster(
    week: Week,
    submissions: Iterable[Submission],
    *,
    scheduler: str | Client,
    limits: Limits | None = None,
    on_result: OnResult | None = None,
) -> list[SubmissionResult]:
    """Grade ``submissions`` on a Dask cluster (a scheduler address or a ``Client``); results in
    submission order, the same as a local ``grade()`` (but for ``duration_s``)."""
    from distributed import Client, as_completed

    limits = limits or Limits()
    client = Client(scheduler) if isinstance(scheduler, str) else scheduler
    batch = uuid.uuid4().hex[:8]
    pending = enumerate(submissions)
    held: dict[str, tuple[int, Submission]] = {}
    results: dict[int, SubmissionResult] = {}
    running = as_completed()

    def submit_next() -> None:
        for index, submission in pending:
            key = f"autograder-{week.name}-{batch}-{index}"
            held[key] = (index, submission)
            running.add(client.submit(grade_task, week, limits, submission, key=key, pure=False))
            return

    try:
        for _ in range(max(MIN_IN_FLIGHT, 4 * sum(client.nthreads().values()))):
            submit_next()
        for future in running:
            index, submission = held.pop(future.key)
            try:
                result = from_dict(future.result())
            except AutograderError:
                raise
            except Exception as exc:  # noqa: BLE001 - lost with its grader, its worker or the connection
                result = lost_result(week, submission, f"Dask task failed: {type(exc).__name__}: {exc}"[:300])
            results[index] = result
            if on_result is not None:
                on_result(result)
            submit_next()
        return [results[i] for i in range(len(results))]
    finally:
        if client is not scheduler:
            client.close()
