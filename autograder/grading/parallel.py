"""``--jobs N``: grade one batch in N grader processes on this machine.

Each grader process makes ONE long-lived ``grade()`` call, so it collects the hidden
tests once and keeps one warm zygote for the whole batch; its ``submissions`` iterable
asks the parent for the next submission whenever it is ready (a shared queue, served by
the parent so it always knows which submission each process holds). Processes are
started with "spawn": the grader holds threads (a worker's output drain), which a fork
would copy half-way.

What a grader process sends back is JSON text (``result_json.to_dict``), never a pickle:
the parent unpickles nothing a grading process wrote. A process that dies costs only the
submission it was grading: that one gets an ``error`` result saying so, the others go on
(a fresh process takes its place). The parent also bounds the grader's own work: each
process says what step it starts (``autograder.grading.watch``), and one whose step runs
past its wall or CPU budget is killed, its submission's result naming the check. ``batch``
grades through here for every ``--jobs``, 1 included, for these bounds.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Final

from autograder.course import Week
from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.execution import Limits, Sandboxed
from autograder.formats.result_json import from_dict, to_dict
from autograder.grading.judge import lost_result, overrun_result
from autograder.grading.loop import OnResult
from autograder.grading.watch import PipeWatch, Step
from autograder.results import SubmissionResult
from autograder.submission import Submission

START_METHOD: Final = "spawn"
# Writable memory of one grader process (RLIMIT_DATA). Measured on weeks 1 and 6 with
# --jobs 2: a grader peaks at ~255 MB VmData, ~160 MB resident (and grades the same at 1024).
# Raised to the sandbox's memory_mb + zygote_mb (2816 by default) when that is larger.
GRADER_MEMORY_MB = 2048
MAX_IDLE_DEATHS = 3  # processes in a row that die holding no submission: the grader cannot start


# -- the grader process ---------------------------------------------------------------------
def _send_json(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message, ensure_ascii=False).encode())


def grader_memory_bytes() -> int | None:
    """The memory limit of each grader process: ``AUTOGRADER_GRADER_MEMORY_MB``
    (``0`` for none), default ``GRADER_MEMORY_MB``."""
    value = os.environ.get("AUTOGRADER_GRADER_MEMORY_MB", "").strip()
    try:
        mb = int(value) if value else GRADER_MEMORY_MB
    except ValueError:
        raise GradingError(f"AUTOGRADER_GRADER_MEMORY_MB must be a whole number of MB, not {value!r}") from None
    return mb << 20 if mb > 0 else None


def limit_memory(limit: int | None) -> None:
    """Cap this process's writable memory (``RLIMIT_DATA``: heap and private mappings, what
    parsing and numpy allocate), never above a limit already set. Not ``RLIMIT_AS``: that
    also counts address space reserved but never used (a malloc arena and a BLAS buffer per
    thread), which grows with the number of cores and would break a big machine.

    The grader parses what workers send and runs the hidden tests on it; every parse is
    bounded (``codec.prescan``, the frame cap), and this is the layer under those: a grader
    process that still grows past it gets ``MemoryError`` (that submission's result says so)
    or dies, and the parent gives that one submission an ``error`` result and starts a
    fresh process; the machine and the other graders are untouched."""
    if limit is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def serve(week: Week, limits: Limits, conn: Connection, memory: int | None = None) -> None:
    """Body of one grader process: one ``grade()`` over submissions pulled from the parent.

    The zygote it starts inherits the limit, so it is never set below what the sandbox
    grants a zygote and its worker (``memory_mb + zygote_mb``): the worker's own limits
    stay the ones ``Limits`` asks for."""
    if memory is not None:
        memory = max(memory, (limits.memory_mb + limits.zygote_mb) << 20)
    limit_memory(memory)
    from autograder.grading.grader import grade

    held: deque[int] = deque()

    def pull() -> Iterator[Submission]:
        while True:
            _send_json(conn, {"op": "next"})
            message = conn.recv()  # from the parent: (index, Submission) or None
            if message is None:
                return
            index, submission = message
            held.append(index)
            yield submission

    def report(result: SubmissionResult) -> None:
        _send_json(conn, {"op": "result", "index": held.popleft(), "doc": to_dict(result)})

    try:
        grade(week, pull(), isolation=Sandboxed(limits), on_result=report, watch=PipeWatch(conn, limits))
    except AutograderError as exc:
        _send_json(conn, {"op": "fatal", "kind": type(exc).__name__, "message": str(exc)})


# -- the parent -----------------------------------------------------------------------------
@dataclass
class _Grader:
    process: BaseProcess
    conn: Connection
    held: deque[int] = field(default_factory=deque)  # handed out, no result yet; [0] is in flight
    finished: bool = False  # told there is no more work
    step: Step | None = None  # what it is doing for held[0], and until when it may
    overrun: tuple[Step, bool] | None = None  # the step it was stopped in, and whether for CPU


class _Batch:
    """The parent's book-keeping: what is left to hand out, who holds what, what came back."""

    def __init__(self, week: Week, submissions: Iterable[Submission], limits: Limits,
                 on_result: OnResult | None) -> None:
        self.week = week
        self.limits = limits
        self.on_result = on_result
        self.source = iter(submissions)
        self.exhausted = False
        self.retry: deque[int] = deque()  # handed out but never started: hand out again first
        self.submissions: dict[int, Submission] = {}  # index -> submission, until its result is in
        self.results: dict[int, SubmissionResult] = {}
        self.count = 0
        self.graders: list[_Grader] = []
        self.idle_deaths = 0
        self.context = multiprocessing.get_context(START_METHOD)
        self.memory = grader_memory_bytes()

    # work ------------------------------------------------------------------------------------
    def take(self) -> int | None:
        """The index of the next submission to grade, or None when there is none left."""
        if self.retry:
            return self.retry.popleft()
        if self.exhausted:
            return None
        submission = next(self.source, None)
        if submission is None:
            self.exhausted = True
            return None
        index, self.count = self.count, self.count + 1
        self.submissions[index] = submission
        return index

    def work_left(self) -> bool:
        index = self.take()
        if index is None:
            return False
        self.retry.appendleft(index)
        return True

    def finish(self, index: int, result: SubmissionResult) -> None:
        del self.submissions[index]
        self.results[index] = result
        if self.on_result is not None:
            self.on_result(result)

    # processes ---------------------------------------------------------------------------------
    def start_grader(self) -> None:
        main = sys.modules.get("__main__")
        if main is not None and not hasattr(main, "__spec__"):
            # an in-process run of a trusted notebook made IPython's namespace stand in for
            # ``__main__``, without the ``__spec__`` "spawn" reads: say there is none to import
            main.__spec__ = None
        parent_end, child_end = self.context.Pipe(duplex=True)
        process = self.context.Process(target=serve, args=(self.week, self.limits, child_end, self.memory),
                                       name=f"autograder-grader-{len(self.graders)}", daemon=True)
        process.start()
        child_end.close()
        self.graders.append(_Grader(process, parent_end))

    def handle(self, grader: _Grader, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "next":
            index = self.take()
            grader.conn.send(None if index is None else (index, self.submissions[index]))
            grader.finished = index is None
            if index is not None:
                grader.held.append(index)
        elif op == "result":
            index = grader.held.popleft()
            if index != message["index"]:
                raise GradingError(f"grader process sent the result of submission {message['index']} "
                                   f"while grading {index}")
            self.finish(index, from_dict(message["doc"]))
            self.idle_deaths = 0
            grader.step = None
        elif op == "watch":
            grader.step = Step.begun(message, grader.process.pid or 0)
        elif op == "fatal":
            kind = CourseError if message.get("kind") == "CourseError" else GradingError
            raise kind(str(message.get("message")))
        else:
            raise GradingError(f"grader process sent an unknown message {op!r}")

    def drain(self, grader: _Grader) -> bool:
        """Handle every message waiting from ``grader``; False once its end of the pipe closed."""
        try:
            while grader.conn.poll():
                self.handle(grader, json.loads(grader.conn.recv_bytes()))
        except (EOFError, OSError):
            return False
        return True

    def ended(self, grader: _Grader) -> None:
        """``grader``'s process is gone: settle what it held and replace it if work is left."""
        grader.process.join()
        self.drain(grader)  # what it sent just before it ended
        grader.conn.close()
        self.graders.remove(grader)
        code = grader.process.exitcode
        if grader.held:
            lost = grader.held.popleft()
            submission = self.submissions[lost]
            if grader.overrun is not None:
                step, cpu = grader.overrun
                seconds = step.cpu_limit if cpu else self.limits.grader_test_wall_s
                self.finish(lost, overrun_result(self.week, submission, step.what, cpu=cpu, seconds=seconds))
            else:
                self.finish(lost, lost_result(self.week, submission, f"grader process exit code {code}"))
            self.retry.extendleft(reversed(grader.held))
        elif not grader.finished:
            self.idle_deaths += 1
            if self.idle_deaths >= MAX_IDLE_DEATHS:
                raise GradingError(f"{self.idle_deaths} grader processes in a row ended before grading "
                                   f"anything (last exit code {code}); see the messages above")
        if not grader.finished and self.work_left():
            self.start_grader()

    def check_steps(self) -> float | None:
        """Stop every grader process whose step ran past its wall or CPU budget; the seconds
        until the next check is due (None: no step is watched)."""
        now, due = time.monotonic(), None
        for grader in self.graders:
            step = grader.step
            if step is None or grader.overrun is not None:
                continue
            cpu = step.overrun(grader.process.pid or 0, now)
            if cpu is not None:
                grader.overrun = (step, cpu)
                grader.process.kill()  # its sentinel wakes `run`, which settles the submission
                continue
            left = step.wait_s(now)
            due = left if due is None else min(due, left)
        return due

    def run(self, jobs: int) -> list[SubmissionResult]:
        for _ in range(jobs):
            if not self.work_left():
                break
            self.start_grader()
        while self.graders:
            # keyed by what `wait` hands back: a pipe end or a process sentinel
            waiting: dict[Any, _Grader] = {g.conn: g for g in self.graders}
            waiting |= {g.process.sentinel: g for g in self.graders}
            for ready in wait(list(waiting), timeout=self.check_steps()):
                grader = waiting[ready]
                if grader not in self.graders:
                    continue
                open_ = self.drain(grader)
                if not open_ or not grader.process.is_alive():
                    self.ended(grader)
        return [self.results[i] for i in range(self.count)]

    def close(self) -> None:
        for grader in self.graders:
            grader.process.kill()
            grader.process.join()
            grader.conn.close()
        self.graders.clear()


def grade_parallel(
    week: Week,
    submissions: Iterable[Submission],
    *,
    jobs: int,
    limits: Limits | None = None,
    on_result: OnResult | None = None,
) -> list[SubmissionResult]:
    """Grade ``submissions`` in ``jobs`` grader processes; results in submission order, the same
    as ``grade()`` gives (but for ``duration_s``). ``on_result`` runs here, in arrival order."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    batch = _Batch(week, submissions, limits or Limits(), on_result)
    try:
        return batch.run(jobs)
    finally:
        batch.close()
