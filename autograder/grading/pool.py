"""One pool of grader processes on this machine: what the batch, the audit, the service and
its Moodle syncs all grade in, and every Dask worker process (``grading.distributed``).

A set of submissions is graded one way: its feed (below) is handed to a ``FeedRunner``,
either a ``GraderPool`` here or, on a Dask cluster, ``distributed.ClusterGraders``, whose
tasks are graded in the ``GraderPool`` of each Dask worker process. Both settle every job
with its feed by the one rule below.

A pool runs at most ``jobs`` grader processes (``grader_process.serve``), each one
long-lived ``grade()`` of one week: hidden tests collected once, a warm sandbox zygote.
Its work comes from *feeds* (``Feed``): a batch's submissions, the service's queue, a
Moodle sync's hand-ins relayed from its process (``autograder.grading.relay``). The pool
asks a feed for work only when a grader is ready for it, so a batch's generator is read
as graders free up (the audit's time budget relies on it). A grader with nothing to do
for ``idle_s`` is let go; when every slot is taken and a week has work but no grader, an
idle grader of another week is let go for it. Feeds are asked in the order they were
added: the service's own queue goes before a sync's hand-ins.

The pool also bounds the grader's own work: each grader says what step it starts
(``autograder.grading.watch``), and one whose step runs past its wall or CPU budget is
killed.

The rule when a grader dies (one rule for every feed, here and on a cluster):

- killed by a budget: its submission gets an ``error`` result naming the check, and is
  never graded again (it would do the same again);
- any other death (a crash, the memory limit, a kill from outside; on a cluster also a
  task lost with its Dask worker or the connection): the submission is lost to that
  grader; its feed says what follows (``Feed.lost``): by default an ``error`` result
  saying grading stopped; the service's queue instead takes the attempt back, counting a
  try (the store fails it after ``MAX_TRIES``);
- the pool stopping (the service stops) while a submission is graded: it is interrupted
  (``Feed.interrupted``): the service queues the attempt again without counting a try;
- a grader that says its week cannot be graded (the hidden tests do not collect, the
  sandbox does not start, the course is not mounted on a Dask worker), or
  ``MAX_IDLE_DEATHS`` graders of a week in a row dying before they took anything: every
  feed is told (``Feed.broken``); a batch stops with that error, the service pauses the
  week (on a cluster the task's submission is interrupted first: the service takes the
  attempt back without a try);

and in every case a fresh grader carries on with the rest of the work.
"""

from __future__ import annotations

import itertools
import logging
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Final, Protocol

from pydantic import ValidationError

from autograder.course import Week
from autograder.exceptions import AutograderError, GradingError
from autograder.execution import Limits
from autograder.formats.result_json import from_dict
from autograder.grading.grader_process import START_METHOD, grader_memory_bytes, serve
from autograder.grading.judge import lost_result, overrun_result
from autograder.grading.loop import OnResult
from autograder.grading.messages import FROM_GRADER, Fatal, Next, NoMore, Result, SubmissionData, Watch, Work, send
from autograder.grading.watch import Step
from autograder.results import SubmissionResult
from autograder.submission import Submission

log = logging.getLogger(__name__)

MAX_IDLE_DEATHS: Final = 3  # graders of a week in a row that die holding nothing: the week cannot start


class Graders(Protocol):
    """Something a batch can be graded in: a ``GraderPool`` of its own, or the service's
    pool seen from a sync's process (``relay.RelayedGraders``)."""

    def grade(self, week: Week, submissions: Iterable[Submission],
              on_result: OnResult | None = None) -> list[SubmissionResult]:
        """Results in submission order; ``on_result`` sees each as it arrives."""
        ...


@dataclass(eq=False)
class Job:
    """One submission a feed hands the pool; ``tag`` is the feed's own handle on it."""

    feed: Feed
    week: Week
    submission: Submission
    tag: Any = None


class Feed:
    """Where a pool's work comes from, and where what came of it goes (see the module's rule)."""

    def waiting(self, room: int) -> list[tuple[Week, int]]:
        """The weeks with work to hand out now, the most urgent first, each with how many
        jobs it holds (counting up to ``room`` is enough)."""
        return []

    def take(self, week: Week) -> Job | None:
        """The next job of ``week``, or None when there is none now."""
        return None

    def done(self, job: Job, result: SubmissionResult) -> None:
        """``job``'s result: graded, or an error when the grader's work on it ran past a budget."""
        raise NotImplementedError

    def lost(self, job: Job, why: str) -> None:
        """The grader died with ``job`` (not for a budget): an ``error`` result saying so,
        unless the feed can grade it again later."""
        self.done(job, lost_result(job.week, job.submission, why))

    def interrupted(self, job: Job) -> None:
        """The pool stopped while ``job`` was graded: nothing by default."""

    def broken(self, week: Week, error: AutograderError) -> None:
        """``week`` cannot be graded: by default the error stops whoever runs the pool."""
        raise error


@dataclass(eq=False)
class _Grader:
    week: Week
    process: BaseProcess
    conn: Connection
    held: Job | None = None
    held_id: int = -1  # the number ``held`` was sent under; its result must name it
    asking: bool = False  # asked for work, not answered yet
    retiring: bool = False  # told there is no more work
    fatal: bool = False  # said its week cannot be graded
    idle_since: float = field(default_factory=time.monotonic)
    step: Step | None = None  # what it is doing for ``held``, and until when it may
    overrun: tuple[Step, bool] | None = None  # the step it was stopped in, and whether for CPU


class FeedRunner:
    """What grades the work of ``add``-ed feeds while ``run`` runs, settling each job with its
    feed by the module's rule: a ``GraderPool`` (grader processes on this machine) or a
    ``grading.distributed.ClusterGraders`` (tasks on a Dask cluster). The batch, the audit,
    the Moodle sync and the service all grade through one of these two.

    ``run`` and ``close`` belong to one thread; ``add``, ``remove`` and ``wake`` may be
    called from any."""

    def __init__(self) -> None:
        self._feeds: list[Feed] = []
        self._lock = threading.Lock()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)

    # -- from any thread -------------------------------------------------------------------------
    def add(self, feed: Feed) -> None:
        with self._lock:
            self._feeds.append(feed)
        self.wake()

    def remove(self, feed: Feed) -> None:
        """Take no more work from ``feed`` (what a grader holds of it is still settled with it)."""
        with self._lock:
            if feed in self._feeds:
                self._feeds.remove(feed)

    def wake(self) -> None:
        """Look at the feeds now."""
        try:
            self._wake_write.send(b"!")
        except OSError:  # already woken, or closed
            pass

    # -- the runner's own thread -----------------------------------------------------------------
    def grade(self, week: Week, submissions: Iterable[Submission],
              on_result: OnResult | None = None) -> list[SubmissionResult]:
        """Grade one batch here, in this thread; results in submission order, the same as
        ``grade()`` gives (but for ``duration_s``). ``on_result`` runs here, in arrival order."""
        return self.grade_weeks([(week, submissions)], on_result)[0]

    def grade_once(self, week: Week, submissions: Iterable[Submission],
                   on_result: OnResult | None = None) -> list[SubmissionResult]:
        """``grade``, then ``close``: the graders of one batch of its own."""
        try:
            return self.grade(week, submissions, on_result)
        finally:
            self.close()

    def grade_weeks(self, batches: Sequence[tuple[Week, Iterable[Submission]]],
                    on_result: OnResult | None = None) -> list[list[SubmissionResult]]:
        """Grade one batch per week at once, the weeks sharing these graders; each batch's
        results in submission order, as ``grade`` gives them."""
        feeds = [_Batch(week, submissions, on_result) for week, submissions in batches]
        for feed in feeds:
            self.add(feed)
        try:
            self.run(until=lambda: all(feed.finished for feed in feeds) and self._quiet())
        finally:
            for feed in feeds:
                self.remove(feed)
        return [feed.in_order() for feed in feeds]

    def run(self, until: Callable[[], bool], *, poll_s: float | None = None) -> None:
        """Hand out work and settle results until ``until()`` (checked after every wake-up);
        ``poll_s``: look at the feeds at least this often (work they cannot wake it for)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop grading; what the graders held is interrupted (``Feed.interrupted``)."""
        self._wake_read.close()
        self._wake_write.close()

    def _quiet(self) -> bool:
        """Whether nothing of a finished batch is still running (a batch waits for it)."""
        return True

    def _feeds_now(self) -> list[Feed]:
        with self._lock:
            return list(self._feeds)

    def _broken(self, week: Week, error: AutograderError, *also: Feed) -> None:
        """``week`` cannot be graded: every feed is told, and ``also`` (a feed removed meanwhile)."""
        feeds = self._feeds_now()
        for feed in feeds + [feed for feed in also if feed not in feeds]:
            feed.broken(week, error)

    def _wait(self, handles: list[Any], timeout: float | None) -> None:
        """Until one of ``handles`` or a ``wake`` is ready, or ``timeout`` seconds."""
        wait([self._wake_read, *handles], timeout=timeout)
        try:
            while self._wake_read.recv(4096):
                pass
        except OSError:
            pass


class GraderPool(FeedRunner):
    """At most ``jobs`` grader processes, fed by ``add``-ed feeds while ``run`` runs; ``warm``
    may be called from any thread too."""

    def __init__(self, jobs: int, limits: Limits | None = None, *, idle_s: float = 0.0,
                 name: str = "autograder-grader") -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        super().__init__()
        self.jobs = jobs
        self.limits = limits or Limits()
        self.idle_s = idle_s
        self.name = name
        self.started = 0  # grader processes started so far: warm graders keep this low
        self._context: Any = get_context(START_METHOD)  # "spawn": the typed contexts name it
        self._memory = grader_memory_bytes()
        self._graders: list[_Grader] = []
        self._wanted: set[Week] = set()  # weeks to start a grader for before work arrives
        self._idle_deaths: dict[Week, int] = {}
        self._numbers = itertools.count()  # what each job is sent to its grader under

    def warm(self, week: Week) -> None:
        """Start a grader for ``week`` now if a slot is free, so the work that follows skips the
        cold start; unused, it is let go after ``idle_s`` like any idle grader."""
        with self._lock:
            self._wanted.add(week)
        self.wake()

    # -- the pool's own thread -------------------------------------------------------------------
    def run(self, until: Callable[[], bool], *, poll_s: float | None = None) -> None:
        while not until():
            self._assign()
            if until():
                break
            handles: list[Any] = []
            for grader in self._graders:
                handles += [grader.conn, grader.process.sentinel]
            timeouts = [t for t in (self._check_steps(), poll_s) if t is not None]
            self._wait(handles, min(timeouts, default=None))
            for grader in list(self._graders):
                if not self._drain(grader) or not grader.process.is_alive():
                    self._ended(grader)

    def close(self) -> None:
        """Stop every grader; what they held is interrupted (``Feed.interrupted``)."""
        for grader in self._graders:
            grader.process.kill()
            grader.process.join()
            grader.conn.close()
            if grader.held is not None:
                grader.held.feed.interrupted(grader.held)
        self._graders.clear()
        super().close()

    def _quiet(self) -> bool:
        return not self._graders  # a batch's graders were told there is no more work, and ended

    def _take(self, week: Week) -> Job | None:
        for feed in self._feeds_now():
            job = feed.take(week)
            if job is not None:
                return job
        return None

    def _assign(self) -> None:
        now = time.monotonic()
        for grader in self._graders:
            if grader.asking and not grader.retiring:
                job = self._take(grader.week)
                if job is not None:
                    self._answer(grader, job)
                elif now - grader.idle_since >= self.idle_s:
                    self._answer(grader, None)
        with self._lock:
            wanted, self._wanted = self._wanted, set()
        for week in wanted:
            if len(self._graders) < self.jobs and not any(g.week == week for g in self._graders):
                self._start(week)
        room = self.jobs - sum(g.held is not None for g in self._graders)
        if room <= 0:
            return  # every slot is grading: nothing to start, nobody idle to let go
        counts: dict[Week, int] = {}
        for feed in self._feeds_now():
            for week, count in feed.waiting(room):
                counts[week] = counts.get(week, 0) + count
        for week, count in counts.items():
            free = sum(g.held is None for g in self._graders if g.week == week and not g.retiring)
            while free < count and len(self._graders) < self.jobs:
                self._start(week)
                free += 1
            if not free:
                idle = [g for g in self._graders if g.asking and not g.retiring and g.week != week]
                if idle:
                    self._answer(idle[0], None)  # frees a slot for the week that waits

    def _start(self, week: Week) -> None:
        main = sys.modules.get("__main__")
        if main is not None and not hasattr(main, "__spec__"):
            # an in-process run of a trusted notebook made IPython's namespace stand in for
            # ``__main__``, without the ``__spec__`` "spawn" reads: say there is none to import
            main.__spec__ = None
        ours, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(target=serve, args=(week, self.limits, theirs, self._memory),
                                        name=f"{self.name}-{week.name}", daemon=True)
        process.start()
        theirs.close()
        self._graders.append(_Grader(week, process, ours))
        self.started += 1

    def _answer(self, grader: _Grader, job: Job | None) -> None:
        grader.asking = False
        if job is None:
            grader.retiring = True
            send(grader.conn, NoMore())
            return
        grader.held, grader.held_id = job, next(self._numbers)
        send(grader.conn, Work(index=grader.held_id, submission=SubmissionData.of(job.submission)))

    def _handle(self, grader: _Grader, raw: bytes) -> None:
        held = grader.held
        try:
            message = FROM_GRADER.validate_json(raw)
        except ValidationError as exc:
            log.error("a grader process sent a message that does not parse (%s); stopping it", exc)
            grader.process.kill()
            return
        if isinstance(message, Next) and held is None and not grader.asking:
            grader.asking, grader.idle_since = True, time.monotonic()
        elif isinstance(message, Watch) and held is not None:
            grader.step = Step.begun(message, grader.process.pid or 0)
        elif isinstance(message, Result) and held is not None and message.index == grader.held_id:
            grader.held, grader.step = None, None
            self._idle_deaths.pop(grader.week, None)
            held.feed.done(held, from_dict(message.doc))
        elif isinstance(message, Fatal):
            grader.fatal = True
            self._broken(grader.week, message.error())
        else:
            log.error("a grader process sent an unexpected message %r; stopping it", message.op)
            grader.process.kill()

    def _drain(self, grader: _Grader) -> bool:
        """Handle every message waiting from ``grader``; False once its end of the pipe closed.
        Only the pipe's own errors mean that: an error raised while handling a message (a
        caller's ``on_result`` failing) is the caller's, and goes up to it."""
        while True:
            try:
                if not grader.conn.poll():
                    return True
                raw = grader.conn.recv_bytes()
            except (EOFError, OSError):
                return False
            self._handle(grader, raw)

    def _ended(self, grader: _Grader) -> None:
        """``grader``'s process is gone: settle what it held (the module's rule)."""
        grader.process.join()
        self._drain(grader)  # what it sent just before it ended
        grader.conn.close()
        self._graders.remove(grader)
        code = grader.process.exitcode
        job = grader.held
        if job is not None:
            if grader.overrun is not None:
                step, cpu = grader.overrun
                seconds = step.cpu_limit if cpu else self.limits.grader_test_wall_s
                job.feed.done(job, overrun_result(job.week, job.submission, step.what, cpu=cpu, seconds=seconds))
            else:
                log.warning("a grader process ended (exit code %s) while grading %s", code, job.submission.origin)
                job.feed.lost(job, f"grader process exit code {code}")
        elif not grader.retiring and not grader.fatal:
            deaths = self._idle_deaths[grader.week] = self._idle_deaths.get(grader.week, 0) + 1
            if deaths >= MAX_IDLE_DEATHS:
                del self._idle_deaths[grader.week]
                self._broken(grader.week, GradingError(
                    f"{deaths} grader processes for {grader.week.name} in a row ended before grading anything "
                    f"(last exit code {code}); see the messages above"))

    def _check_steps(self) -> float | None:
        """Stop every grader whose step ran past its wall or CPU budget; the seconds until the
        next check is due (None: no step is watched)."""
        now, due = time.monotonic(), None
        for grader in self._graders:
            step = grader.step
            if step is None or grader.overrun is not None:
                continue
            cpu = step.overrun(grader.process.pid or 0, now)
            if cpu is not None:
                grader.overrun = (step, cpu)
                grader.process.kill()  # its sentinel wakes `run`, which settles the submission
                continue
            left = max(step.wait_s(now), 0.0)
            due = left if due is None else min(due, left)
        return due


class _Batch(Feed):
    """One batch of one week: its submissions handed out in order, its results kept by index."""

    def __init__(self, week: Week, submissions: Iterable[Submission], on_result: OnResult | None) -> None:
        self.week = week
        self.on_result = on_result
        self.source: Iterator[Submission] = iter(submissions)
        self.exhausted = False
        self.ahead: deque[Job] = deque()  # read from the source to start graders for, not handed out yet
        self.count = 0
        self.results: dict[int, SubmissionResult] = {}

    def _pull(self) -> Job | None:
        submission = None if self.exhausted else next(self.source, None)
        if submission is None:
            self.exhausted = True
            return None
        self.count += 1
        return Job(self, self.week, submission, self.count - 1)

    def waiting(self, room: int) -> list[tuple[Week, int]]:
        while len(self.ahead) < room and (job := self._pull()) is not None:
            self.ahead.append(job)
        return [(self.week, len(self.ahead))] if self.ahead else []

    def take(self, week: Week) -> Job | None:
        if week != self.week:
            return None
        return self.ahead.popleft() if self.ahead else self._pull()

    def done(self, job: Job, result: SubmissionResult) -> None:
        self.results[job.tag] = result
        if self.on_result is not None:
            self.on_result(result)

    @property
    def finished(self) -> bool:
        return self.exhausted and not self.ahead and len(self.results) == self.count

    def in_order(self) -> list[SubmissionResult]:
        return [self.results[i] for i in range(self.count)]
