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

A task returns ``result_json.to_dict``: plain data. Whoever grades on a cluster, a
batch (``grade_on_cluster``: ``autograder grade --scheduler``, a Moodle sync) or the service
(``serve --scheduler``), sends its tasks through ``ClusterGraders``, a ``pool.FeedRunner``
as a ``GraderPool`` is: its work is taken from the same feeds and settled by the same rule
(the week and the limits travel as Dask pickles them, the submission as ``grading.messages``'
JSON text, as it crosses every pipe). It keeps ``IN_FLIGHT_PER_THREAD`` tasks per worker thread in flight (at
least ``MIN_IN_FLIGHT``), asking the feeds for more as results come back: a batch's
generator is read no faster than that, and the service's queue keeps the rest, so a
replica claims no more than it can send. A task lost with its worker (the worker died,
the connection broke) or with its grader (``GraderLost``) is lost to its feed
(``Feed.lost``: that submission's ``error`` result in a batch, the attempt back in the
service's queue counting a try); an ``AutograderError`` (e.g. the hidden tests do not
collect) is the week's (``Feed.broken``: it stops a batch, as it does locally; the service
pauses the week and takes the attempt back without a try).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Final

from autograder.course import Week
from autograder.exceptions import AutograderError, CourseError, GraderLost, GradingError
from autograder.execution import Limits
from autograder.formats.result_json import from_dict, to_dict
from autograder.grading.loop import OnResult
from autograder.grading.messages import SubmissionData
from autograder.grading.pool import Feed, FeedRunner, GraderPool, Job
from autograder.results import SubmissionResult
from autograder.submission import Submission

if TYPE_CHECKING:
    from distributed import Client

IN_FLIGHT_PER_THREAD: Final = 4  # tasks in flight per worker thread (the cluster's threads read at every turn)
MIN_IN_FLIGHT: Final = 64  # ... and at least this many: what keeps a small cluster busy between results
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


def grade_task(week: Week, limits: Limits, submission: str) -> dict[str, Any]:
    """The Dask task: grade one submission (``SubmissionData`` JSON text, the one way a
    submission crosses between processes) in this worker process's grader pool."""
    if not week.tests_dir.is_dir():
        raise CourseError(f"{week.tests_dir} is not on this worker: mount the course folder at the "
                          "same path on every Dask worker")
    return _graders(limits).grade_one(week, SubmissionData.model_validate_json(submission).submission())


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
    return ClusterGraders(scheduler, limits).grade_once(week, submissions, on_result)


class ClusterGraders(FeedRunner):
    """A Dask cluster as the graders of whoever grades on it: each job a feed hands out is one
    ``grade_task``, at most ``in_flight()`` at once, settled with its feed (the module's rule).
    ``scheduler``: an address (connected here, closed by ``close``) or a ``Client`` (the
    caller's, left open)."""

    def __init__(self, scheduler: str | Client, limits: Limits | None = None) -> None:
        from distributed import Client

        super().__init__()
        self.limits = limits or Limits()
        self.client = Client(scheduler) if isinstance(scheduler, str) else scheduler
        self._own_client = self.client is not scheduler
        self._name = uuid.uuid4().hex[:8]  # this runner's tasks' keys
        self._numbers = itertools.count()
        self._held: dict[str, Job] = {}  # task key -> the job it grades
        self._futures: dict[str, Any] = {}  # task key -> its ``distributed.Future``
        self._finished: list[str] = []  # keys of tasks that finished, from Dask's thread

    def in_flight(self) -> int:
        """How many tasks may be on the cluster at once: ``IN_FLIGHT_PER_THREAD`` per worker
        thread now (workers come and go), at least ``MIN_IN_FLIGHT``."""
        threads: dict[str, int] = self.client.nthreads()
        return max(MIN_IN_FLIGHT, IN_FLIGHT_PER_THREAD * sum(threads.values()))

    def run(self, until: Callable[[], bool], *, poll_s: float | None = None) -> None:
        while not until():
            self._send()
            if until():
                break
            self._wait([], poll_s)
            with self._lock:
                keys, self._finished = self._finished, []
            for key in keys:
                self._settle(key)

    def close(self) -> None:
        """Cancel the tasks still on the cluster (each job interrupted); the client too, if ours."""
        for key, job in list(self._held.items()):
            self._futures.pop(key).cancel()
            del self._held[key]
            job.feed.interrupted(job)
        super().close()
        if self._own_client:
            self.client.close()

    def _quiet(self) -> bool:
        return not self._held

    def _send(self) -> None:
        """Hand the cluster jobs from the feeds, up to ``in_flight()``."""
        room = self.in_flight() - len(self._held)
        for feed in self._feeds_now():
            if room <= 0:
                return
            for week, _count in feed.waiting(room):
                while room > 0 and (job := feed.take(week)) is not None:
                    key = f"autograder-{week.name}-{self._name}-{next(self._numbers)}"
                    future = self.client.submit(grade_task, week, self.limits,
                                                SubmissionData.of(job.submission).model_dump_json(), key=key,
                                                pure=False)
                    self._held[key], self._futures[key] = job, future
                    future.add_done_callback(self._done)
                    room -= 1

    def _done(self, future: Any) -> None:
        """A task finished (called from Dask's thread): settled by ``run``'s thread."""
        with self._lock:
            self._finished.append(str(future.key))
        self.wake()

    def _settle(self, key: str) -> None:
        job, future = self._held.pop(key, None), self._futures.pop(key, None)
        if job is None:
            return  # cancelled by ``close``
        try:
            document = future.result()
        except AutograderError as exc:  # the week cannot be graded there
            job.feed.interrupted(job)
            self._broken(job.week, exc, job.feed)
            return
        except Exception as exc:  # noqa: BLE001 - lost with its grader, its worker or the connection
            job.feed.lost(job, f"Dask task failed: {type(exc).__name__}: {exc}"[:300])
            return
        job.feed.done(job, from_dict(document))
