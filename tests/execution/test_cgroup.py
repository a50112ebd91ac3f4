"""The sandbox's memory layer on cgroup v1 and v2, and the layers that hold without it.

Which hierarchy is used is read from ``/proc/self/cgroup`` and the mount table, texts as
the kernel writes them on a hybrid host (this machine), a unified one (every current
distribution) and inside a cgroup namespace. cgroup v2's mechanics run on this machine's
real unified hierarchy, which holds only the ``hugetlb`` controller (``memory`` and ``pids``
are bound to v1 here): a delegated cgroup's own processes move to a leaf so controllers can
be enabled for its children, and a zygote's cgroup is killed and removed whole. The memory
limit itself on v2 runs only where the kernel offers it (skipped here).

Without any cgroup (``AUTOGRADER_CGROUP=off``, or a host whose v1 hierarchies are gone
and whose v2 cgroup is not delegated, made here in a private mount namespace) the hostile
corpus's memory and tmpfs attacks are still held by the other layers, and ``grade`` and
``/metrics`` say the layer is off.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from autograder.course import Course
from autograder.database.migrate import open_database
from autograder.execution import Sandboxed, ZygoteSlot, cgroup
from autograder.execution.cgroup import LEAF, Cgroup, Hierarchy, Located, check, choose, locate
from autograder.grading.grader import grade
from autograder.results import Status
from autograder.service.metrics import exposition
from autograder.submission import Submission
from tests.test_hostile import CASES, FIXTURES, HONEST, HOSTILE, _code_cells, _notebook

ROOT = Path(__file__).resolve().parents[2]
UNIFIED = Path("/sys/fs/cgroup/unified")  # this machine's v2 hierarchy, beside the v1 ones
MEMORY_AND_TMPFS = ("memory_bomb", "memory_bomb_children", "fill_the_disk", "sysv_shared_memory_hoard",
                    "tmpfs_hoard_in_a_daemon")
# a private mount namespace without the v1 memory and pids hierarchies: a host where cgroup v1 is gone
WITHOUT_V1 = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              'umount /sys/fs/cgroup/memory && umount /sys/fs/cgroup/pids && exec "$@"', "sh"]

HYBRID_CGROUP = """9:name=systemd:/
8:pids:/
4:memory:/process_api/87ff4aca
0::/
"""
HYBRID_MOUNTS = r"""31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
UNIFIED_CGROUP = "0::/system.slice/autograder.service\n"
UNIFIED_MOUNTS = r"""24 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
29 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
"""


# -- where the cgroups are: a pure reading of two texts ------------------------------------------
def test_a_hybrid_host_uses_its_v1_hierarchies() -> None:
    located = locate(HYBRID_CGROUP, HYBRID_MOUNTS)
    assert located == Located({"memory": Path("/sys/fs/cgroup/memory"), "pids": Path("/sys/fs/cgroup/pids")},
                              Path("/sys/fs/cgroup/unified"))
    assert choose(located) == Hierarchy(1, (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids")))


def test_a_unified_host_uses_the_services_own_cgroup_and_finds_it_again_from_the_leaf() -> None:
    service = Path("/sys/fs/cgroup/system.slice/autograder.service")
    assert choose(locate(UNIFIED_CGROUP, UNIFIED_MOUNTS)) == Hierarchy(2, (service,))
    # after the first zygote, the service's processes (and graders started later) are in the leaf
    moved = f"0::/system.slice/autograder.service/{LEAF}\n"
    assert choose(locate(moved, UNIFIED_MOUNTS)) == Hierarchy(2, (service,))


def test_a_cgroup_namespace_or_an_escaped_mount_point_is_read_as_the_kernel_writes_it() -> None:
    # the mount shows the subtree from its root field: the process's path is relative to it
    mounts = r"29 24 0:26 /kubepods/pod1 /sys/fs/cgroup\040x rw - cgroup2 cgroup2 rw" + "\n"
    assert locate("0::/kubepods/pod1/grader\n", mounts).v2 == Path("/sys/fs/cgroup x/grader")
    assert locate("0::/kubepods/pod1\n", mounts).v2 == Path("/sys/fs/cgroup x")
    # a cgroup outside what the mount shows (another pod's) cannot be reached through it
    assert locate("0::/kubepods/pod10\n", mounts).v2 is None


def test_no_mounted_hierarchy_is_said_not_guessed() -> None:
    reason = choose(locate(UNIFIED_CGROUP, "24 1 8:1 / / rw - ext4 /dev/sda1 rw\n"))
    assert isinstance(reason, str) and reason.startswith("cgroup") and "rlimits" in reason


def _fake_cgroup(folder: Path, controllers: str) -> Path:
    folder.mkdir()
    for name, text in (("cgroup.controllers", controllers), ("cgroup.procs", ""), ("cgroup.subtree_control", "")):
        (folder / name).write_text(text)
    return folder


def test_an_undelegated_v2_cgroup_is_reported_with_what_to_do(tmp_path: Path) -> None:
    """A service started without ``Delegate=yes``: no memory controller in its cgroup, or
    (where systemd accounts memory for every unit) one that systemd still manages."""
    reason = check(Hierarchy(2, (_fake_cgroup(tmp_path / "plain.service", "cpu io"),)))
    assert reason is not None and reason.startswith("cgroup") and "Delegate=yes" in reason
    assert "memory controller" in reason and "cpu io" in reason
    managed = _fake_cgroup(tmp_path / "accounted.service", "cpu io memory pids")
    reason = check(Hierarchy(2, (managed,)))
    assert reason is not None and "systemd has not delegated accounted.service" in reason and "Delegate=yes" in reason
    assert check(Hierarchy(2, (managed,)), assume_delegated=True) is None
    try:  # what systemd 251 and later set on a cgroup it delegated
        os.setxattr(managed, "trusted.delegate", b"1")
    except OSError as exc:
        pytest.skip(f"no trusted xattrs here ({exc.strerror})")
    assert check(Hierarchy(2, (managed,))) is None
    # a cgroup no unit names (a container's own namespace root) is its owner's
    assert check(Hierarchy(2, (_fake_cgroup(tmp_path / "pod", "memory"),))) is None


def test_the_switch_turns_the_layer_off_and_refuses_a_value_it_does_not_know(monkeypatch: pytest.MonkeyPatch):
    from autograder.exceptions import SandboxError

    monkeypatch.setenv(cgroup.SWITCH, "off")
    assert "AUTOGRADER_CGROUP=off" in (cgroup.unavailable_reason() or "")
    monkeypatch.setenv(cgroup.SWITCH, "v3")
    with pytest.raises(SandboxError, match="AUTOGRADER_CGROUP must be 'off'.*'delegated'.*not 'v3'"):
        cgroup.hierarchy()


# -- cgroup v2's mechanics on this machine's real unified hierarchy ------------------------------
@pytest.fixture
def v2_root():
    """This machine's unified hierarchy with ``hugetlb`` handed to children (as it was after)."""
    if os.geteuid() != 0 or "hugetlb" not in (UNIFIED / "cgroup.controllers").read_text().split():
        pytest.skip("no writable cgroup v2 hierarchy with hugetlb here")
    enabled = "hugetlb" in (UNIFIED / "cgroup.subtree_control").read_text().split()
    (UNIFIED / "cgroup.subtree_control").write_text("+hugetlb")
    yield UNIFIED
    if not enabled:
        (UNIFIED / "cgroup.subtree_control").write_text("-hugetlb")


def test_a_delegated_cgroups_own_processes_move_to_a_leaf_so_its_children_get_controllers(v2_root: Path):
    service = v2_root / f"autograder-test-{uuid.uuid4().hex[:8]}"
    service.mkdir()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (service / "cgroup.procs").write_text(str(sleeper.pid))  # the service, alone in its cgroup
        cgroup.delegate(service, ("hugetlb",))
        cgroup.delegate(service, ("hugetlb",))  # again, as every later zygote's create does
        assert (service / "cgroup.subtree_control").read_text().split() == ["hugetlb"]
        assert (service / LEAF / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
        assert (service / "cgroup.procs").read_text() == ""
        zygote = service / "autograder-1-1"
        zygote.mkdir()
        assert any(p.name.startswith("hugetlb.") for p in zygote.iterdir())  # the controller reached it
        zygote.rmdir()
    finally:
        assert Cgroup((service / LEAF,), version=2).release()
        sleeper.wait()
        service.rmdir()


def test_a_v2_cgroup_loses_everything_it_holds_on_release(v2_root: Path):
    """A daemon that left its session and a fork loop: ``cgroup.kill`` takes them all."""
    group = Cgroup((v2_root / f"autograder-{os.getpid()}-test{uuid.uuid4().hex[:6]}",), version=2)
    group.paths[0].mkdir()
    script = "setsid sleep 60 & (while :; do sleep 60 & sleep 0.01; done) & sleep 60"
    shell = subprocess.Popen([*group.join_argv(), "/bin/sh", "-c", script], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = 50
        while len(group.pids()) < 5 and deadline:
            deadline -= 1
            subprocess.run(["sleep", "0.1"])
        assert len(group.pids()) >= 5 and shell.pid in group.pids()
    finally:
        assert group.release()
    assert shell.wait(timeout=5) == -9 and not group.paths[0].exists()


def test_a_v2_memory_limit_kills_at_the_limit_where_the_kernel_offers_it():
    """Runs on a host whose process has a delegated cgroup v2 (skipped on a v1 or hybrid one)."""
    found = cgroup.hierarchy()
    if isinstance(found, str) or found.version != 2:
        pytest.skip(f"no delegated cgroup v2 memory controller here ({found})")
    group = cgroup.create(memory_bytes=256 << 20, pids_max=16, owner_uid=None)
    try:
        memory = subprocess.run([*group.join_argv(), sys.executable, "-c", "b = b'x' * (512 << 20)"],
                                capture_output=True, timeout=30)
        assert memory.returncode == -9 and group.oom_kills() >= 1
        assert (group.paths[0] / "memory.max").read_text().strip() == str(256 << 20)
    finally:
        assert group.release()


# -- without a cgroup: the other layers hold, and the layer is said to be off --------------------
@pytest.mark.sandbox
def test_without_the_cgroup_the_other_layers_hold_the_memory_and_tmpfs_attacks(
        course: Course, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each attack keeps exactly its honest part's 60/60 and costs the correct notebook graded
    after it nothing; the bombs are stopped by the address-space limit (their cells raise
    MemoryError), the fills by the scratch tmpfs's size, the hoards die with the worker's
    namespaces; the zygote survives, and only it, its launcher and its spare are left."""
    monkeypatch.setenv(cgroup.SWITCH, "off")
    marker = "cgroupless-" + uuid.uuid4().hex[:8]
    correct = _code_cells(FIXTURES / HONEST[0])
    subs: list[Submission] = []
    for index, name in enumerate(MEMORY_AND_TMPFS):
        cells = [c.replace("__MARKER__", marker).replace("__PORT__", "9") for c in correct + list(CASES[name].cells)]
        subs += [Submission(origin=name, key=name, content=_notebook(cells)),
                 Submission(origin=f"after {name}", key=f"after-{name}", content=_notebook(correct + [f"# {index}"]))]
    slot = ZygoteSlot(HOSTILE).start()
    try:
        assert slot.zygote is not None and slot.zygote.plan is not None and slot.zygote.process is not None
        assert slot.zygote.plan.cgroup is None and any("AUTOGRADER_CGROUP=off" in m for m in slot.missing)
        first = slot.zygote
        results = {r.key: r for r in grade(course.week("week01"), subs, isolation=Sandboxed(HOSTILE, slot))}
        assert slot.zygote is first, "an attack took the zygote down"
        zygotes = _children(first.process.pid)
        assert len(zygotes) == 1
        assert len(_children(zygotes[0])) <= 1  # the spare worker, forked ahead, and nothing else
    finally:
        slot.close()
    for key, result in results.items():
        assert result.status == Status.GRADED, (key, result.messages[:3])
        assert {t.task: t.score for t in result.tasks if not t.manual} == {1: 40.0, 2: 20.0}, \
            (key, result.messages[:4])
    assert any("MemoryError" in m for m in results["memory_bomb"].messages), results["memory_bomb"].messages


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _layers(text: str) -> dict[str, float]:
    return {sample.labels["layer"]: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "autograder_sandbox_layer"}


def test_metrics_export_each_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = cgroup.hierarchy()
    version = 0 if isinstance(found, str) else found.version
    database = open_database(tmp_path / "service.sqlite")
    try:
        here = exposition(database).decode()
        monkeypatch.setenv(cgroup.SWITCH, "off")
        off = exposition(database).decode()
    finally:
        database.close()
    expected = {"namespaces", "unprivileged_uid", "seccomp", "memory_cgroup", "rlimits"}
    assert set(_layers(here)) == set(_layers(off)) == expected
    assert _layers(here)["memory_cgroup"] == (1 if version else 0)
    assert f"autograder_sandbox_memory_cgroup_version {float(version)}" in here
    assert _layers(off)["memory_cgroup"] == 0 and _layers(off)["rlimits"] == 1
    assert "autograder_sandbox_memory_cgroup_version 0.0" in off


@pytest.mark.sandbox
def test_grade_on_a_host_without_cgroup_v1_says_the_layer_is_off_and_grades(tmp_path: Path) -> None:
    """A host whose v1 hierarchies are gone and whose v2 cgroup has no memory controller
    delegated: ``grade`` says so in its first line, then why, and grades with the other layers."""
    if os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory/cgroup.procs").exists():
        pytest.skip("needs root and a cgroup v1 memory hierarchy to take away")
    done = subprocess.run([*WITHOUT_V1, sys.executable, "-m", "autograder", "grade", "week01",
                           str(FIXTURES / HONEST[0]), "--out", str(tmp_path / "out"), "--json", "--jobs", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first = done.stderr.splitlines()[0]
    assert first.startswith("sandbox layers: ") and "memory cgroup off" in first and "namespaces on" in first
    assert "Delegate=yes" in done.stderr and "hugetlb" in done.stderr
    # graded (its score under load is the business of the budgets, tests/test_cli.py)
    assert json.loads(done.stdout)[0]["status"] == "graded"


@pytest.mark.sandbox
def test_serve_says_its_layers_at_start(tmp_path: Path) -> None:
    from tests.service.web import free_port, wait_for_server

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "autograder", "serve", "--course", str(ROOT), "--public-url",
                               "https://grader.example.edu", "--data", str(tmp_path / "data"), "--port", str(port)],
                              env={**os.environ, cgroup.SWITCH: "off"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        wait_for_server(f"http://127.0.0.1:{port}/lti/config", server)
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    first, why = err.splitlines()[:2]
    assert first.startswith("sandbox layers: namespaces on") and "memory cgroup off, rlimits on" in first, err
    assert why == "  memory cgroup off: turned off (AUTOGRADER_CGROUP=off); only rlimits and the scratch tmpfs size " \
        "bound memory"
