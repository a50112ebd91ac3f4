"""``--scheduler tcp://HOST:PORT``: grade a batch on a Dask cluster, one task per submission.

Every Dask worker process keeps one warm grading session per week: a long-lived
``grade()`` in a background thread, fed by a queue, started by the first task that needs
it. So hidden tests are collected and a zygote is started once per worker process, not
once per task, and a task costs what a submission costs locally.

The workers read the course from ``week.root``, the same path as the client's: on a real
cluster, the course folder must be mounted at that path on every worker (a shared file
system on SLURM, a volume in Kubernetes). The course is not shipped with the tasks on
purpose: the hidden tests are read where they run, and the hash in each result
(``tests_sha256``) shows which tests graded it.

A task returns ``result_json.to_dict``: plain data. A task lost with its worker (the
worker died, the connection broke) yields an ``error`` result for that submission only;
an ``AutograderError`` (e.g. the hidden tests do not collect) stops the batch, as it does
locally.
"""

from __future__ import annotations

import os
import queue
import threading
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from autograder.course import Week
from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.execution import Limits, Sandboxed
from autograder.formats.result_json import from_dict, to_dict
from autograder.grading.judge import lost_result
from autograder.grading.loop import OnResult
from autograder.results import SubmissionResult
from autograder.submission import Submission

if TYPE_CHECKING:
    from distributed import Client

MIN_IN_FLIGHT = 64  # tasks handed to the scheduler ahead of results (bounds client memory)


class WarmSession:
    """One long-lived ``grade()`` in a background thread, grading what ``grade_one`` hands it."""

    def __init__(self, week: Week, limits: Limits) -> None:
        if not week.tests_dir.is_dir():
            raise CourseError(f"{week.tests_dir} is not on this worker: mount the course folder at the "
                              "same path on every Dask worker")
        self.week = week
        self.limits = limits
        self._queue: queue.SimpleQueue[tuple[Submission, Future[dict[str, Any]]]] = queue.SimpleQueue()
        self._waiting: deque[Future[dict[str, Any]]] = deque()
        self._lock = threading.Lock()
        self._closed: BaseException | None = None
        self.graded = 0
        self._thread = threading.Thread(target=self._run, name=f"autograder-{week.name}", daemon=True)
        self._thread.start()

    def grade_one(self, submission: Submission) -> dict[str, Any]:
        """Grade ``submission`` in this session; its ``to_dict`` document."""
        future: Future[dict[str, Any]] = Future()
        with self._lock:
            if self._closed is not None:
                raise self._closed
            self._queue.put((submission, future))
        return future.result()

    def _submissions(self) -> Iterator[Submission]:
        while True:
            submission, future = self._queue.get()
            self._waiting.append(future)
            yield submission

    def _report(self, result: SubmissionResult) -> None:
        self.graded += 1
        self._waiting.popleft().set_result(to_dict(result))

    def _run(self) -> None:
        from autograder.grading.grader import grade

        try:
            grade(self.week, self._submissions(), isolation=Sandboxed(self.limits), on_result=self._report)
            failure: BaseException = GradingError("the grading session ended")
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting task, which re-raises it
            failure = exc
        with self._lock:
            self._closed = failure
            while not self._queue.empty():
                self._waiting.append(self._queue.get()[1])
        for future in self._waiting:
            future.set_exception(failure)
        self._waiting.clear()
        _forget(self)


_SESSIONS: dict[tuple[str, str, Limits], WarmSession] = {}
_SESSIONS_LOCK = threading.Lock()


def _session(week: Week, limits: Limits) -> WarmSession:
    key = (str(week.root), week.name, limits)
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            _SESSIONS[key] = WarmSession(week, limits)
        return _SESSIONS[key]


def _forget(session: WarmSession) -> None:
    """A session that ended is dropped, so a later task starts a fresh one."""
    with _SESSIONS_LOCK:
        for key, value in list(_SESSIONS.items()):
            if value is session:
                del _SESSIONS[key]


def warm_sessions() -> list[dict[str, Any]]:
    """This process's warm sessions (``client.run(warm_sessions)`` asks every worker): which
    week, since which thread, how many submissions each graded."""
    with _SESSIONS_LOCK:
        return [{"week": key[1], "course": key[0], "pid": os.getpid(), "thread": session._thread.ident,
                 "graded": session.graded} for key, session in _SESSIONS.items()]


def grade_task(week: Week, limits: Limits, submission: Submission) -> dict[str, Any]:
    """The Dask task: grade one submission in this worker process's warm session."""
    return _session(week, limits).grade_one(submission)


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
            except Exception as exc:  # noqa: BLE001 - the task was lost with its worker or connection
                result = lost_result(week, submission, f"Dask task failed: {type(exc).__name__}: {exc}"[:300])
            results[index] = result
            if on_result is not None:
                on_result(result)
            submit_next()
        return [results[i] for i in range(len(results))]
    finally:
        if client is not scheduler:
            client.close()
