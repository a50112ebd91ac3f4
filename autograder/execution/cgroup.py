"""A memory (and pids) cgroup around one zygote and everything it starts: cgroup v1 or v2.

Rlimits count per process; a submission that forks many children, or fills the tmpfs
scratch (tmpfs pages are charged to the writer's memory cgroup), gets past them. A cgroup
counts the whole tree: the kernel OOM-kills inside it at its memory limit and refuses
``fork`` past ``pids.max``, and membership is inherited and cannot be left without write
access to another cgroup (the sandbox sees ``/sys`` read-only).

Which hierarchy is used is read from this process's ``/proc/self/cgroup`` and mount table
(``locate``, a pure function of the two texts):

- **cgroup v1** when the ``memory`` and ``pids`` controllers each have a v1 hierarchy (a
  hybrid host): the grader (root) makes a cgroup at the top of each.
- **cgroup v2** otherwise, when this process's own cgroup on the unified hierarchy is
  delegated to it (systemd's ``Delegate=yes``: it may write there, and ``memory`` is in its
  ``cgroup.controllers``). A cgroup with processes of its own cannot hand controllers to
  children (the "no internal processes" rule), so the first ``create`` moves every process
  of that cgroup into a leaf child, ``LEAF``, enables ``memory`` (and ``pids``) in its
  ``cgroup.subtree_control``, and makes each zygote's cgroup beside the leaf. Processes
  started later (grader processes) are born in the leaf, and ``locate`` finds the delegated
  cgroup again as the leaf's parent.
- Neither (no delegation, a v2 host where the grader is not the cgroup's owner): the layer
  is missing, said so by ``hierarchy``, and grading goes on with the other layers.
  ``AUTOGRADER_CGROUP=off`` turns the layer off on purpose (tests of the other layers, a host
  where another tool owns the cgroups).

The zygote's launcher joins its cgroup itself before exec (``join_argv``), so nothing the
zygote starts runs outside it. ``release`` kills whatever is left and removes it; cgroups
left by a grader that died are swept on the next ``create``.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.exceptions import SandboxError

CONTROLLERS = ("memory", "pids")
PREFIX = "autograder-"  # a zygote's cgroup: autograder-<grader pid>-<n>
LEAF = "autograder-graders"  # cgroup v2: where the delegated cgroup's own processes are moved
SWITCH = "AUTOGRADER_CGROUP"  # "off": run without the cgroup layer
_counter = itertools.count(1)


@dataclass(frozen=True)
class Hierarchy:
    """Where zygotes' cgroups are made: under each v1 controller's hierarchy, or in one
    delegated v2 cgroup."""

    version: int  # 1 or 2
    roots: tuple[Path, ...]  # v1: the memory and pids hierarchies' tops; v2: the delegated cgroup

    def describe(self) -> str:
        """The hierarchy in words, for the layer list."""
        return f"cgroup v{self.version}" + (f" (in {self.roots[0]})" if self.version == 2 else "")


@dataclass(frozen=True)
class Located:
    """What this process's ``/proc/self/cgroup`` and mount table say about its cgroups."""

    v1: dict[str, Path]  # controller -> top of its v1 hierarchy, for the controllers we use
    v2: Path | None  # this process's own cgroup on the unified hierarchy, where it can be seen


def _unescape(field: str) -> str:
    r"""A mountinfo path: spaces, tabs, newlines and backslashes come as ``\040``-style octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def locate(proc_cgroup: str, mountinfo: str) -> Located:
    """Read ``/proc/self/cgroup`` and ``/proc/self/mountinfo`` (their texts): where the v1
    ``memory`` and ``pids`` hierarchies are mounted, and the directory of this process's own
    v2 cgroup (the line ``0::/path``, under a ``cgroup2`` mount whose root contains it)."""
    own_v2: str | None = None
    for line in proc_cgroup.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            own_v2 = path
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if len(fields) < dash + 4 or dash < 5:
            continue
        root, mount_point = _unescape(fields[3]), Path(_unescape(fields[4]))
        fstype, options = fields[dash + 1], fields[dash + 3].split(",")
        if fstype == "cgroup":
            for controller in CONTROLLERS:
                if controller in options:
                    v1.setdefault(controller, mount_point)
        elif fstype == "cgroup2" and own_v2 is not None and v2 is None:
            prefix = root.rstrip("/") + "/"
            if own_v2 == root or own_v2.startswith(prefix):
                inside = own_v2[len(root):].strip("/")
                v2 = mount_point / inside if inside else mount_point
    return Located(v1, v2)


def choose(located: Located) -> Hierarchy | str:
    """The hierarchy to make cgroups in, or why there is none: v1 when both controllers have
    one, else this process's v2 cgroup (its parent when this process is in ``LEAF``)."""
    if all(c in located.v1 for c in CONTROLLERS):
        return Hierarchy(1, tuple(located.v1[c] for c in CONTROLLERS))
    if located.v2 is None:
        return ("cgroup memory/pids limits: neither cgroup v1 memory and pids hierarchies nor this process's "
                "cgroup v2 are mounted (only rlimits and the scratch tmpfs size bound memory)")
    base = located.v2.parent if located.v2.name == LEAF else located.v2
    return Hierarchy(2, (base,))


def _marked_delegated(folder: Path) -> bool:
    """systemd (251 and later) marks a unit's cgroup it delegated with a ``delegate`` xattr."""
    for name in ("trusted.delegate", "user.delegate"):
        with contextlib.suppress(OSError):
            if os.getxattr(folder, name) == b"1":
                return True
    return False


def check(found: Hierarchy, *, assume_delegated: bool = False) -> str | None:
    """Why cgroups cannot be made in ``found`` by this process, or None when they can.

    A systemd unit's cgroup (``*.service``, ``*.scope``) is used only when systemd
    delegated it (or ``assume_delegated``, for systemd before 251, which marks nothing):
    systemd rewrites the controllers of a cgroup it still manages, and the zygotes'
    memory limits would vanish with them. A cgroup no unit names (a container's own) is
    taken as its owner's to use."""
    if found.version == 1:
        if os.geteuid() != 0:
            return "cgroup memory/pids limits: the grader is not root, so it cannot create cgroup v1 cgroups"
        for base in found.roots:
            if not (base / "cgroup.procs").is_file() or not os.access(base, os.W_OK):
                return (f"cgroup memory/pids limits: the cgroup v1 hierarchy at {base} is not writable "
                        "(only rlimits and the scratch tmpfs size bound memory)")
        return None
    base = found.roots[0]
    try:
        controllers = (base / "cgroup.controllers").read_text().split()
    except OSError as exc:
        return f"cgroup memory/pids limits: cannot read {base / 'cgroup.controllers'} ({exc.strerror})"
    if "memory" not in controllers:
        return (f"cgroup memory/pids limits: the memory controller is not delegated to this process's cgroup v2 "
                f"{base} (it has: {' '.join(controllers) or 'none'}); run the service with systemd's Delegate=yes "
                "(docs/LMS.md). Only rlimits and the scratch tmpfs size bound memory")
    if base.name.endswith((".service", ".scope")) and not (assume_delegated or _marked_delegated(base)):
        return (f"cgroup memory/pids limits: systemd has not delegated {base.name} to this process: add "
                f"Delegate=yes to the unit (docs/LMS.md; systemd before 251 marks no delegation: then set "
                f"{SWITCH}=delegated). Only rlimits and the scratch tmpfs size bound memory")
    writable = [base, base / "cgroup.procs", base / "cgroup.subtree_control"]
    if not all(os.access(p, os.W_OK) for p in writable):
        return (f"cgroup memory/pids limits: this process may not write its cgroup v2 {base} (not delegated to "
                "its user: systemd's Delegate=yes, docs/LMS.md). Only rlimits and the scratch tmpfs size bound memory")
    return None


def hierarchy() -> Hierarchy | str:
    """This machine's hierarchy for zygotes' cgroups, or why the cgroup layer is missing."""
    switch = os.environ.get(SWITCH, "").strip().lower()
    if switch == "off":
        return (f"cgroup memory/pids limits: turned off ({SWITCH}=off); only rlimits and the scratch tmpfs size "
                "bound memory")
    if switch not in ("", "auto", "delegated"):
        raise SandboxError(f"{SWITCH} must be 'off' (no cgroup layer), 'delegated' (the service's systemd unit is "
                           f"delegated, by a systemd older than 251) or 'auto' (the default), not {switch!r}")
    try:
        located = locate(Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text())
    except OSError as exc:
        return f"cgroup memory/pids limits: cannot read this process's cgroups ({exc.strerror})"
    found = choose(located)
    if isinstance(found, str):
        return found
    return check(found, assume_delegated=switch == "delegated") or found


def unavailable_reason() -> str | None:
    """Why cgroups cannot be used here, or None when they can."""
    found = hierarchy()
    return found if isinstance(found, str) else None


@dataclass(frozen=True)
class Cgroup:
    """One zygote's cgroup: one directory per v1 controller, or one v2 directory."""

    paths: tuple[Path, ...]
    version: int = 1

    @property
    def name(self) -> str:
        """The cgroup's folder name (the same under every controller)."""
        return self.paths[0].name

    def join_argv(self) -> list[str]:
        """A launcher prefix: the shell writes its own pid into every ``cgroup.procs``,
        then execs the rest of the command line inside the cgroups."""
        script = 'for f in "$@"; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 111; done; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *(str(p / "cgroup.procs") for p in self.paths), "--"]

    def pids(self) -> set[int]:
        """Every process still in the cgroups."""
        found: set[int] = set()
        for path in self.paths:
            with contextlib.suppress(OSError):
                found.update(int(line) for line in (path / "cgroup.procs").read_text().split())
        return found

    def oom_kills(self) -> int:
        """How many processes the kernel killed at the memory limit (0 when unknown)."""
        counters = "memory.oom_control" if self.version == 1 else "memory.events"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.paths[0] / counters).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    def release(self, timeout: float = 2.0) -> bool:
        """Kill what is left, then remove the cgroups; True when they are gone."""
        deadline = time.monotonic() + timeout
        while True:
            if self.version == 2:  # every process at once, forks racing the kill included (Linux 5.14)
                with contextlib.suppress(OSError):
                    (self.paths[0] / "cgroup.kill").write_text("1")
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            for path in self.paths:
                with contextlib.suppress(FileNotFoundError, OSError):
                    path.rmdir()
            if not any(p.exists() for p in self.paths) or time.monotonic() > deadline:
                return not any(p.exists() for p in self.paths)
            time.sleep(0.01)


def sweep(found: Hierarchy) -> None:
    """Remove cgroups left by graders that are no longer running."""
    for root in found.roots:
        with contextlib.suppress(OSError):
            for path in root.glob(PREFIX + "*"):
                owner = path.name[len(PREFIX):].split("-")[0]
                if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                    Cgroup((path,), found.version).release(timeout=0.2)


def delegate(base: Path, controllers: tuple[str, ...]) -> None:
    """Make ``controllers`` available to children of the v2 cgroup ``base``. A cgroup with
    processes of its own cannot hand controllers on (``EBUSY``; the root cgroup can): then
    every process of ``base`` moves into ``base/LEAF`` first. Safe to call again, and from
    several grader processes at once."""
    wanted = set(controllers)
    for _attempt in range(20):
        if wanted <= set((base / "cgroup.subtree_control").read_text().split()):
            return
        try:
            (base / "cgroup.subtree_control").write_text(" ".join("+" + c for c in controllers))
            continue
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
        leaf = base / LEAF
        leaf.mkdir(exist_ok=True)
        for pid in (base / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                (leaf / "cgroup.procs").write_text(pid)
    raise OSError(errno.EBUSY, f"processes keep appearing in {base}; cannot enable {' '.join(controllers)} there")


def create(*, memory_bytes: int, pids_max: int, owner_uid: int | None,
           found: Hierarchy | None = None) -> Cgroup:
    """Make the cgroup of one zygote in ``found`` (default: this machine's ``hierarchy()``).

    ``owner_uid`` may then join it (v1 only: in v2 moving a process needs write access to
    the delegated cgroup itself, which no sandbox user must have, so the grader's own user
    joins before dropping privileges)."""
    if found is None:
        chosen = hierarchy()
        if isinstance(chosen, str):
            raise SandboxError(chosen)
        found = chosen
    sweep(found)
    name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
    if found.version == 2:
        return _create_v2(found.roots[0] / name, memory_bytes=memory_bytes, pids_max=pids_max, owner_uid=owner_uid)
    made: list[Path] = []
    try:
        for root in found.roots:
            path = root / name
            path.mkdir()
            made.append(path)
            if owner_uid is not None:
                os.chown(path / "cgroup.procs", owner_uid, -1)
        memory, pids = made
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (pids / "pids.max").write_text(str(pids_max))
    except OSError:
        Cgroup(tuple(made)).release(timeout=0.2)
        raise
    return Cgroup(tuple(made))


def _create_v2(path: Path, *, memory_bytes: int, pids_max: int, owner_uid: int | None) -> Cgroup:
    if owner_uid is not None and owner_uid != os.geteuid():
        raise SandboxError("cgroup v2: a process of another user may not move itself into the zygote's cgroup "
                           "(it would need write access to the delegated cgroup); join as the grader's own user")
    base = path.parent
    available = (base / "cgroup.controllers").read_text().split()
    delegate(base, tuple(c for c in CONTROLLERS if c in available))
    path.mkdir()
    made = Cgroup((path,), version=2)
    try:
        (path / "memory.max").write_text(str(memory_bytes))
        if (path / "memory.swap.max").exists():  # absent without swap accounting
            (path / "memory.swap.max").write_text("0")
        if (path / "pids.max").exists():
            (path / "pids.max").write_text(str(pids_max))
    except OSError:
        made.release(timeout=0.2)
        raise
    return made
