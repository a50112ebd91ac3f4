"""Hostile submissions through the real pipeline, and each isolation layer on its own.

The corpus (``tests/hostile/corpus.py``) is graded as one batch through
``autograder.grading.grader.grade``, with the week-1 fixtures' correct submissions mixed
in. Every case must get exactly what its honest part earns (never more), leak nothing of
``source/``/``solutions/`` or the grader's environment into any feedback, and leave the
machine as it was. The layer tests below check each layer directly, from inside a worker
or on its own, so a regression names the layer that broke. docs/SECURITY.md maps each
test to the threat it covers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Limits, Sandboxed, SubmissionRun, ZygoteSlot, cgroup
from autograder.grading.grader import grade
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission
from autograder.testing.student import Student
from autograder.worker import seccomp
from tests.helpers import marks_its_users

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "week01"
HONEST = ("correct_loop_eta_y_x.ipynb", "correct_raschka_y_minus_yhat.ipynb", "correct_fresh_notebook.ipynb")
HONEST_COUNT = 20  # honest submissions (right and wrong) mixed into the corpus
NOBODY = 65534
# Tight wall-time limits keep the hanging cases cheap; memory and processes small enough
# that the bombs hit the cgroup, large enough for numpy and scikit-learn. The fork bomb's cell
# ends once its worker has had 3 s of CPU, shared with every child spinning beside it, so its
# wait grows with nproc (alone at 0.5 s a cell: 36-55 s with 64 processes, 16-20 with 32, 10
# with 16; in this batch 180 s with 64, 58 with 24). 24 leaves memory_bomb_children's eight
# children room beside the launcher, the zygote, its spare worker and the worker.
HOSTILE = Limits(memory_mb=768, zygote_mb=256, nproc=24, scratch_mb=128, cell_timeout_s=3, call_timeout_s=2,
                 submission_timeout_s=30, tests_timeout_s=8, restarts=2)
BATCH_BUDGET_S = 400.0


def _load_corpus():
    spec = importlib.util.spec_from_file_location("hostile_corpus", ROOT / "tests" / "hostile" / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()
CASES = {case.name: case for case in corpus.CASES}


def _code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" and c.source.strip()]


def _notebook(cells: list[str]) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()


# -- notebooks made at test time (too big to commit) ---------------------------------------------
def huge_notebook() -> bytes:
    """100 MB: a leak notebook padded with a giant output."""
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "source": corpus.LEAK,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "x" * (100 << 20)}]}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}).encode()


def many_cells() -> bytes:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": f"x{i} = {i}"}
             for i in range(100_000)]
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": cells}).encode()


def invalid_utf8() -> bytes:
    return _notebook([corpus.LEAK]).replace(b"Raises whatever", b"Raises \xff\xfe\xc3(whatever")


def nested_json() -> bytes:
    return b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


BUILDERS = {f.__name__: f for f in (huge_notebook, many_cells, invalid_utf8, nested_json)} | corpus.BUILDERS


# -- what must never leak, and the machine's state ----------------------------------------------
def secret_lines(course: Course) -> set[str]:
    """Lines only the grader has: hidden tests and solution regions. Lines a student could
    write from public material (the fixtures, this corpus) are left out."""
    week = course.week("week01")
    lines: set[str] = set()
    for f in week.test_files:
        lines.update(f.read_text().splitlines())
    for nb_path in [week.source_notebook, *sorted((ROOT / "solutions").glob("week01/*/*.ipynb"))]:
        inside = False
        for cell in nbformat.read(nb_path, as_version=4).cells:
            for line in cell.source.splitlines() if cell.cell_type == "code" else ():
                if "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
                    inside = "BEGIN" in line
                elif inside or "solutions" in nb_path.parts:
                    lines.add(line)
    public = (ROOT / "tests" / "hostile" / "corpus.py").read_text()
    public += "".join(p.read_text() for p in FIXTURES.glob("*.ipynb"))
    return {s for s in (line.strip() for line in lines)
            if len(s) >= 30 and not s.startswith(("#", '"""', "def ", "@")) and s not in public}


def feedback_text(result: SubmissionResult) -> str:
    """Everything a result carries that a student or instructor reads."""
    return json.dumps(asdict(result), default=str)


def _owned_by_nobody_or_marked(roots: list[Path], marker: str) -> set[str]:
    found: set[str] = set()
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                try:
                    if marker in name or os.lstat(path).st_uid == NOBODY:
                        found.add(path)
                except OSError:
                    pass
    return found


def machine_roots() -> list[Path]:
    return [Path(p) for p in ("/tmp", "/var/tmp", "/dev/shm", "/root", str(ROOT))]


# -- the batch ------------------------------------------------------------------------------------
@dataclass
class Batch:
    results: dict[str, SubmissionResult]
    alone: dict[str, SubmissionResult]
    seconds: float
    marker: str
    canary: str
    zygote_kept: bool
    leftover_pids: set[int]
    expected_pids: set[int]
    oom_kills: int
    accepted: list[str]
    new_files: set[str]
    layers: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    cells: dict[str, list[str]] = field(default_factory=dict)


def _cells_of(case, base_cells: dict[str, list[str]], port: int, marker: str) -> list[str]:
    cells = base_cells[case.base] + list(case.cells)
    return [c.replace("__PORT__", str(port)).replace("__MARKER__", marker) for c in cells]


@pytest.fixture(scope="module")
@marks_its_users(pytest.mark.sandbox)
def batch(course: Course, tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """Grade the honest fixtures alone, then corpus + honest fixtures as one batch."""
    canary = "canary-" + uuid.uuid4().hex
    marker = "hostile-" + uuid.uuid4().hex[:12]
    os.environ["AUTOGRADER_TEST_CANARY"] = canary  # in the grader's environment, never the worker's
    before = _owned_by_nobody_or_marked(machine_roots(), marker)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    folder = tmp_path_factory.mktemp("hostile")
    week = course.week("week01")
    base_cells = {"correct": _code_cells(FIXTURES / HONEST[0]), "leak": [corpus.LEAK], "wrong": [corpus.WRONG]}
    # 20 honest hand-ins, right and wrong, each byte-unique: the week-1 fixtures in turn
    fixtures = sorted(FIXTURES.glob("*.ipynb"))
    # each with a fixed seed: graded alone and in the mix, it must see the same hidden data
    honest = [Submission(origin=f"{path.name}#{i}", key=f"honest-{path.stem}-{i}",
                         content=path.read_bytes() + b" " * i, seed=i)
              for i, path in enumerate(fixtures[i % len(fixtures)] for i in range(HONEST_COUNT))]
    subs = [Submission(origin=f"base:{b}", key=f"base-{b}", content=_notebook(c)) for b, c in base_cells.items()]
    cells: dict[str, list[str]] = {}
    for index, case in enumerate(corpus.CASES):
        if case.build:
            path = folder / f"{case.name}.ipynb"
            path.write_bytes(BUILDERS[case.build]())
            content = path.read_bytes()
        else:
            cells[case.name] = _cells_of(case, base_cells, port, marker)
            content = _notebook(cells[case.name])
        subs.append(Submission(origin=case.name, key=case.name, content=content))
        if index % 2 == 1 and index // 2 < len(honest):
            subs.append(honest[index // 2])
    subs += honest[len(corpus.CASES) // 2:]  # any left over go last
    slot = ZygoteSlot(HOSTILE).start()
    try:
        alone = {r.key: r for r in grade(week, honest, isolation=Sandboxed(HOSTILE, slot))}
        zygote = slot.zygote
        started = time.monotonic()
        results = {r.key: r for r in grade(week, subs, isolation=Sandboxed(HOSTILE, slot))}
        seconds = time.monotonic() - started
        assert slot.zygote is not None and slot.zygote.plan is not None and slot.zygote.process is not None
        group = slot.zygote.plan.cgroup
        launcher = slot.zygote.process.pid
        def children(pid: int) -> set[int]:
            return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}

        zygotes = children(launcher)
        deadline = time.monotonic() + 10  # the zygote forks the next worker once it has said the last one ended
        while not (spares := {spare for zygote_pid in zygotes for spare in children(zygote_pid)}) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(spares) == 1 and not any(children(spare) for spare in spares), "a spare worker started something"
        expected = {launcher, *zygotes, *spares}
        leftover = group.pids() if group is not None else set()
        oom_kills = group.oom_kills() if group is not None else 0
        zygote_kept = slot.zygote is zygote
        layers, missing = slot.layers, slot.missing
    finally:
        slot.close()
        os.environ.pop("AUTOGRADER_TEST_CANARY", None)
    accepted = []
    while True:
        try:
            conn, address = listener.accept()
            accepted.append(str(address))
            conn.close()
        except BlockingIOError:
            break
    listener.close()
    new_files = _owned_by_nobody_or_marked(machine_roots(), marker) - before
    return Batch(results, alone, seconds, marker, canary, zygote_kept, leftover, expected, oom_kills, accepted,
                 new_files, layers, missing, cells)


def _autograded(result: SubmissionResult) -> dict[int, float]:
    return {t.task: t.score for t in result.tasks if not t.manual}


# -- the corpus -----------------------------------------------------------------------------------
def test_the_corpus_covers_the_issue():
    assert len(CASES) >= 30 and len(CASES) == len(corpus.CASES)
    assert {c.base for c in corpus.CASES} <= {"correct", "leak", "wrong"}
    assert all(c.cells or c.build for c in corpus.CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_case_gets_its_outcome(batch: Batch, course: Course, name: str):
    case = CASES[name]
    result = batch.results[name]
    scores = _autograded(result)
    honest_part = _autograded(batch.results[f"base-{case.base}"])
    assert result.status == Status(case.status), (result.status, result.messages[:3])
    if case.base == "correct":  # attacks on the machinery cost honest work nothing
        assert scores == honest_part == {1: 40.0, 2: 20.0}, (scores, result.messages[:4])
    elif case.base == "leak":
        assert scores == honest_part == {1: 0.0, 2: 0.0}, scores
    else:  # a forged or patched answer earns nothing beyond the honest part
        assert all(scores[t] <= honest_part[t] for t in scores), (scores, honest_part)
    text = feedback_text(result)
    leaked = [line for line in secret_lines(course) if line in text]
    assert not leaked, leaked[:3]
    assert batch.canary not in text and batch.marker not in text
    assert "ESCAPED" not in text and "'connected'" not in text and "reached" not in text
    assert len(text) < 200_000, "feedback must stay bounded whatever the submission prints or raises"


def test_the_batch_finishes_within_its_budget(batch: Batch):
    expected = {f"base-{b}" for b in ("correct", "leak", "wrong")} | set(CASES)
    assert expected <= set(batch.results)
    assert batch.seconds < BATCH_BUDGET_S, batch.seconds


def test_honest_submissions_score_the_same_alongside_the_corpus(batch: Batch):
    assert len(batch.alone) == HONEST_COUNT
    for key, alone in batch.alone.items():
        mixed = batch.results[key]
        assert alone.status == mixed.status, (alone.messages, mixed.messages)
        assert [(t.name, t.score) for t in alone.tests] == [(t.name, t.score) for t in mixed.tests]
        assert alone.score == mixed.score


def test_no_case_took_its_zygote_down_and_nothing_is_left_running(batch: Batch):
    assert batch.zygote_kept, "a submission killed or broke the warm zygote"
    if any(m.startswith("cgroup") for m in batch.missing):
        pytest.skip("no cgroup layer on this machine")
    # only the launcher (bubblewrap), the zygote and the next worker it forked ahead (which runs
    # nothing until a submission comes): every worker and all they started are gone
    assert batch.leftover_pids == batch.expected_pids and len(batch.expected_pids) == 3


def test_no_files_outside_the_output_folder(batch: Batch):
    assert not batch.new_files, sorted(batch.new_files)[:10]


def test_nothing_reached_the_graders_loopback(batch: Batch):
    assert batch.accepted == []


def test_the_memory_bomb_was_stopped_by_the_cgroup(batch: Batch):
    if any(m.startswith("cgroup") for m in batch.missing):
        pytest.skip("no cgroup layer on this machine: " + "; ".join(batch.missing))
    assert batch.oom_kills > 0


def test_hidden_inputs_do_not_come_back_through_exception_messages(batch: Batch):
    """The message ``HIDDEN-INPUT [[x, y], ...]`` never reaches feedback; the crash's location
    may quote the student's own line (``raise ValueError("HIDDEN-INPUT " + repr(...))``), which
    holds no input."""
    text = feedback_text(batch.results["exfiltrate_hidden_inputs"])
    assert "HIDDEN-INPUT [[" not in text and "HIDDEN-INPUT '" not in text


def test_every_layer_is_present_or_reported(batch: Batch):
    """No layer is silently absent: each is in ``layers`` or explained in ``missing``."""
    said = " ".join(batch.layers + batch.missing).lower()
    for layer in ("rlimits", "unprivileged uid", "seccomp", "cgroup", "bubblewrap"):
        assert layer in said, layer


# -- the layers, one by one -----------------------------------------------------------------------
INSIDE = '''
import os, resource, socket
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
seccomp_mode = status["Seccomp"].strip()
no_new_privs = status["NoNewPrivs"].strip()
cap_eff = status["CapEff"].strip()
uid = os.getuid()
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
limits = {name: resource.getrlimit(getattr(resource, name))[0] for name in
          ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CORE")}
oom = int(open("/proc/self/oom_score_adj").read())
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
env = sorted(os.environ)
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
tmp = sorted(os.listdir("/tmp"))
def attempt(fn):
    try:
        fn()
        return "allowed"
    except OSError as exc:
        return type(exc).__name__
ppid = os.getppid()
self_is_init = os.readlink("/proc/self") == "1"
inet = attempt(lambda: socket.socket())
unix = attempt(lambda: socket.socketpair())
write_venv = attempt(lambda: open(os.__file__ + ".pth", "w"))
write_sys = attempt(lambda: open("/sys/fs/cgroup/cgroup.procs", "w").write("1"))
'''


@pytest.fixture(scope="module")
def inside(slot: ZygoteSlot) -> Student:
    """One worker of the session's zygote, reporting what it can see and do."""
    run = SubmissionRun(slot, [INSIDE], slot.limits)
    run.execute()
    try:
        yield Student(run)
    finally:
        run.close()


def test_worker_runs_unprivileged_in_its_own_namespaces(inside: Student):
    assert inside.uid == NOBODY and inside.cap_eff == "0000000000000000" and inside.no_new_privs == "1"
    assert inside.pids == [1], "a PID namespace of its own, and a /proc of it: the worker alone"
    assert inside.interfaces == ["lo"], "a network namespace of its own"
    assert inside.inet == "PermissionError" and inside.unix == "allowed"


def test_worker_has_rlimits_and_volunteers_for_the_oom_killer(inside: Student, slot: ZygoteSlot):
    limits = slot.zygote.limits if slot.zygote is not None else slot.limits
    assert inside.limits["RLIMIT_AS"] == limits.memory_mb << 20
    assert inside.limits["RLIMIT_NPROC"] == limits.nproc and inside.limits["RLIMIT_NOFILE"] == limits.nofile
    assert inside.limits["RLIMIT_FSIZE"] == limits.fsize_mb << 20 and inside.limits["RLIMIT_CORE"] == 0
    assert inside.oom == 1000


def test_worker_cannot_touch_its_zygote(inside: Student):
    """The worker is pid 1 of its own PID namespace: the zygote (its parent's parent, in the
    sandbox's namespace) has no pid it could name, to signal, trace or read it by; the
    seccomp filter that forbids it anyway is proven by ``test_seccomp_filter_on_its_own``."""
    assert inside.ppid == 0 and inside.self_is_init


def test_worker_holds_no_inherited_descriptors_and_no_grader_environment(inside: Student):
    assert len(inside.fds) <= 6, inside.fds  # stdio, the two request pipes, listdir's own
    sandbox_env = {"PATH", "HOME", "MPLBACKEND", "MPLCONFIGDIR", "IPYTHONDIR", "OPENBLAS_NUM_THREADS",
                   "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                   "LC_ALL", "LANG", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}
    set_by_libraries = {name for name in inside.env if name.startswith("KMP_") or name == "PWD"}  # scikit-learn, IPython
    assert set(inside.env) - set_by_libraries <= sandbox_env, inside.env


def test_worker_cannot_write_the_environment_or_sys(inside: Student):
    assert inside.write_venv in ("OSError", "PermissionError")
    assert inside.write_sys in ("OSError", "PermissionError")


def test_worker_is_in_the_zygotes_cgroup(inside: Student, slot: ZygoteSlot):
    """Seen from outside (the sandbox has its own cgroup namespace): the cgroup holds the
    launcher, the zygote and the running worker."""
    if slot.zygote is None or slot.zygote.plan is None or slot.zygote.plan.cgroup is None:
        pytest.skip("no cgroup layer here")
    assert inside.uid == NOBODY  # the worker is alive
    members = slot.zygote.plan.cgroup.pids()
    assert len(members) >= 3 and slot.zygote.process is not None and slot.zygote.process.pid in members


def test_seccomp_filter_on_its_own():
    """In a fresh interpreter: what the filter denies, what it lets through."""
    reason = seccomp.available()
    if reason:
        pytest.skip(reason)
    code = '''
import ctypes, json, os, signal, socket, resource
from autograder.worker import seccomp
rules = seccomp.install(os.getpid())
me = os.getpid()
read, write = os.pipe()

def errno_of(fn):
    try:
        fn()
        return 0
    except OSError as exc:
        return exc.errno

def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

if os.fork() == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    out = {
        "kill_parent": errno_of(lambda: os.kill(me, signal.SIGTERM)),
        "kill_self": errno_of(lambda: os.kill(os.getpid(), 0)),
        "prlimit_parent": errno_of(lambda: resource.prlimit(me, resource.RLIMIT_NOFILE, (8, 8))),
        "inet": errno_of(lambda: socket.socket()),
        "inet6": errno_of(lambda: socket.socket(socket.AF_INET6)),
        "unix": errno_of(lambda: socket.socketpair()),
        "fork": errno_of(fork_and_wait),
        "ptrace": (libc.ptrace(16, me, 0, 0), ctypes.get_errno()),
        "unshare": (libc.unshare(0x10000000), ctypes.get_errno()),
    }
    os.write(write, json.dumps(out).encode())
    os._exit(0)
os.wait()
print(json.dumps({"rules": rules, **json.loads(os.read(read, 65536))}))
'''
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["rules"] > 40
    assert out["kill_parent"] == out["prlimit_parent"] == out["inet"] == out["inet6"] == 1  # EPERM
    assert out["kill_self"] == out["unix"] == out["fork"] == 0
    assert out["ptrace"] == [-1, 1] and out["unshare"] == [-1, 1]


def test_cgroup_limits_on_their_own():
    """A cgroup made for nobody: its process limit stops a fork loop, release leaves nothing."""
    reason = cgroup.unavailable_reason()
    if reason:
        pytest.skip(reason)
    group = cgroup.create(memory_bytes=256 << 20, pids_max=8, owner_uid=NOBODY)
    try:
        script = "for i in $(seq 20); do sleep 30 >/dev/null 2>&1 & done; wait"
        done = subprocess.run([*group.join_argv(), "/bin/sh", "-c", script], user=NOBODY, group=NOBODY,
                              extra_groups=[], capture_output=True, text=True, timeout=5)
        assert "fork" in done.stderr.lower() or done.returncode != 0
        assert 0 < len(group.pids()) <= 8
        # the system interpreter: nobody may not reach the virtualenv of a course in a private folder
        memory = subprocess.run([*group.join_argv(), "/usr/bin/python3", "-c", "b = b'x' * (512 << 20)"],
                                user=NOBODY, group=NOBODY, extra_groups=[], capture_output=True, timeout=30)
        assert memory.returncode == -9 and group.oom_kills() >= 1
    finally:
        assert group.release()
    assert not any(p.exists() for p in group.paths)


def test_missing_layers_are_reported_not_skipped(monkeypatch: pytest.MonkeyPatch):
    """Without bubblewrap, the plan says what is missing and, when asked, refuses to run."""
    from autograder.exceptions import SandboxError
    from autograder.execution import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox.cgroup, "unavailable_reason", lambda: "cgroup memory/pids limits: none here")
    plan = sandbox.plan(3)
    assert any("bubblewrap" in m for m in plan.missing) and any(m.startswith("cgroup") for m in plan.missing)
    assert plan.cgroup is None and not any("bubblewrap" in layer for layer in plan.layers)
    with pytest.raises(SandboxError):
        sandbox.plan(3, require_isolation=True)
    os.rmdir(plan.cwd)
