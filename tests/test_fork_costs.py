"""What keeps a submission's fixed cost down, checked as behaviour: the zygote leaves C's
``malloc`` no free chunk for a worker to take (each would copy a page of the zygote's), and
the request and reply pipes take a large request in one write."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest

from autograder.execution import Limits, SubmissionRun, ZygoteSlot
from autograder.execution.zygote import PIPE_BYTES
from autograder.testing.student import Student
from tests.helpers import marks_its_users

FRAGMENT_THEN_FILL = textwrap.dedent("""
    import ctypes, json
    from autograder.worker.heap import _MallInfo2, fill_free_chunks

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    # a heap like the zygote's: many live buffers with freed ones between them
    buffers = [bytearray(size) for size in range(600, 600 + 40 * 3000, 40)]
    del buffers[::2]
    before = libc.mallinfo2().ordblks
    taken = fill_free_chunks()
    after = libc.mallinfo2().ordblks
    still_works = [bytearray(5000) for _ in range(100)]  # malloc serves new requests from the top
    print(json.dumps({"before": before, "after": after, "taken": taken}))
""")


def test_the_zygote_leaves_malloc_no_free_chunk_for_a_worker_to_take():
    done = subprocess.run([sys.executable, "-c", FRAGMENT_THEN_FILL], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["before"] >= 1000, counts  # the fragmented heap has its free chunks
    assert counts["taken"] >= counts["before"], counts
    assert counts["after"] <= 2, counts  # at most the top's neighbour and a leftover too small to take


LIMITS = Limits(memory_mb=768, zygote_mb=256, nproc=64, scratch_mb=96, cell_timeout_s=20, call_timeout_s=10)


@pytest.fixture(scope="module")
@marks_its_users(pytest.mark.sandbox)
def slot() -> Iterator[ZygoteSlot]:
    slot = ZygoteSlot(LIMITS).start()
    yield slot
    slot.close()


def test_a_request_larger_than_a_default_pipe_crosses_in_one_write(slot: ZygoteSlot):
    values = np.arange(90_000, dtype=np.float64)  # ~960 KB of JSON: fifteen default pipes' worth, under one of ours
    with SubmissionRun(slot, ["def total(x):\n    return float(x.sum())\n"], LIMITS) as run:
        run.execute()
        assert run.worker is not None
        for end in (run.worker.req_w, run.worker.resp_r):
            assert fcntl.fcntl(end, fcntl.F_GETPIPE_SZ) == PIPE_BYTES
        assert Student(run).total(values) == float(values.sum())
