"""How a zygote is started: which isolation layers this machine offers, and the command.

Layers, strongest first: bubblewrap (own PID, mount, network, IPC, UTS namespaces; a
read-only view of only the interpreter, the virtualenv and the ``autograder`` package;
a private tmpfs), an unprivileged uid (when the grader runs as root), and rlimits set in
each worker (always). Missing layers are reported once, loudly; the grader never
silently runs student code with less than it says.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import autograder

UNPRIVILEGED_USER = "nobody"
PASSTHROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG")


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission; each is enforced as noted."""

    memory_mb: int = 2048  # RLIMIT_AS in the worker
    cpu_s: int = 300  # RLIMIT_CPU in the worker (the wall deadlines below are stricter)
    nproc: int = 512  # RLIMIT_NPROC (counts per uid: bounds fork bombs)
    nofile: int = 256  # RLIMIT_NOFILE
    fsize_mb: int = 64  # RLIMIT_FSIZE: no file larger than this in scratch
    cell_timeout_s: float = 30.0  # wall time per notebook cell, enforced by the grader
    call_timeout_s: float = 10.0  # wall time per call from a hidden test
    submission_timeout_s: float = 120.0  # wall time for running the whole notebook
    tests_timeout_s: float = 120.0  # wall time for all hidden-test calls into one submission
    restarts: int = 3  # fresh workers a submission may use after a crash or a timeout
    output_bytes: int = 1 << 20  # student stdout/stderr kept; the rest is drained and dropped

    def for_worker(self) -> dict[str, int]:
        return {"memory_mb": self.memory_mb, "cpu_s": self.cpu_s, "nproc": self.nproc,
                "nofile": self.nofile, "fsize_mb": self.fsize_mb}


@dataclass(frozen=True)
class SandboxPlan:
    """The command that starts one zygote, and the layers it has."""

    argv: list[str]
    env: dict[str, str]
    user: int | None  # setuid to this uid before exec (grader running as root)
    group: int | None
    cwd: str
    layers: tuple[str, ...]
    missing: tuple[str, ...] = field(default=())


def _package_parent() -> Path:
    return Path(autograder.__file__).resolve().parent.parent


def _worker_env(home: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{home}/.mpl",
        "IPYTHONDIR": f"{home}/.ipython",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LC_ALL": "C.UTF-8",
    }
    env.update({k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ})
    return env


def _boot(ctrl_fd: int) -> list[str]:
    code = (
        f"import sys; sys.path.insert(0, {str(_package_parent())!r}); "
        f"from autograder.worker.zygote import main; main({ctrl_fd})"
    )
    return [sys.executable, "-I", "-c", code]


def _readonly_paths() -> list[str]:
    """What the worker may read: the interpreter, the virtualenv, the package. Nothing else
    of the grader's (not the course's source/ or solutions/, not results)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"],
             str(Path(autograder.__file__).resolve().parent)}
    return sorted(p for p in paths if p and not p.startswith("/usr/") and p != "/usr")


def plan(ctrl_fd: int, *, require_isolation: bool = False) -> SandboxPlan:
    """Build the zygote's start command from the layers this machine has."""
    bwrap = shutil.which("bwrap")
    is_root = os.geteuid() == 0
    user = group = None
    layers: list[str] = ["rlimits"]
    missing: list[str] = []
    if is_root:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        user, group = entry.pw_uid, entry.pw_gid
        layers.append(f"unprivileged uid ({UNPRIVILEGED_USER})")
    if bwrap:
        home = "/tmp"
        argv = [
            bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
            "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--ro-bind-try", "/etc/fonts", "/etc/fonts",
            "--ro-bind-try", "/etc/localtime", "/etc/localtime",
            "--ro-bind", "/sys", "/sys",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm",
        ]
        for path in _readonly_paths():
            argv += ["--ro-bind", path, path]
        argv += ["--chdir", "/tmp", "--clearenv"]
        for key, value in _worker_env(home).items():
            argv += ["--setenv", key, value]
        argv += _boot(ctrl_fd)
        layers += ["bubblewrap: PID/mount/network/IPC namespaces", "read-only filesystem view", "private /tmp"]
        return SandboxPlan(argv, {}, user, group, "/", tuple(layers), tuple(missing))
    missing.append("bubblewrap (apt-get install bubblewrap): no namespaces, the worker sees the whole "
                   "file system and the network")
    if require_isolation:
        from autograder.exceptions import SandboxError

        raise SandboxError("isolation required but " + missing[0])
    home = _fallback_home(user)
    return SandboxPlan(_boot(ctrl_fd), _worker_env(home), user, group, home, tuple(layers), tuple(missing))


def _fallback_home(user: int | None) -> str:
    import tempfile

    home = tempfile.mkdtemp(prefix="autograder-zygote-")
    if user is not None:
        os.chown(home, user, -1)
    return home
