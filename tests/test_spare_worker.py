"""The worker forked ahead: the zygote forks the next submission's worker as soon as the last
one's traces are gone, and hands it the next submission's pipes. A spare that cannot serve
the next submission (another scratch size asked for, or it died) is replaced by one forked
on the spot; either way the worker is pid 1 of a PID namespace of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator

import psutil
import pytest

from autograder.execution import Limits, SubmissionRun, ZygoteSlot
from autograder.execution.zygote import Worker
from autograder.testing.student import Student

LIMITS = Limits(memory_mb=768, zygote_mb=256, nproc=64, scratch_mb=96, cell_timeout_s=20, call_timeout_s=10)
PROBE = """
import os
pid = os.getpid()
tmp_mb = os.statvfs('/tmp').f_blocks * os.statvfs('/tmp').f_frsize >> 20
"""


@pytest.fixture(scope="module")
def slot() -> Iterator[ZygoteSlot]:
    slot = ZygoteSlot(LIMITS).start()
    yield slot
    if slot.zygote is not None:
        slot.zygote.close()


def probe(slot: ZygoteSlot, limits: Limits = LIMITS) -> dict[str, int]:
    """One submission's run of ``PROBE`` in a worker of ``slot``, with ``limits``; its answers."""
    with SubmissionRun(slot, [PROBE], limits) as run:
        run.execute()
        assert run.messages == [], run.messages
        student = Student(run)
        return {"pid": student.pid, "tmp_mb": student.tmp_mb}


def zygote_children(slot: ZygoteSlot) -> list[psutil.Process]:
    """The zygote's child processes, seen from here (their pids in our namespace)."""
    assert slot.zygote is not None and slot.zygote.process is not None
    tree = psutil.Process(slot.zygote.process.pid).children(recursive=True)
    zygote = next(p for p in tree if p.parent().name() == "bwrap")  # bubblewrap's one child
    return zygote.children()


def wait_for_spare(slot: ZygoteSlot) -> psutil.Process:
    """The one child the zygote has once it has cleaned up after a submission: the spare."""
    slot.settle()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = zygote_children(slot)
        if len(children) == 1:
            return children[0]
        time.sleep(0.05)
    raise AssertionError(f"the zygote has {len(zygote_children(slot))} children, not one spare")


def test_the_next_worker_is_forked_while_the_grader_judges_and_serves_the_next_submission(slot: ZygoteSlot):
    assert probe(slot) == {"pid": 1, "tmp_mb": 96}
    spare = wait_for_spare(slot)
    with SubmissionRun(slot, [PROBE], LIMITS) as run:
        run.execute()
        serving = zygote_children(slot)
        assert [p.pid for p in serving] == [spare.pid]  # the spare took the submission; nothing else was forked
        assert Student(run).pid == 1


def test_a_worker_asked_for_another_scratch_size_gets_it(slot: ZygoteSlot):
    """The spare was made with the last submission's scratch size: a submission that asks for
    another gets a worker forked for it, and the next spare has the new size."""
    probe(slot)
    smaller = Limits(**{**LIMITS.__dict__, "scratch_mb": 48})
    assert probe(slot, smaller) == {"pid": 1, "tmp_mb": 48}
    assert probe(slot, smaller) == {"pid": 1, "tmp_mb": 48}
    assert probe(slot) == {"pid": 1, "tmp_mb": 96}


def test_a_spare_that_died_is_replaced_by_a_worker_forked_on_the_spot(slot: ZygoteSlot):
    probe(slot)
    spare = wait_for_spare(slot)
    spare.send_signal(signal.SIGKILL)
    spare.wait(timeout=10)
    assert probe(slot) == {"pid": 1, "tmp_mb": 96}
    assert probe(slot) == {"pid": 1, "tmp_mb": 96}  # and the zygote forks ahead again after it


def test_a_fork_read_together_with_the_end_before_it_gets_its_pipes(slot: ZygoteSlot):
    """The grader sends ``end``, then ``fork`` with the next worker's pipes once the ``exited``
    came; a zygote still busy forking the spare reads both at once, descriptors and all. They
    are the fork's, not the end's: the fork was once refused and the grader waited 10 s."""
    zygote = slot.start().zygote
    assert zygote is not None
    worker = slot.spawn()
    assert worker.request({"op": "has", "name": "x"}, 10)["ok"]
    worker.close_fds()
    zygote.worker = None
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    out_r, out_w = os.pipe()
    lines = b'{"op": "end"}\n' + json.dumps({"op": "fork", "limits": LIMITS.for_worker()}).encode() + b"\n"
    assert zygote.sock is not None
    socket.send_fds(zygote.sock, [lines], [req_r, resp_w, out_w])
    for fd in (req_r, resp_w, out_w):
        os.close(fd)
    zygote._expect({"exited"}, 10)
    zygote._expect({"forked"}, 10)
    zygote.worker = Worker(zygote, req_w, resp_r, out_r)
    assert zygote.worker.request({"op": "has", "name": "x"}, 10)["ok"]
    slot.release(kill=True)
