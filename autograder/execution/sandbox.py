"""How a zygote is started: which isolation layers this machine offers, and the command.

Layers, strongest first: bubblewrap (own user, PID, mount, network, IPC, UTS namespaces,
no nested user namespaces; a read-only view of only the interpreter, the virtualenv and
the ``autograder`` package; a private, size-capped tmpfs), a cgroup with memory and pids
limits around the whole zygote (cgroup v1 when the grader is root, cgroup v2 where its
cgroup is delegated to it: ``cgroup.py``), an
unprivileged uid (when the grader runs as root), a seccomp filter installed by the zygote,
and rlimits set in each worker (always). ``SandboxPlan.missing`` lists, in words for the
instructor, every layer this machine lacks; the grader prints it once at start and never
silently runs student code with less than it says. docs/SECURITY.md has the threat model.
"""

from __future__ import annotations

import functools
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import autograder
from autograder.exceptions import SandboxError
from autograder.execution import cgroup, launch
from autograder.execution.cgroup import Cgroup
from autograder.worker import seccomp

UNPRIVILEGED_USER = "nobody"
Helpers = tuple[tuple[str, Path], ...]  # a week's helper modules: (path relative to the week's folder, the file)
PASSTHROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG")


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission; each is enforced as noted."""

    memory_mb: int = 2048  # RLIMIT_AS in the worker
    cpu_s: int = 300  # RLIMIT_CPU in the worker (the CPU budgets below are stricter)
    nproc: int = 512  # RLIMIT_NPROC (counts per uid: bounds fork bombs)
    nofile: int = 256  # RLIMIT_NOFILE
    fsize_mb: int = 64  # RLIMIT_FSIZE: no file larger than this in scratch
    # CPU seconds of the worker, enforced by the grader (execution/budget.py): the same
    # notebook gets the same limits on an idle machine and on a loaded one
    cell_timeout_s: float = 30.0  # CPU time per notebook cell
    call_timeout_s: float = 10.0  # CPU time per call from a hidden test
    submission_timeout_s: float = 120.0  # CPU time for running the whole notebook
    tests_timeout_s: float = 120.0  # CPU time for all hidden-test calls into one submission
    # each budget above also ends after this many times its seconds of wall-clock time: a
    # backstop for code that waits instead of computing (a sleep, a blocking read)
    wall_backstop: float = 4.0
    restarts: int = 3  # fresh workers a submission may use after a crash or a timeout
    scratch_mb: int = 512  # size of each worker's fresh tmpfs /tmp (and of /dev/shm)
    zygote_mb: int = 768  # the zygote's own memory, added to memory_mb for the cgroup limit
    # The grader's own work for one hidden test (enforced from outside the grader process,
    # see autograder.grading.pool): CPU seconds, and wall seconds on top of what the
    # test's calls into the worker may still take; and the bytes of worker replies one test
    # accepts in all (many small replies, each under the frame cap, add up in the grader).
    grader_test_cpu_s: float = 60.0
    grader_test_wall_s: float = 60.0
    test_replies_mb: int = 8  # honest answers: at most 70 kB a test (measured on all six weeks)

    def for_worker(self) -> dict[str, int]:
        """The limits the zygote applies to each worker it forks, as the fork request carries them."""
        return {"memory_mb": self.memory_mb, "cpu_s": self.cpu_s, "nproc": self.nproc,
                "nofile": self.nofile, "fsize_mb": self.fsize_mb, "scratch_mb": self.scratch_mb}


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
    cgroup: Cgroup | None = None  # the zygote's memory + pids cgroup, when there is one

    def release(self) -> None:
        """Kill whatever is left of the zygote's tree and remove its cgroup. Call once the
        zygote has been closed; safe to call twice."""
        if self.cgroup is not None:
            self.cgroup.release()


PACKAGE_MOUNT = "/opt/autograder"  # the package's parent inside the sandbox: nothing else is in it
DATA_MOUNT = "/opt/course-data"  # a week's data folder, read-only; each worker sees it as ./data
HELPERS_MOUNT = "/opt/course-helpers"  # a week's helper modules, read-only, each at its path in the week's folder


def _package_dir() -> Path:
    return Path(autograder.__file__).resolve().parent


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


def _boot(ctrl_fd: int, package_parent: str, *, fresh_namespaces: bool, use_seccomp: bool,
          data: str | None, helpers: list[list[str]], preload: tuple[str, ...]) -> list[str]:
    code = (
        f"import sys; sys.path.insert(0, {package_parent!r}); "
        f"from autograder.worker.zygote import main; "
        f"main({ctrl_fd}, fresh_namespaces={fresh_namespaces}, seccomp={use_seccomp}, data={data!r}, "
        f"helpers={helpers!r}, preload_modules={list(preload)!r})"
    )
    return [sys.executable, "-I", "-c", code]


def _interpreter_paths() -> list[str]:
    """What the worker needs of the interpreter outside ``/usr``: the virtualenv and, for a
    Python installed elsewhere (pyenv, conda), its prefix. Bound at their own paths (the
    interpreter finds its libraries there), with parents the sandbox creates."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"]}
    found = sorted(p for p in paths if p and not p.startswith("/usr/") and p != "/usr")
    return [p for p in found if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in found)]


def _readable_by_others(path: str) -> bool:
    """Whether a user with no special rights can reach and read ``path``."""
    target = Path(path)
    for folder in [*reversed(target.parents), target]:
        try:
            mode = folder.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH or (folder == target and not mode & stat.S_IROTH):
            return False
    return True


def plan(ctrl_fd: int, *, require_isolation: bool = False, limits: Limits | None = None,
         data: Path | None = None, helpers: Helpers = (), preload: tuple[str, ...] = (),
         package: Path | None = None) -> SandboxPlan:
    """Build the zygote's start command from the layers this machine has.

    ``data`` is a week's data folder, bound read-only (each worker sees it as ``./data``);
    ``helpers`` the week's helper modules, each a path relative to the week's folder and the
    file, bound read-only one by one (each worker sees it at that path in its own folder,
    which is first on its ``sys.path``); ``preload`` the modules the zygote imports before
    its first fork (the course's ``[grading] preload``);
    ``package`` the ``autograder`` package to bind (default: this one). ``missing`` says
    which layers are absent and what that exposes; with ``require_isolation`` a machine
    without bubblewrap is refused outright.
    """
    limits = limits or Limits()
    package = (package or _package_dir()).resolve()
    bwrap = shutil.which("bwrap")
    user = group = None
    layers: list[str] = ["rlimits (address space, CPU, processes, open files, file size)"]
    missing: list[str] = []
    if os.geteuid() == 0:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        user, group = entry.pw_uid, entry.pw_gid
        layers.append(f"unprivileged uid ({UNPRIVILEGED_USER})")
    elif not bwrap:
        missing.append("unprivileged uid: the grader is not root, so the worker runs as the grader's own user")
    seccomp_missing = seccomp.available()
    if seccomp_missing is None:
        layers.append("seccomp filter (no ptrace, no namespaces or mounts, AF_UNIX sockets only, zygote protected)")
    else:
        missing.append(f"seccomp filter: {seccomp_missing}")
    if not bwrap:
        return _plan_without_bwrap(ctrl_fd, limits, package, data, helpers, preload, user, group, layers, missing,
                                   require_isolation=require_isolation, use_seccomp=seccomp_missing is None)
    # the launcher joins the cgroup as the grader's user, before it drops to nobody
    group_of_zygote, prefix = _cgroup(limits, None, layers, missing)
    binds = [(p, p) for p in _interpreter_paths()] + [(str(package), f"{PACKAGE_MOUNT}/autograder")]
    if data is not None and data.is_dir():
        binds.append((str(data.resolve()), DATA_MOUNT))
    binds += [(str(path.resolve()), f"{HELPERS_MOUNT}/{relative}") for relative, path in helpers]
    home = "/tmp"
    size = str(limits.scratch_mb << 20)
    argv = [
        bwrap, "--unshare-all", *_no_nested_userns(bwrap), "--die-with-parent", "--new-session", "--as-pid-1",
        # inside its own user namespace only: the zygote mounts a fresh /tmp, /dev/shm and IPC
        # namespace for every worker, which drops the capability before any student code runs
        "--cap-add", "CAP_SYS_ADMIN",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
        "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--ro-bind-try", "/etc/fonts", "/etc/fonts",
        "--ro-bind-try", "/etc/localtime", "/etc/localtime",
        "--ro-bind", "/sys", "/sys",
        "--proc", "/proc", "--dev", "/dev",
        "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm",
    ]
    staged: list[tuple[str, str]] = []
    if user is not None:
        root = launch.staging_root()
        staged = [(source, f"{root}/{index}") for index, (source, _) in enumerate(binds)]
        binds = [(stage, dest) for (_, stage), (_, dest) in zip(staged, binds)]
    for source, dest in binds:
        argv += ["--ro-bind", source, dest]
    # nothing but the scratch tmpfs stays writable: not /, /etc or /dev (bubblewrap's own
    # tmpfs, where a submission could leave notes or modules for the next one)
    argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    for key, value in _worker_env(home).items():
        argv += ["--setenv", key, value]
    argv += _boot(ctrl_fd, PACKAGE_MOUNT, fresh_namespaces=True, use_seccomp=seccomp_missing is None,
                  data=DATA_MOUNT if data is not None and data.is_dir() else None,
                  helpers=[[relative, f"{HELPERS_MOUNT}/{relative}"] for relative, _ in helpers], preload=preload)
    if user is not None:
        spec = {"root": launch.STAGING, "binds": staged, "uid": user, "gid": group, "argv": argv}
        argv = [sys.executable, "-I", launch.__file__, json.dumps(spec)]
    if not _no_nested_userns(bwrap):
        missing.append("bubblewrap older than 0.8: the sandbox may create nested user namespaces")
    layers += ["bubblewrap: user/PID/mount/network/IPC/UTS namespaces",
               "read-only filesystem view (interpreter, virtualenv, autograder package, the week's data and "
               "helper modules only), "
               "bound whatever the permissions of the folders above the course",
               f"a fresh /tmp and /dev/shm (tmpfs, {limits.scratch_mb} MB each) and IPC namespace for every "
               "worker, gone with it; everything else read-only",
               "environment cleared"]
    return SandboxPlan(prefix + argv, {}, None, None, "/", tuple(layers), tuple(missing), group_of_zygote)


def _plan_without_bwrap(ctrl_fd: int, limits: Limits, package: Path, data: Path | None, helpers: Helpers,
                        preload: tuple[str, ...], user: int | None, group: int | None, layers: list[str],
                        missing: list[str], *, require_isolation: bool, use_seccomp: bool) -> SandboxPlan:
    """No namespaces: the worker sees the whole file system, as ``nobody`` when we are root."""
    from autograder.exceptions import SandboxError

    missing.append("bubblewrap (apt-get install bubblewrap): no namespaces, the worker sees the whole "
                   "file system and the network")
    if require_isolation:
        raise SandboxError("isolation required but " + missing[-1])
    hidden = [p for p in [*_interpreter_paths(), str(package)] if not _readable_by_others(p)]
    if user is not None and hidden:
        layers.remove(f"unprivileged uid ({UNPRIVILEGED_USER})")
        user = group = None
        missing.append(f"unprivileged uid: {hidden[0]} is not readable by {UNPRIVILEGED_USER} (a folder above it "
                       "lacks o+rx) and bubblewrap, which binds it whatever the folders' permissions, is missing, "
                       "so the worker runs as root: apt-get install bubblewrap")
    group_of_zygote, prefix = _cgroup(limits, user, layers, missing)
    home = _fallback_home(user)
    argv = prefix + _boot(ctrl_fd, str(package.parent), fresh_namespaces=False, use_seccomp=use_seccomp,
                          data=str(data.resolve()) if data is not None and data.is_dir() else None,
                          helpers=[[relative, str(path.resolve())] for relative, path in helpers], preload=preload)
    return SandboxPlan(argv, _worker_env(home), user, group, home, tuple(layers), tuple(missing), group_of_zygote)


@functools.cache
def _no_nested_userns(bwrap: str) -> tuple[str, ...]:
    """bubblewrap's options that forbid user namespaces inside the sandbox (0.8 and later)."""
    try:
        usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return ("--unshare-user", "--disable-userns") if "--disable-userns" in usage else ()


def _cgroup(limits: Limits, user: int | None, layers: list[str], missing: list[str]) -> tuple[Cgroup | None, list[str]]:
    """The zygote's cgroup and the launcher prefix that joins it (as ``user``: None for the
    grader's own), when cgroups work here."""
    reason = cgroup.unavailable_reason()
    if reason is None:
        memory = (limits.memory_mb + limits.zygote_mb) << 20
        try:
            made = cgroup.create(memory_bytes=memory, pids_max=limits.nproc, owner_uid=user)
        except (OSError, SandboxError) as exc:
            reason = f"cgroup memory/pids limits: could not create the cgroup ({exc})"
        else:
            processes = f" and {limits.nproc} processes" if any((p / "pids.max").exists() for p in made.paths) else ""
            layers.append(f"cgroup v{made.version}: memory {memory >> 20} MB{processes} for the zygote's "
                          "whole tree; leftovers killed on close")
            return made, made.join_argv()
    missing.append(reason)
    return None, []


@dataclass(frozen=True)
class LayerState:
    """One sandbox layer on this machine: on or off, and how (a cgroup's version, why it is off)."""

    name: str
    on: bool
    how: str = ""

    def __str__(self) -> str:
        return f"{self.name} {self.how} on" if self.on and self.how else f"{self.name} {'on' if self.on else 'off'}"


def layer_states() -> tuple[LayerState, ...]:
    """The layers a zygote started now would have, found without starting one: what
    ``grade`` and ``serve`` say at start and ``/metrics`` exports, so an operator sees a
    missing layer (a cgroup v2 host without delegation) before any submission runs."""
    bwrap, root = shutil.which("bwrap") is not None, os.geteuid() == 0
    seccomp_missing = seccomp.available()
    found = cgroup.hierarchy()
    memory = found.removeprefix("cgroup memory/pids limits: ") if isinstance(found, str) else f"v{found.version}"
    return (
        LayerState("namespaces", bwrap, "" if bwrap else "bubblewrap is not installed (apt-get install bubblewrap)"),
        LayerState("unprivileged uid", root, "" if root else "the grader is not root: workers run as its user"),
        LayerState("seccomp", seccomp_missing is None, seccomp_missing or ""),
        LayerState("memory cgroup", not isinstance(found, str), memory),
        LayerState("rlimits", True),
    )


def describe_layers(states: tuple[LayerState, ...]) -> str:
    """One line naming every layer on or off, then a line saying why for each one off."""
    why = [f"  {state.name} off: {state.how}" for state in states if not state.on and state.how]
    return "\n".join(["sandbox layers: " + ", ".join(str(state) for state in states), *why])


def _fallback_home(user: int | None) -> str:
    import tempfile

    home = tempfile.mkdtemp(prefix="autograder-zygote-")
    if user is not None:
        os.chown(home, user, -1)
    return home
