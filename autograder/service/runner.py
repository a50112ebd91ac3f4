"""Grading the service's queue: warm grader processes on this machine, or a Dask cluster.

Uploads arrive one at a time, so the batch functions (``grade_parallel``,
``grade_on_cluster``) do not fit: they end with their batch. The service reuses what they
are built on instead:

- ``jobs`` (local): the service's ``grading.pool.GraderPool`` of ``jobs`` warm grader
  processes, its queue one of the pool's feeds (``_Queue``), the longest-waiting week
  first; a grader idle for ``idle_s`` is let go. The Moodle syncs of ``serve`` grade in
  this same pool (``pool``), after the queue's uploads, so ``serve --jobs N`` never runs
  more than N graders. The pool's rule when a grader dies applies: an attempt whose
  check ran past its budget gets an ``error`` result; one whose grader died otherwise goes
  back to the queue, counting a try (the store fails it after ``MAX_TRIES``); one held
  when the service stops goes back without counting a try.
- ``scheduler`` (Dask): each attempt is one ``grading.distributed.grade_task``, graded in
  the worker process's pool of warm grader processes, under the same rule: a check past
  its budget gives an ``error`` result; a grader lost otherwise (``GraderLost``) or a lost
  task puts the attempt back in the queue, counting a try. At most two tasks per worker
  thread are in flight, the rest waits in the store's queue.

Either way a result is recorded through ``Store.record_result`` (result JSON, feedback
page, counted score, AGS post) and ``on_graded`` is told. An attempt claimed by a service
that is killed is queued again when the next one starts (``Store.requeue_interrupted``).
One whose claim another replica took over while this one stalled (``claims.py``) is that
replica's: this one's result, release or failure is dropped, with a warning saying so.
"""

from __future__ import annotations

import fcntl
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any, Self, TextIO

from autograder.course import Course, Week
from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.execution import Limits
from autograder.formats.result_json import from_dict
from autograder.grading.pool import Feed, GraderPool, Job
from autograder.manual import answer_hashes
from autograder.results import Participant, SubmissionResult
from autograder.service.store import Attempt, Store
from autograder.submission import Submission

if TYPE_CHECKING:
    from types import TracebackType

    from distributed import Client

log = logging.getLogger(__name__)

IDLE_S = 600.0  # a grader with no work for this long is let go (its memory freed)
POLL_S = 1.0  # how often the queue is looked at without a wake-up (uploads from another process)
LOCK_FILE = "grading.lock"  # on SQLite, one grading service per data folder
BROKEN_WEEK_PAUSE_S = 60.0  # a week whose hidden tests do not load is tried again after this


class GradingService:
    """Grades queued attempts until closed (a context manager); ``wake`` after a submit."""

    def __init__(self, course: Course, store: Store, *, jobs: int = 1, scheduler: str | Client | None = None,
                 on_graded: Callable[[Attempt], None] | None = None, limits: Limits | None = None,
                 idle_s: float = IDLE_S) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        self.course = course
        self.store = store
        self.jobs = jobs
        self.scheduler = scheduler
        self.on_graded = on_graded
        self.limits = limits or Limits()
        self.idle_s = idle_s
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._broken: dict[str, float] = {}  # week -> monotonic time its grading may be tried again
        self._submissions: dict[int, Submission] = {}
        self._weeks: dict[str, Week] = {}
        self._lock_file: TextIO | None = None
        # the warm graders (none with a cluster): what the Moodle syncs of ``serve`` grade in too
        self.pool = None if scheduler is not None else GraderPool(jobs, self.limits, idle_s=idle_s,
                                                                   name="autograder-service")

    @property
    def graders_started(self) -> int:
        """Grader processes started so far: warm graders keep this low."""
        return self.pool.started if self.pool is not None else 0

    def __enter__(self) -> Self:
        if self.store.database.dialect == "sqlite":
            self._lock_data_folder()
        requeued = self.store.requeue_interrupted()
        if requeued:
            log.warning("%d attempt(s) were being graded when the service last stopped: queued again", requeued)
        marked = self.store.reconcile_marks()
        if marked:
            log.warning("%d attempt(s) had hand marks not applied yet (a stop while marking): applied", marked)
        target = self._run_local if self.scheduler is None else self._run_cluster
        self._thread = threading.Thread(target=self._guard(target), name="autograder-grading", daemon=True)
        self._thread.start()
        return self

    def _lock_data_folder(self) -> None:
        """On SQLite, one grading service per data folder: replicas share a PostgreSQL
        database (its claims keep their work apart), not a SQLite file, whose locks hold
        on one machine only; a second service on the same file is refused, saying so."""
        self._lock_file = (self.store.root / LOCK_FILE).open("a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            for handle in (self._lock_file, self._wake_read, self._wake_write):
                handle.close()
            if self.pool is not None:
                self.pool.close()
            raise GradingError(f"another grading service is running on {self.store.root}: run one per data "
                               "folder (web workers may be many; they only submit and wake it), or give every "
                               "replica one PostgreSQL database with --database") from None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self.wake()
        if self._thread is not None:
            self._thread.join()
        self._wake_read.close()
        self._wake_write.close()
        if self._lock_file is not None:
            self._lock_file.close()  # releases the lock

    def warm(self, week: str) -> None:
        """Start a grader for ``week`` now, if a slot is free, so the upload that follows
        skips the cold start (about 5 s): the web app may call it when a student opens a
        week's upload page. Unused, it is let go after ``idle_s`` like any idle grader."""
        if self.pool is None:
            return
        try:
            self.pool.warm(self._week(week))
        except CourseError as exc:
            log.warning("cannot warm a grader for %s: %s", week, exc)

    def wake(self) -> None:
        """Look at the queue now (the web app calls this after ``Store.submit``)."""
        if self.pool is not None:
            self.pool.wake()
            return
        try:
            self._wake_write.send(b"!")
        except (BlockingIOError, OSError):  # already woken, or closing
            pass

    def _guard(self, target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except Exception:
                log.exception("the grading service stopped on an unexpected error; restart it")
                raise
        return run

    def _drain_wake(self) -> None:
        try:
            while self._wake_read.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    # --- what every backend shares ------------------------------------------------------------

    def _week(self, name: str) -> Week:
        """The week, read once per service (its tasks and title are parsed from the notebook)."""
        if name not in self._weeks:
            self._weeks[name] = self.course.week(name)
        return self._weeks[name]

    def _submission(self, attempt: Attempt) -> Submission:
        name = self.store.user_name(attempt.context, attempt.user)
        submission = Submission(
            origin=f"{attempt.week} attempt {attempt.number}", key=attempt.key, content=self.store.content(attempt),
            participant=Participant(participant_id=attempt.user, full_name=name), seed=self.store.seed_for(attempt))
        self._submissions[attempt.id] = submission
        return submission

    def _record(self, attempt: Attempt, result: SubmissionResult) -> None:
        """Store a result (with the answers the hand marks tie to) and tell ``on_graded``."""
        submission = self._submissions.pop(attempt.id, None)
        try:
            week = self._week(attempt.week)
            if submission is not None and any(t.manual for t in week.tasks):
                hashes = answer_hashes(submission, week.tasks, week.handed_out())
                for task in result.tasks:
                    task.answer_sha256 = hashes.get(task.task) if task.manual else None
            updated = self.store.record_result(attempt.id, result, week_title=week.label())
        except Exception as exc:
            log.exception("could not record the result of attempt %s", attempt.id)
            if not self.store.fail(attempt.id, f"the result could not be stored ({type(exc).__name__}); it was "
                                               "not graded and does not count as an attempt. Tell your instructor."):
                self._taken_over(attempt, "failure")
            return
        if updated is None:
            self._taken_over(attempt, "result")
            return
        if self.on_graded is not None:
            try:
                self.on_graded(updated)
            except Exception:
                log.exception("on_graded failed for attempt %s", attempt.id)

    def _give_back(self, attempt: Attempt, *, count_try: bool = True) -> None:
        self._submissions.pop(attempt.id, None)
        if not self.store.release(attempt.id, count_try=count_try):
            self._taken_over(attempt, "release to the queue")

    def _taken_over(self, attempt: Attempt, dropped: str) -> None:
        """Say that the attempt's claim was lost: ``dropped`` (this process's outcome) is not written."""
        log.warning("attempt %s: another replica took it over while this one held it (this process did not renew "
                    "its claim for %g s); that replica's outcome stands and this one's %s is dropped",
                    attempt.id, self.store.queue.claim_ttl_s, dropped)

    def _week_broken(self, week: str, error: BaseException) -> None:
        log.error("grading %s stopped: %s (queued attempts wait; tried again in %g s)", week, error,
                  BROKEN_WEEK_PAUSE_S)
        self._broken[week] = time.monotonic() + BROKEN_WEEK_PAUSE_S

    def _ready_weeks(self) -> dict[str, int]:
        """Weeks with queued work that are not paused, the longest-waiting first, each with how
        many attempts wait."""
        now = time.monotonic()
        queued = self.store.queued_weeks()
        oldest = self.store.oldest_queued_week()
        return {w: queued[w] for w in sorted((w for w in queued if self._broken.get(w, 0) <= now),
                                             key=lambda w: w != oldest)}

    # --- local warm graders -------------------------------------------------------------------

    def _run_local(self) -> None:
        assert self.pool is not None
        self.pool.add(_Queue(self))
        try:
            self.pool.run(until=self._stop.is_set, poll_s=POLL_S)
        finally:
            self.pool.close()  # what the graders held goes back to the queue, no try counted

    # --- a Dask cluster ---------------------------------------------------------------------

    def _run_cluster(self) -> None:
        from distributed import Client

        from autograder.grading.distributed import grade_task

        assert self.scheduler is not None
        client: Any = Client(self.scheduler) if isinstance(self.scheduler, str) else self.scheduler
        in_flight: dict[str, tuple[Attempt, Any]] = {}  # task key -> (attempt, distributed.Future)
        done: list[str] = []
        done_lock = threading.Lock()

        def finished(future: Any) -> None:
            with done_lock:
                done.append(str(future.key))
            self.wake()

        try:
            while not self._stop.is_set():
                capacity = max(2, 2 * sum(client.nthreads().values()))
                ready = list(self._ready_weeks())
                while len(in_flight) < capacity and ready:
                    attempt = self.store.claim(ready)
                    if attempt is None:
                        break
                    key = f"autograder-service-{attempt.id}-{uuid.uuid4().hex[:8]}"
                    future = client.submit(grade_task, self._week(attempt.week), self.limits,
                                           self._submission(attempt), key=key, pure=False)
                    in_flight[key] = (attempt, future)
                    future.add_done_callback(finished)
                wait([self._wake_read], timeout=POLL_S)
                self._drain_wake()
                with done_lock:
                    keys, done[:] = list(done), []
                for key in keys:
                    attempt, future = in_flight.pop(key)
                    try:
                        document = future.result()
                    except AutograderError as exc:  # the week itself cannot be graded there
                        self._week_broken(attempt.week, exc)
                        self._give_back(attempt, count_try=False)
                        continue
                    except Exception as exc:  # noqa: BLE001 - lost with its worker or the connection
                        log.warning("attempt %s lost on the cluster (%s): queued again", attempt.id, exc)
                        self._give_back(attempt)
                        continue
                    self._record(attempt, from_dict(document))
        finally:
            for attempt, future in in_flight.values():
                future.cancel()
                self._give_back(attempt, count_try=False)
            if client is not self.scheduler:
                client.close()


class _Queue(Feed):
    """The store's queue as a feed of the service's pool: attempts claimed as graders ask."""

    def __init__(self, service: GradingService) -> None:
        self.service = service

    def waiting(self, room: int) -> list[tuple[Week, int]]:
        weeks = []
        for name, count in self.service._ready_weeks().items():
            try:
                weeks.append((self.service._week(name), count))
            except CourseError as exc:
                self.service._week_broken(name, exc)
        return weeks

    def take(self, week: Week) -> Job | None:
        if self.service._broken.get(week.name, 0) > time.monotonic():
            return None
        attempt = self.service.store.claim([week.name])
        return None if attempt is None else Job(self, week, self.service._submission(attempt), attempt)

    def done(self, job: Job, result: SubmissionResult) -> None:
        self.service._record(job.tag, result)

    def lost(self, job: Job, why: str) -> None:
        log.warning("attempt %s was lost with its grader (%s): queued again", job.tag.id, why)
        self.service._give_back(job.tag)

    def interrupted(self, job: Job) -> None:
        self.service._give_back(job.tag, count_try=False)

    def broken(self, week: Week, error: AutograderError) -> None:
        self.service._week_broken(week.name, error)
