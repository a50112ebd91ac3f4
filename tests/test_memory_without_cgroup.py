"""Memory a worker could hold outside its address space, where the memory cgroup is off.

``RLIMIT_AS`` counts a process's mappings, so memory in none of them is bounded only by the
cgroup: a memfd written with ``write()``, SysV shared memory touched and detached, SysV
semaphore sets and messages (kernel memory). On a host without a delegated cgroup
(``AUTOGRADER_CGROUP=off`` here) one worker under a 768 MB ``RLIMIT_AS`` held 1 GB of each of
the first two and could have held tens of GB of semaphores. The worker's seccomp filter now
says ENOSYS to all five calls; what a caller falls back on, a file in ``/tmp`` or
``/dev/shm``, stops at the scratch tmpfs's size; and what the course's libraries use
(ctypes callbacks, multiprocessing and its shared memory, joblib, scikit-learn, matplotlib)
still works in that same worker.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution import Limits, SubmissionRun, ZygoteSlot, cgroup
from autograder.testing.student import Student

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parent.parent
SMALL = Limits(memory_mb=768, zygote_mb=256, nproc=64, scratch_mb=128)

HOARD = '''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmdt.argtypes = [ctypes.c_void_p]
MB64, CREATE = 64 << 20, 0o1000 | 0o600

def hoard(one):
    """MB held by 16 tries of 64 MB, and the errno that stopped them (0: none did)."""
    held = []
    for i in range(16):
        try:
            held.append(one(i))
        except OSError as exc:
            return 64 * len(held), exc.errno, held
    return 64 * len(held), 0, held

def sysv_segment(i):
    segment = libc.shmget(0x6C00 + i, MB64, CREATE)
    if segment == -1:
        raise OSError(ctypes.get_errno(), "shmget")
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 0x41, MB64)
    libc.shmdt(ctypes.c_void_p(address))  # detached: in no mapping, so in no RLIMIT_AS

def written(fd):
    for _ in range(64):
        os.write(fd, b"m" * (1 << 20))
    return fd

shm_mb, shm_errno, _ = hoard(sysv_segment)
memfd_mb, memfd_errno, memfds = hoard(lambda i: written(os.memfd_create(f"hoard{i}")))
tmpfs_mb, tmpfs_errno, files = hoard(lambda i: written(os.open(f"/dev/shm/hoard{i}", os.O_CREAT | os.O_WRONLY)))
semget = -1 if libc.semget(0x6C00, 32000, CREATE) == -1 else 0, ctypes.get_errno()
msgget = -1 if libc.msgget(0x6C00, CREATE) == -1 else 0, ctypes.get_errno()
for i, fd in enumerate(files):  # room again in /dev/shm for multiprocessing's semaphores
    os.close(fd)
    os.unlink(f"/dev/shm/hoard{i}")
'''

HONEST = '''
import ctypes, io, multiprocessing
from multiprocessing import shared_memory
import joblib, matplotlib.pyplot as plt, numpy as np
from sklearn.linear_model import LogisticRegression

ORDER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
numbers = (ctypes.c_int * 5)(5, 1, 4, 2, 3)
ctypes.CDLL(None).qsort(numbers, 5, ctypes.sizeof(ctypes.c_int), ORDER(lambda a, b: a[0] - b[0]))  # a libffi closure
sorted_by_callback = list(numbers)
with multiprocessing.Pool(2) as pool:
    pooled = pool.map(abs, [-1, -2, -3])
block = shared_memory.SharedMemory(create=True, size=1 << 20)
block.buf[0] = 7
shared = block.buf[0]
block.close()
block.unlink()
in_parallel = joblib.Parallel(n_jobs=2)(joblib.delayed(abs)(-i) for i in range(4))
X = np.random.default_rng(0).normal(size=(200, 3))
accuracy = float(LogisticRegression().fit(X, X[:, 0] > 0).score(X, X[:, 0] > 0))
figure, axes = plt.subplots()
axes.plot([1, 2])
png = io.BytesIO()
figure.savefig(png, format="png")
png_bytes = len(png.getvalue())
'''


def test_without_the_cgroup_a_worker_holds_no_memory_outside_its_address_space(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cgroup.SWITCH, "off")
    slot = ZygoteSlot(SMALL, preload=Course.locate(ROOT).grading.preload).start()
    try:
        assert slot.zygote is not None and slot.zygote.plan is not None and slot.zygote.plan.cgroup is None
        run = SubmissionRun(slot, [HOARD, HONEST], SMALL)
        run.execute()
        try:
            worker = Student(run)
            # on main: 1024 MB of SysV shared memory and 1024 MB of memfds under a 768 MB RLIMIT_AS
            assert (worker.shm_mb, worker.shm_errno) == (0, errno.ENOSYS)
            assert (worker.memfd_mb, worker.memfd_errno) == (0, errno.ENOSYS)
            assert list(worker.semget) == list(worker.msgget) == [-1, errno.ENOSYS]
            # the fallback, a file in the scratch tmpfs, stops at its size
            assert worker.tmpfs_mb <= SMALL.scratch_mb and worker.tmpfs_errno == errno.ENOSPC
            assert worker.sorted_by_callback == [1, 2, 3, 4, 5] and worker.pooled == [1, 2, 3]
            assert worker.shared == 7 and worker.in_parallel == [0, 1, 2, 3]
            assert worker.accuracy > 0.9 and worker.png_bytes > 1000
        finally:
            run.close()
    finally:
        slot.close()
