"""Every submission starts from the same pristine state, whatever the one before it left.

A *writer* submission leaves something in every place the sandbox lets it write: a note
in every writable folder it can find (the list comes from the sandbox itself: its mount
table and a walk of the whole file system, so a new mount cannot be forgotten), a folder
chain deeper than PATH_MAX, folders chmod-ed to 0, SysV shared memory, semaphores and
message queues, a POSIX message queue, modules planted on every ``sys.path`` entry,
memory held in all of them, a process that detaches, and an ``os._exit`` that will not
exit. A *reader* submission forked from the same zygote must find none of it. Checked on
one zygote directly, and through ``grade`` with ``--jobs`` and on a Dask cluster, where
the reader is a correct week-1 notebook that sabotages itself if it finds anything.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.execution import Limits, SubmissionRun, ZygoteSlot
from autograder.grading.parallel import grade_parallel
from autograder.submission import Submission
from autograder.testing.student import Student
from tests.helpers import notebook_bytes

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parent.parent
CORRECT = (ROOT / "tests" / "fixtures" / "week01" / "correct_fresh_notebook.ipynb")
# A cgroup (memory_mb + zygote_mb) small enough that what the writer holds would starve the
# reader if it stayed charged. The writer's address space (RLIMIT_AS, memory_mb) has room
# for its hoard beside a warm zygote's (~480 MB, BLAS buffers included), and its cell the
# time to touch ~1 GB on a slow machine: the test is about what is left, not about speed.
LIMITS = Limits(memory_mb=896, zygote_mb=128, nproc=64, scratch_mb=96, cell_timeout_s=90, call_timeout_s=10,
                submission_timeout_s=180, tests_timeout_s=30, restarts=1)

SCRATCH_MOUNTS = ("/dev/pts", "/dev/shm", "/tmp")  # /dev/pts: ptys only, no files


def on_scratch(places: list[str]) -> bool:
    """Every writable place lies on one of the worker's own fresh mounts (a course cloned
    under /tmp adds the folders above its virtualenv, made in the worker's own tmpfs)."""
    return all(any(p == m or p.startswith(m + "/") for m in SCRATCH_MOUNTS) for p in places)

FIND_WRITABLE = r'''
import os

def writable_places():
    """Folders this process may write: rw mounts, then a walk of everything else."""
    found = set()
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        target, options = fields[4], fields[5].split(",")
        fstype = line.split(" - ")[1].split()[0]
        if "rw" in options and fstype != "proc" and os.path.isdir(target):
            found.add(target)
    for top, dirs, _ in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys")]
        if os.access(top, os.W_OK):
            found.add(top)
    return sorted(found)
'''

WRITER = FIND_WRITABLE + r'''
import ctypes, mmap, os, signal, sys, time
MARK = "__MARK__"
libc = ctypes.CDLL(None, use_errno=True)
places = writable_places()
planted = []
for folder in places + [p for p in sys.path if p and os.path.isdir(p)]:
    for name in ("note-" + MARK, "matplotlib_inline", "statistics.py"):
        try:
            if name == "matplotlib_inline":
                os.makedirs(os.path.join(folder, name), exist_ok=True)
                path = os.path.join(folder, name, "__init__.py")
            else:
                path = os.path.join(folder, name)
            with open(path, "w") as f:
                f.write("raise SystemExit('planted by " + MARK + "')\n" if name != "note-" + MARK else MARK)
            planted.append(path)
        except OSError:
            pass
# a chain deeper than PATH_MAX, locked
os.chdir("/tmp")
depth = 0
try:
    while depth < 3000:
        os.mkdir("d" * 200)
        os.chdir("d" * 200)
        depth += 1
except OSError:
    pass
open("deep-" + MARK, "w").write(MARK)
os.chmod(".", 0)
os.chdir("/tmp")
os.chmod("/tmp", 0)
# memory held in the scratch file systems
for folder in ("/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, "ballast-" + MARK), "wb") as f:
            for _ in range(12):
                f.write(b"m" * (8 << 20))
    except OSError:
        pass
# SysV IPC: 8 segments of 64 MB touched and left (more than the reader could spare if
# they stayed charged to the cgroup), a semaphore set, a message queue
IPC_CREAT = 0o1000
libc.shmat.restype = ctypes.c_void_p
libc.shmdt.argtypes = [ctypes.c_void_p]
for key in range(0x5EED, 0x5EED + 8):
    segment = libc.shmget(key, 64 << 20, IPC_CREAT | 0o666)
    address = libc.shmat(segment, None, 0)
    if address not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(address, 1, 64 << 20)
        libc.shmdt(address)
libc.semget(0x5EED, 1, IPC_CREAT | 0o666)
libc.msgget(0x5EED, IPC_CREAT | 0o666)
# a POSIX message queue
rt = ctypes.CDLL("librt.so.1", use_errno=True)
rt.mq_open(("/" + MARK).encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
# a process that detaches, and an exit that never comes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(120)
    os._exit(0)
# move the pid counter the next worker would start from, and raise the zygote's cgroup
# counters (memory high-water mark, pids, failures) as a note for it
import threading
for _ in range(200):
    thread = threading.Thread(target=int)
    thread.start()
    thread.join()
for _ in range(60):
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
import numpy as np
hoard = np.ones(8 << 20)  # 64 MB touched
del hoard
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os._exit = lambda *args: time.sleep(120)
sys.exit = os._exit
'''

# What a submission can see of pids, cgroups and the zygote without a clock: the same for
# the first worker of a fresh zygote and for one forked after a writer (checked in this order).
OBSERVE = r'''
import os, threading

def attempt(fn):
    try:
        return fn()
    except Exception as exc:
        return type(exc).__name__

def cgroup_files():
    found = []
    for top, dirs, files in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(top, name) for name in files]
    return sorted(found)

def forked():
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return child

def thread_id():
    ids = []
    thread = threading.Thread(target=lambda: ids.append(threading.get_native_id()))
    thread.start()
    thread.join()
    return ids[0]

observed = {
    "last_pid": attempt(lambda: open("/proc/sys/kernel/ns_last_pid").read()),
    "pid": os.getpid(), "ppid": os.getppid(), "tid": threading.get_native_id(),
    "child": forked(), "thread": thread_id(), "child_after_thread": forked(),
    "loadavg_last_pid": attempt(lambda: open("/proc/loadavg").read().split()[4]),
    "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "init": attempt(lambda: open("/proc/1/cmdline", "rb").read().decode(errors="replace")[-60:]),
    "cgroup_files": attempt(cgroup_files),
    "own_cgroups": attempt(lambda: open("/proc/self/cgroup").read()),
    "memory_high_water": attempt(lambda: open("/sys/fs/cgroup/memory/memory.max_usage_in_bytes").read()),
    "pids_current": attempt(lambda: open("/sys/fs/cgroup/pids/pids.current").read()),
}
'''

READER = FIND_WRITABLE + r'''
import ctypes, os, sys
MARK = "__MARK__"
libc = ctypes.CDLL(None, use_errno=True)
found = []
for folder in writable_places():
    try:
        names = os.listdir(folder)
    except OSError as exc:
        found.append(f"{folder} unreadable ({exc.errno})")
        continue
    found += [f"{folder}/{n}" for n in names if MARK in n or n in ("matplotlib_inline", "statistics.py")]
for entry in sys.path:
    if entry and os.path.exists(os.path.join(entry, "matplotlib_inline", "__init__.py")) and "site-packages" not in entry:
        found.append("module on " + entry)
import statistics, matplotlib_inline  # either would raise if planted
if libc.shmget(0x5EED, 0, 0) != -1: found.append("SysV shared memory")
if libc.semget(0x5EED, 0, 0) != -1: found.append("SysV semaphore")
if libc.msgget(0x5EED, 0) != -1: found.append("SysV message queue")
for kind in ("shm", "sem", "msg"):
    rows = open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]
    if rows: found.append(f"/proc/sysvipc/{kind}: {len(rows)}")
rt = ctypes.CDLL("librt.so.1", use_errno=True)
if rt.mq_open(("/" + MARK).encode(), os.O_RDONLY, 0, None) != -1: found.append("POSIX message queue")
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
if others: found.append(f"processes {others}")
if os.listdir("/dev/shm"): found.append(f"/dev/shm not empty: {os.listdir('/dev/shm')}")
if os.listdir("/tmp/scratch"): found.append(f"scratch not empty: {os.listdir('/tmp/scratch')}")
if os.stat("/tmp").st_mode & 0o700 != 0o700: found.append("/tmp locked")
import numpy as np
buffer = np.ones(32 << 20)  # 256 MB, touched: the cgroup kills this if the writer's memory is still charged
places = writable_places()
'''


def _cells(code: str, mark: str) -> list[str]:
    return [code.replace("__MARK__", mark)]


@pytest.fixture
def own_slot():
    fresh = ZygoteSlot(LIMITS).start()
    yield fresh
    fresh.close()


def test_a_submission_finds_nothing_the_one_before_it_left(own_slot: ZygoteSlot):
    mark = uuid.uuid4().hex
    writer = SubmissionRun(own_slot, _cells(WRITER, mark), LIMITS)
    writer.execute()
    assert writer.messages == []
    planted = Student(writer).planted
    places = Student(writer).places
    # the sandbox's writable places are on its scratch file systems only (and the notes
    # landed in every one but devpts, which takes no files); were a mount added, it would
    # be listed here and probed below
    assert on_scratch(places) and {"/tmp", "/dev/shm", "/tmp/scratch"} <= set(places)
    assert {str(Path(p).parent) for p in planted if "note-" in p} == set(places) - {"/dev/pts"}
    started = time.monotonic()
    writer.close()
    own_slot.settle()  # the zygote reports the writer gone: killed at once, not after its sleep
    assert time.monotonic() - started < 10
    reader = SubmissionRun(own_slot, _cells(READER, mark), LIMITS)
    reader.execute()
    assert reader.messages == []
    student = Student(reader)
    assert student.found == []
    assert student.places == places
    reader.close()


def _observe(slot: ZygoteSlot) -> dict[str, object]:
    run = SubmissionRun(slot, [OBSERVE], LIMITS)
    run.execute()
    assert run.messages == []
    observed = Student(run).observed
    run.close()
    slot.settle()
    return dict(observed)


def test_pids_cgroups_and_the_zygote_look_the_same_after_a_writer(own_slot: ZygoteSlot):
    """Each worker is pid 1 of a PID namespace of its own, with a /proc of that namespace and
    no cgroup in view: the first worker of a fresh zygote and one forked after a writer that
    moved the pid counter and raised the cgroup's counters see exactly the same."""
    first = _observe(own_slot)
    writer = SubmissionRun(own_slot, _cells(WRITER, uuid.uuid4().hex), LIMITS)
    writer.execute()
    assert writer.messages == []
    writer.close()
    own_slot.settle()
    assert _observe(own_slot) == first
    assert first["pid"] == 1 and first["processes"] == [1] and first["cgroup_files"] == []
    assert first["memory_high_water"] == first["pids_current"] == "FileNotFoundError"
    assert all(line.endswith(":/") for line in str(first["own_cgroups"]).splitlines())


def test_writable_places_are_only_the_fresh_scratch(own_slot: ZygoteSlot):
    """/, /etc and /dev are bubblewrap's own tmpfs, read-only now; the package's parent on
    ``sys.path`` too."""
    run = SubmissionRun(own_slot, [FIND_WRITABLE + "import sys\nplaces = writable_places()\npath = sys.path\n"
                                   "import os\nwritable_path = [p for p in path if p and os.access(p, os.W_OK)]"],
                        LIMITS)
    run.execute()
    student = Student(run)
    assert on_scratch(student.places)
    assert student.writable_path == []
    run.close()


def _pairs(count: int) -> list[Submission]:
    """Writers and correct readers, alternating: a reader scores 60 only on a pristine start."""
    correct = CORRECT.read_bytes()
    import nbformat

    submissions = []
    for index in range(count):
        mark = uuid.uuid4().hex
        nb = nbformat.reads(correct, as_version=4)
        # the correct Perceptron survives only a probe that runs through and finds nothing
        probe = ("kept = Perceptron\nPerceptron = None\n" + READER.replace("__MARK__", mark)
                 + "\nif not found:\n    Perceptron = kept\n")
        nb.cells.append(nbformat.v4.new_code_cell(probe))
        writer = notebook_bytes(WRITER.replace("__MARK__", mark))
        submissions += [Submission(origin=f"writer{index}", key=f"writer{index}", content=writer),
                        Submission(origin=f"reader{index}", key=f"reader{index}",
                                   content=nbformat.writes(nb).encode())]
    return submissions


def test_with_jobs_every_reader_starts_pristine(course: Course):
    results = grade_parallel(course.week("week01"), _pairs(3), jobs=2, limits=LIMITS)
    readers = [r for r in results if r.key.startswith("reader")]
    assert [r.score for r in readers] == [60.0] * 3, [r.messages for r in readers]


def test_on_a_dask_worker_every_reader_starts_pristine(course: Course):
    distributed = pytest.importorskip("distributed")
    from autograder.grading.distributed import grade_on_cluster

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        results = grade_on_cluster(course.week("week01"), _pairs(2), scheduler=client, limits=LIMITS)
    readers = [r for r in results if r.key.startswith("reader")]
    assert [r.score for r in readers] == [60.0] * 2, [r.messages for r in readers]
