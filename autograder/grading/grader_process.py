"""The body of one grader process, and the limits it runs under.

A grader process makes ONE long-lived ``grade()`` call, so it collects the hidden tests
once and keeps one warm zygote for as long as it lives; its ``submissions`` iterable asks
the process that started it (``autograder.grading.pool``) for the next submission
whenever it is ready, over a pipe. Processes are started with "spawn": the grader holds
threads (a worker's output drain), which a fork would copy half-way.

A grader process ends with the process that started it (``end_with_parent``), however that
one dies: a grader deep in a hidden test's work would otherwise go on as an orphan, with
nobody left to enforce its budgets.

Both ways the messages are ``grading.messages``' models as JSON text, never a pickle: the
pool unpickles nothing a grading process wrote. A grader also says what step it starts
(``autograder.grading.watch``), so the pool can stop it when a step runs past its budget.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import resource
import signal
from collections import deque
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Final

from autograder.course import Week
from autograder.exceptions import AutograderError, GradingError
from autograder.execution import Limits, Sandboxed
from autograder.formats.result_json import to_dict
from autograder.grading.messages import TO_GRADER, Fatal, Next, NoMore, Result, receive, send
from autograder.grading.watch import PipeWatch
from autograder.results import SubmissionResult
from autograder.submission import Submission

START_METHOD: Final = "spawn"
# Writable memory of one grader process (RLIMIT_DATA). Measured on weeks 1 and 6 with
# --jobs 2: a grader peaks at ~255 MB VmData, ~160 MB resident (and grades the same at 1024).
# Raised to the sandbox's memory_mb + zygote_mb (2816 by default) when that is larger.
GRADER_MEMORY_MB = 2048
PR_SET_PDEATHSIG: Final = 1  # <linux/prctl.h>


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


def end_with_parent() -> None:
    """Have the kernel kill this process when its parent dies. A grader waiting on its pipe
    would end by itself (end of file), but one busy in a hidden test never reads the pipe.
    The kernel sends it when the *thread* that started this process ends: a pool's
    ``run`` thread, which is the thread that stops its graders too (``GraderPool.close``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(1)  # the parent died before the line above: nobody to grade for


def serve(week: Week, limits: Limits, conn: Connection, memory: int | None = None) -> None:
    """Body of one grader process: one ``grade()`` over submissions pulled from the parent.

    The zygote it starts inherits the limit, so it is never set below what the sandbox
    grants a zygote and its worker (``memory_mb + zygote_mb``): the worker's own limits
    stay the ones ``Limits`` asks for."""
    end_with_parent()
    if memory is not None:
        memory = max(memory, (limits.memory_mb + limits.zygote_mb) << 20)
    limit_memory(memory)
    from autograder.grading.grader import grade

    held: deque[int] = deque()

    def pull() -> Iterator[Submission]:
        while True:
            send(conn, Next())
            message = receive(conn, TO_GRADER)
            if isinstance(message, NoMore):
                return
            held.append(message.index)
            yield message.submission.submission()

    def report(result: SubmissionResult) -> None:
        send(conn, Result(index=held.popleft(), doc=to_dict(result)))

    try:
        grade(week, pull(), isolation=Sandboxed(limits), on_result=report, watch=PipeWatch(conn, limits))
    except AutograderError as exc:
        send(conn, Fatal.of(exc))
