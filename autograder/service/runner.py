"""Grading the service's queue: warm grader processes on this machine, or a Dask cluster.

Uploads arrive one at a time, so the batch functions (``grade_parallel``,
``grade_on_cluster``) do not fit: they end with their batch. The service grades in what
they are built on instead, with its queue as one more feed (``_Queue``: attempts claimed
as graders ask, the longest-waiting week first):

- ``jobs`` (local): the service's ``grading.pool.GraderPool`` of ``jobs`` warm grader
  processes; a grader idle for ``idle_s`` is let go. The Moodle syncs of ``serve`` grade
  in this same pool (``pool``), after the queue's uploads, so ``serve --jobs N`` never
  runs more than N graders.
- ``scheduler`` (Dask): the batch's ``--scheduler`` path, ``grading.distributed.
  ClusterGraders``: each attempt is one ``grade_task``, graded in the worker process's
  pool of warm grader processes, as many in flight as a batch keeps
  (``distributed.in_flight``); the rest waits in the store's queue. The client is
  connected by the grading thread (a scheduler not there yet is tried again after the
  wait below) and connected afresh after an error escapes the loop.

The pool's rule when a grader dies applies to both (``grading.pool``): an attempt whose
check ran past its budget gets an ``error`` result; one whose grader died otherwise (on a
cluster: ``GraderLost``, or the task lost with its worker) goes back to the queue,
counting a try (the store fails it after ``MAX_TRIES``); one held when the service stops
goes back without counting a try, as does one whose week cannot be graded (the week is
paused for ``BROKEN_WEEK_PAUSE_S``).

Either way a result is recorded through ``Store.record_result`` (result JSON, feedback
page, counted score, AGS post) and ``on_graded`` is told; a result with a hand-graded task
that leaves none of its course's week waiting has the week's groups of similar answers
computed again in the background (``answer_groups.regroup``), so the marking page finds
them ready. An attempt claimed by a service
that is killed is queued again when the next one starts (``Store.requeue_interrupted``).
One whose claim another replica took over while this one stalled (``claims.py``) is that
replica's: this one's result, release or failure is dropped, with a warning saying so.

The database may go away for a while (a restart, a failover: ``health.py``): the loop goes
on. While it is away no attempt is claimed; a result graded meanwhile is kept in memory,
and an attempt to give back is kept too, both written when the database answers again
(tried after a wait of 0.5 s doubling to 10 s, one log line per kind of error per
minute). The attempt's claim is renewed as soon as the database answers; if the outage
outlasts the claim, another replica may have taken the attempt over, and this one's
outcome is dropped as above. A result still unwritten when the service stops is lost with
it: its attempt's claim expires and the attempt is graded again. Any other error that
escapes the loop is logged (with its traceback, once a minute) and the loop starts again
after the same wait: a loop that ended would stop the course's grading while the web side
still took uploads. Every turn of the loop beats ``health`` (``/readyz``).
"""

from __future__ import annotations

import fcntl
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self, TextIO

from sqlalchemy.exc import SQLAlchemyError

from autograder.course import Course, Week
from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.execution import Limits
from autograder.grading.distributed import ClusterGraders
from autograder.grading.pool import Feed, FeedRunner, GraderPool, Job
from autograder.manual import answer_hashes
from autograder.results import Participant, SubmissionResult
from autograder.service.answer_groups import regroup
from autograder.service.events import attempt_fields, event
from autograder.service.health import Health, Outage, database_away
from autograder.service.marking import hand_ins, task_answers
from autograder.service.store import Attempt, Store
from autograder.submission import Submission

if TYPE_CHECKING:
    from types import TracebackType

    from distributed import Client

log = logging.getLogger(__name__)


def week_answers(store: Store, context: str, week: str) -> dict[int, dict[str, str]]:
    """Each hand-graded task's answers (attempt key -> text) as the marking page groups them:
    every student's, whoever marks them."""
    everyone = hand_ins(store, context, week)
    tasks = sorted({number for hand_in in everyone for number in hand_in.tasks})
    return {task: {answer.attempt.key: answer.text or "" for answer in task_answers(store, everyone, week, task)}
            for task in tasks}

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
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._broken: dict[str, float] = {}  # week -> monotonic time its grading may be tried again
        self._submissions: dict[int, Submission] = {}
        self._weeks: dict[str, Week] = {}
        self._lock_file: TextIO | None = None
        self.health = Health(store.database)  # the loop beats it at every turn (``/readyz``)
        self._outage = Outage("grading")
        # what the database could not take when it was away, written once it answers: results,
        # and attempts to give back (whether the try counts)
        self._unrecorded: list[tuple[Attempt, SubmissionResult]] = []
        self._unreleased: list[tuple[Attempt, bool]] = []
        # the warm graders (none with a cluster): what the Moodle syncs of ``serve`` grade in too
        self.pool = None if scheduler is not None else GraderPool(jobs, self.limits, idle_s=idle_s,
                                                                   name="autograder-service")
        self._cluster: ClusterGraders | None = None  # with a scheduler: connected by the grading thread

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
        changed = self.store.refresh_scores()
        if changed:
            log.warning("%d counted score(s) changed since they were last posted (marks merged into the gradebook, "
                        "or a stop while marking): posted again", changed)
        self._thread = threading.Thread(target=self._guard(self._grade), name="autograder-grading", daemon=True)
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
            self._lock_file.close()
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
        if self._lock_file is not None:
            self._lock_file.close()  # releases the lock
        self.health.close()

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
        graders = self.pool or self._cluster
        if graders is not None:
            graders.wake()

    def _guard(self, target: Callable[[], None]) -> Callable[[], None]:
        """``target`` run until the service stops: an error that escapes it (the database away at
        a step no feed method catches, a bug) is logged as ``Outage`` logs it, and the loop
        starts again after its wait; what the graders held went back to the queue."""
        def run() -> None:
            while not self._stop.is_set():
                try:
                    target()
                except Exception as exc:  # noqa: BLE001 - a loop that dies stops the course's grading
                    self._stop.wait(self._outage.failed(exc))
            if self.pool is not None:
                self.pool.close()  # what the graders held goes back to the queue, no try counted
            self._drop_cluster()
            self._settle(final=True)
        return run

    def _beat(self) -> bool:
        """The pool's ``until``: the loop went round (``Health.beat``); whether to stop."""
        self.health.beat()
        return self._stop.is_set()

    def _database_ok(self) -> bool:
        """Whether the loop may use the database now: not while waiting after an error, and only
        once what it could not write before is written."""
        if not self._outage.due():
            return False
        return self._settle()

    def _settle(self, *, final: bool = False) -> bool:
        """Write the results and give-backs the database could not take; False if it still cannot.
        ``final``: the service stops; what is left is logged (those attempts' claims expire and
        they are graded again)."""
        try:
            while self._unrecorded:
                self._store_result(*self._unrecorded[0])
                self._unrecorded.pop(0)
            while self._unreleased:
                self._release(*self._unreleased[0])
                self._unreleased.pop(0)
        except Exception as exc:  # noqa: BLE001 - kept and tried again after the wait
            self._outage.failed(exc)
            if final:
                log.warning("the service stops with %d result(s) and %d attempt(s) to give back not written (the "
                            "database is away): those attempts are graded again once their claims expire",
                            len(self._unrecorded), len(self._unreleased))
            return False
        return True

    # --- what every backend shares ------------------------------------------------------------

    def _week(self, name: str) -> Week:
        """The week, read once per service (its tasks and title are parsed from the notebook)."""
        if name not in self._weeks:
            self._weeks[name] = self.course.week(name)
        return self._weeks[name]

    def _claim(self, weeks: list[str]) -> tuple[Attempt, Submission] | None:
        """Claim the next attempt of ``weeks`` with what grading it needs; None if none waits
        or the database is away (an attempt claimed but not read then goes back)."""
        if not self._database_ok():
            return None
        try:
            attempt = self.store.claim(weeks)
        except SQLAlchemyError as exc:
            self._database_error(exc)
            return None
        self._outage.recovered()
        if attempt is None:
            return None
        try:
            return attempt, self._submission(attempt)
        except Exception as exc:
            away = database_away(exc)
            if away:
                self._outage.failed(exc)
            self._give_back(attempt, count_try=not away)
            if not away:
                raise
            return None

    def _database_error(self, exc: SQLAlchemyError) -> None:
        """A step failed: the database away waits (``Outage``); anything else goes up."""
        if not database_away(exc):
            raise exc
        self._outage.failed(exc)

    def _submission(self, attempt: Attempt) -> Submission:
        name = self.store.user_name(attempt.context, attempt.user)
        submission = Submission(
            origin=f"{attempt.week} attempt {attempt.number}", key=attempt.key, content=self.store.content(attempt),
            participant=Participant(participant_id=attempt.user, full_name=name), seed=self.store.seed_for(attempt))
        self._submissions[attempt.id] = submission
        return submission

    def _record(self, attempt: Attempt, result: SubmissionResult) -> None:
        """Store a result (with the answers the hand marks tie to) and tell ``on_graded``; kept
        for later if the database is away."""
        submission = self._submissions.pop(attempt.id, None)
        try:
            week = self._week(attempt.week)
            if submission is not None and any(t.manual for t in week.tasks):
                hashes = answer_hashes(submission, week.tasks, week.handed_out())
                for task in result.tasks:
                    task.answer_sha256 = hashes.get(task.task) if task.manual else None
        except Exception as exc:  # noqa: BLE001 - the attempt is failed, saying so
            self._not_stored(attempt, exc)
            return
        self._later_or_now(self._unrecorded, (attempt, result), lambda: self._store_result(attempt, result))

    def _store_result(self, attempt: Attempt, result: SubmissionResult) -> None:
        """``Store.record_result`` and ``on_graded``; the database away raises (the caller keeps
        the result), any other error fails the attempt, saying so."""
        try:
            updated = self.store.record_result(attempt.id, result, week_title=self._week(attempt.week).label())
        except Exception as exc:
            if database_away(exc):
                raise
            self._not_stored(attempt, exc)
            return
        self._outage.recovered()
        if updated is None:
            self._taken_over(attempt, "result")
            return
        event("graded", **attempt_fields(updated), score=updated.score, max_score=updated.max_score)
        if self.on_graded is not None:
            try:
                self.on_graded(updated)
            except Exception:
                log.exception("on_graded failed for attempt %s", attempt.id)
        # once the week's queue is empty: during a rush of hand-ins (or a regrade) the groups are
        # computed once after the last, not once per hand-in on the cores the graders need
        if any(task.manual for task in result.tasks) and not self.store.queue.waiting(context=updated.context,
                                                                                       week=updated.week):
            regroup(self.store, updated.context, updated.week,
                    lambda: week_answers(self.store, updated.context, updated.week))

    def _not_stored(self, attempt: Attempt, exc: Exception) -> None:
        log.error("could not record the result of attempt %s", attempt.id, exc_info=exc)
        if not self.store.fail(attempt.id, f"the result could not be stored ({type(exc).__name__}); it was "
                                           "not graded and does not count as an attempt. Tell your instructor."):
            self._taken_over(attempt, "failure")
            return
        event("failed", level=logging.ERROR, **attempt_fields(attempt), error=type(exc).__name__)

    def _give_back(self, attempt: Attempt, *, count_try: bool = True) -> None:
        """Put the attempt back in the queue (kept for later if the database is away)."""
        self._submissions.pop(attempt.id, None)
        self._later_or_now(self._unreleased, (attempt, count_try), lambda: self._release(attempt, count_try))

    def _release(self, attempt: Attempt, count_try: bool) -> None:
        if not self.store.release(attempt.id, count_try=count_try):
            self._taken_over(attempt, "release to the queue")
        self._outage.recovered()

    def _later_or_now(self, waiting: list[Any], item: Any, write: Callable[[], None]) -> None:
        """``write`` now, or ``item`` onto ``waiting`` (written by ``_settle``) while the database
        is away, or when it goes away during ``write``; the writes keep their order."""
        if waiting or not self._outage.due():
            waiting.append(item)
            return
        try:
            write()
        except Exception as exc:
            if not database_away(exc):
                raise
            self._outage.failed(exc)
            waiting.append(item)

    def _taken_over(self, attempt: Attempt, dropped: str) -> None:
        """Say that the attempt's claim was lost: ``dropped`` (this process's outcome) is not written."""
        event("taken over", level=logging.WARNING, **attempt_fields(attempt), dropped=dropped,
              message=f"another replica took the attempt over while this one held it (this process did not renew "
                      f"its claim for {self.store.queue.claim_ttl_s:g} s); that replica's outcome stands and this "
                      f"one's {dropped} is dropped")

    def _week_broken(self, week: str, error: BaseException) -> None:
        log.error("grading %s stopped: %s (queued attempts wait; tried again in %g s)", week, error,
                  BROKEN_WEEK_PAUSE_S)
        self._broken[week] = time.monotonic() + BROKEN_WEEK_PAUSE_S

    def _ready_weeks(self) -> dict[str, int]:
        """Weeks with queued work that are not paused, the longest-waiting first, each with how
        many attempts wait (none while the database is away)."""
        now = time.monotonic()
        if not self._database_ok():
            return {}
        try:
            queued = self.store.queued_weeks()
            oldest = self.store.oldest_queued_week()
        except SQLAlchemyError as exc:
            self._database_error(exc)
            return {}
        self._outage.recovered()
        return {w: queued[w] for w in sorted((w for w in queued if self._broken.get(w, 0) <= now),
                                             key=lambda w: w != oldest)}

    # --- the graders: the pool, or the cluster -------------------------------------------------

    def _grade(self) -> None:
        """The queue as a feed of the service's graders, until the service stops."""
        graders = self._graders()
        feed = _Queue(self)
        graders.add(feed)
        try:
            graders.run(until=self._beat, poll_s=POLL_S)
        except Exception:
            if graders is self._cluster:
                self._drop_cluster()  # its connection may be what failed: the next turn connects afresh
            raise
        finally:
            graders.remove(feed)  # the graders keep what they hold: ``_guard`` runs this again, or closes them

    def _graders(self) -> FeedRunner:
        """The pool, or the cluster's graders (connected now if not yet)."""
        if self.pool is not None:
            return self.pool
        if self._cluster is None:
            assert self.scheduler is not None
            self._cluster = ClusterGraders(self.scheduler, self.limits)
        return self._cluster

    def _drop_cluster(self) -> None:
        """Close the cluster's graders: what they held goes back to the queue, no try counted."""
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.close()


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
        claimed = self.service._claim([week.name])
        return None if claimed is None else Job(self, week, claimed[1], claimed[0])

    def done(self, job: Job, result: SubmissionResult) -> None:
        self.service._record(job.tag, result)

    def lost(self, job: Job, why: str) -> None:
        log.warning("attempt %s was lost with its grader (%s): queued again", job.tag.id, why)
        self.service._give_back(job.tag)

    def interrupted(self, job: Job) -> None:
        self.service._give_back(job.tag, count_try=False)

    def broken(self, week: Week, error: AutograderError) -> None:
        self.service._week_broken(week.name, error)
