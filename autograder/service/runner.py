"""Grading the service's queue: warm grader processes on this machine, or a Dask cluster.

Uploads arrive one at a time, so the batch functions (``grade_parallel``,
``grade_on_cluster``) do not fit: they end with their batch. The service reuses what they
are built on instead:

- ``jobs`` (local): grader processes running ``grading.parallel.serve`` — each one long-lived
  ``grade()`` of one week, hidden tests collected once, a warm sandbox zygote — that ask
  for their next submission over a pipe. The dispatcher answers a grader when an attempt
  of its week is queued; a grader idle for ``idle_s`` is let go, and when every grader is
  busy with other weeks an idle one is let go for the week that waits longest. A grader
  that dies costs only the attempt it held, which goes back to the queue (the store fails
  it after ``MAX_TRIES``).
- ``scheduler`` (Dask): each attempt is one ``grading.distributed.grade_task``, graded in
  the worker process's warm session of its week; at most two tasks per worker thread are
  in flight, the rest waits in the store's queue.

Either way a result is recorded through ``Store.record_result`` (result JSON, feedback
page, counted score, AGS post) and ``on_graded`` is told. An attempt claimed by a service
that is killed is queued again when the next one starts (``Store.requeue_interrupted``).
"""

from __future__ import annotations

import fcntl
import json
import logging
import multiprocessing
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any, Self, TextIO

from autograder.course import Course, Week
from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.execution import Limits
from autograder.formats.result_json import from_dict
from autograder.grading.judge import overrun_result
from autograder.grading.parallel import START_METHOD, grader_memory_bytes, serve
from autograder.grading.watch import Step
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
LOCK_FILE = "grading.lock"  # one grading service per data folder: it requeues what it finds mid-grading
BROKEN_WEEK_PAUSE_S = 60.0  # a week whose hidden tests do not load is tried again after this


@dataclass
class _Grader:
    week: Week
    process: BaseProcess
    conn: Connection
    held: Attempt | None = None
    waiting: bool = False  # asked for work, not answered yet
    retiring: bool = False  # told there is no more work
    idle_since: float = field(default_factory=time.monotonic)
    step: Step | None = None  # what it is doing for ``held``, and until when it may (grading/watch.py)
    overrun: tuple[Step, bool] | None = None  # the step it was stopped in, and whether for CPU


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
        self._wanted: set[str] = set()  # weeks to start a grader for before work arrives (``warm``)
        self.graders_started = 0  # grader processes started so far: warm graders keep this low

    def __enter__(self) -> Self:
        self._lock_file = (self.store.root / LOCK_FILE).open("a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            for handle in (self._lock_file, self._wake_read, self._wake_write):
                handle.close()
            raise GradingError(f"another grading service is running on {self.store.root}: run one per data "
                               "folder (web workers may be many; they only submit and wake it)") from None
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
        self._wanted.add(week)
        self.wake()

    def wake(self) -> None:
        """Look at the queue now (the web app calls this after ``Store.submit``)."""
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
            self.store.fail(attempt.id, f"the result could not be stored ({type(exc).__name__}); it was not "
                                        "graded and does not count as an attempt. Tell your instructor.")
            return
        if self.on_graded is not None:
            try:
                self.on_graded(updated)
            except Exception:
                log.exception("on_graded failed for attempt %s", attempt.id)

    def _give_back(self, attempt: Attempt, *, count_try: bool = True) -> None:
        self._submissions.pop(attempt.id, None)
        self.store.release(attempt.id, count_try=count_try)

    def _week_broken(self, week: str, error: BaseException) -> None:
        log.error("grading %s stopped: %s (queued attempts wait; tried again in %g s)", week, error,
                  BROKEN_WEEK_PAUSE_S)
        self._broken[week] = time.monotonic() + BROKEN_WEEK_PAUSE_S

    def _ready_weeks(self) -> list[str]:
        """Weeks with queued work that are not paused, the longest-waiting first."""
        now = time.monotonic()
        queued = self.store.queued_weeks()
        oldest = self.store.oldest_queued_week()
        weeks = sorted((w for w in queued if self._broken.get(w, 0) <= now), key=lambda w: w != oldest)
        return weeks

    # --- local warm graders -------------------------------------------------------------------

    def _run_local(self) -> None:
        context: Any = multiprocessing.get_context(START_METHOD)  # "spawn": the typed contexts name it
        memory = grader_memory_bytes()
        graders: list[_Grader] = []

        def start(week: Week) -> None:
            parent_end, child_end = context.Pipe(duplex=True)
            process = context.Process(target=serve, args=(week, self.limits, child_end, memory),
                                      name=f"autograder-service-{week.name}", daemon=True)
            process.start()
            child_end.close()
            graders.append(_Grader(week, process, parent_end))
            self.graders_started += 1

        def answer(grader: _Grader, attempt: Attempt | None) -> None:
            grader.waiting = False
            if attempt is None:
                grader.retiring = True
                grader.conn.send(None)
                return
            grader.held = attempt
            grader.conn.send((attempt.id, self._submission(attempt)))

        def assign() -> None:
            for grader in graders:
                if grader.waiting and not grader.retiring and self._broken.get(grader.week.name, 0) <= time.monotonic():
                    attempt = self.store.claim([grader.week.name])
                    if attempt is not None:
                        answer(grader, attempt)
                    elif time.monotonic() - grader.idle_since > self.idle_s:
                        answer(grader, None)
            wanted, self._wanted = self._wanted, set()
            for name in wanted:
                if len(graders) < self.jobs and not any(g.week.name == name for g in graders):
                    try:
                        start(self._week(name))
                    except CourseError as exc:
                        log.warning("cannot warm a grader for %s: %s", name, exc)
            for week in self._ready_weeks():
                mine = [g for g in graders if g.week.name == week and not g.retiring]
                if any(g.held is None for g in mine):  # one is starting or about to ask
                    continue
                if len(graders) < self.jobs:
                    try:
                        start(self._week(week))
                    except CourseError as exc:
                        self._week_broken(week, exc)
                    continue
                idle = [g for g in graders if g.waiting and not g.retiring and g.week.name != week]
                if idle:
                    answer(idle[0], None)  # frees a slot for the waiting week

        def handle(grader: _Grader, message: dict[str, Any]) -> None:
            op = message.get("op")
            if op == "next" and grader.held is None:
                grader.waiting, grader.idle_since = True, time.monotonic()
            elif op == "watch" and grader.held is not None:
                grader.step = Step.begun(message, grader.process.pid or 0)
            elif op == "result" and grader.held is not None and message.get("index") == grader.held.id:
                attempt, grader.held, grader.step = grader.held, None, None
                self._record(attempt, from_dict(message["doc"]))
            elif op == "fatal":
                self._week_broken(grader.week.name, CourseError(str(message.get("message"))))
            else:
                log.error("a grader process sent an unexpected message %r; stopping it", op)
                grader.process.kill()

        def ended(grader: _Grader) -> None:
            grader.process.join()
            drain(grader)
            grader.conn.close()
            graders.remove(grader)
            if grader.held is not None and grader.overrun is not None:
                # the grader's own work on this attempt ran past its budget: graded as an error,
                # never queued again (it would do the same again)
                step, cpu = grader.overrun
                submission = self._submissions.get(grader.held.id) or self._submission(grader.held)
                seconds = step.cpu_limit if cpu else self.limits.grader_test_wall_s
                self._record(grader.held, overrun_result(grader.week, submission, step.what, cpu=cpu,
                                                         seconds=seconds))
            elif grader.held is not None:
                log.warning("a grader process ended (exit code %s) while grading attempt %s: queued again",
                            grader.process.exitcode, grader.held.id)
                self._give_back(grader.held)
            elif not grader.retiring and grader.week.name not in self._broken:
                self._week_broken(grader.week.name, CourseError(
                    f"a grader process for {grader.week.name} ended (exit code {grader.process.exitcode}) "
                    "before grading anything"))

        def drain(grader: _Grader) -> bool:
            """Handle every message waiting from ``grader``; False once its pipe is closed."""
            try:
                while grader.conn.poll():
                    handle(grader, json.loads(grader.conn.recv_bytes()))
            except (EOFError, OSError):
                return False
            return True

        def check_steps() -> float:
            """Stop every grader process whose step ran past its budget (as the batch's parent
            does); how long to wait before looking again."""
            now, due = time.monotonic(), POLL_S
            for grader in graders:
                if grader.step is None or grader.overrun is not None:
                    continue
                cpu = grader.step.overrun(grader.process.pid or 0, now)
                if cpu is not None:
                    grader.overrun = (grader.step, cpu)
                    grader.process.kill()  # its sentinel ends the wait; `ended` records the error
                else:
                    due = min(due, grader.step.wait_s(now))
            return max(due, 0.0)

        try:
            while not self._stop.is_set():
                assign()
                handles: list[Any] = [self._wake_read]
                for g in graders:
                    handles += [g.conn, g.process.sentinel]
                wait(handles, timeout=check_steps())
                self._drain_wake()
                for grader in graders:
                    open_ = drain(grader)
                    if not open_ or not grader.process.is_alive():
                        ended(grader)
        finally:
            for grader in graders:
                grader.process.kill()
                grader.process.join()
                grader.conn.close()
                if grader.held is not None:
                    self._give_back(grader.held, count_try=False)

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
                ready = self._ready_weeks()
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
