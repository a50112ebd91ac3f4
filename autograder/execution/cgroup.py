"""A cgroup (v1 ``memory`` + ``pids``) around one zygote and everything it starts.

Rlimits count per process; a submission that forks many children, or fills the tmpfs
scratch (tmpfs pages are charged to the writer's memory cgroup), gets past them. A cgroup
counts the whole tree: the kernel OOM-kills inside it at ``memory.limit_in_bytes`` and
refuses ``fork`` past ``pids.max``, and membership is inherited and cannot be left
without write access to another cgroup (the sandbox sees ``/sys`` read-only).

The grader (root) creates the cgroups and hands ``cgroup.procs`` to the sandbox's uid;
the zygote's launcher joins them itself before exec (``join_argv``), so nothing the
zygote starts runs outside them. ``release`` kills whatever is left and removes them;
cgroups left by a grader that died are swept on the next ``create``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")
PREFIX = "autograder-"
_counter = itertools.count(1)


@dataclass(frozen=True)
class Cgroup:
    """One zygote's cgroups, one directory per controller."""

    paths: tuple[Path, ...]

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
        with contextlib.suppress(OSError, ValueError):
            for line in (self.paths[0] / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    def release(self, timeout: float = 2.0) -> bool:
        """Kill what is left, then remove the cgroups; True when they are gone."""
        deadline = time.monotonic() + timeout
        while True:
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            for path in self.paths:
                with contextlib.suppress(FileNotFoundError, OSError):
                    path.rmdir()
            if not any(p.exists() for p in self.paths) or time.monotonic() > deadline:
                return not any(p.exists() for p in self.paths)
            time.sleep(0.01)


def unavailable_reason() -> str | None:
    """Why cgroups cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "cgroup memory/pids limits: the grader is not root, so it cannot create cgroups"
    for controller in CONTROLLERS:
        base = ROOT / controller
        if not (base / "cgroup.procs").is_file() or not os.access(base, os.W_OK):
            return (f"cgroup memory/pids limits: no writable cgroup v1 {controller} hierarchy at {base} "
                    "(only rlimits bound memory and processes)")
    return None


def sweep() -> None:
    """Remove cgroups left by graders that are no longer running."""
    for controller in CONTROLLERS:
        with contextlib.suppress(OSError):
            for path in (ROOT / controller).glob(PREFIX + "*"):
                owner = path.name[len(PREFIX):].split("-")[0]
                if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                    Cgroup((path,)).release(timeout=0.2)


def create(*, memory_bytes: int, pids_max: int, owner_uid: int | None) -> Cgroup:
    """Make the cgroups of one zygote; ``owner_uid`` may then join them."""
    sweep()
    name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
    made: list[Path] = []
    try:
        for controller in CONTROLLERS:
            path = ROOT / controller / name
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
