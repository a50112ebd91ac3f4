"""The warm zygote: imports the heavy libraries once, forks one worker per submission.

Runs inside the sandbox (see ``autograder.execution.sandbox``). The grader talks to it
over a Unix socket: ``fork`` (with three pipe ends passed as SCM_RIGHTS: requests in,
replies out, student output out) and ``kill``. After each worker ends, the zygote kills
everything the submission left behind and wipes the scratch folder before it reports
``exited``, so the next submission starts from exactly the zygote's state.

A worker is forked ahead: as soon as the last submission's traces are gone, the zygote
forks the next worker, which enters its namespaces, drops its privileges and loads its
filter while the grader is still judging, then waits, running nothing of anyone's, for
the pipes of the submission it will serve. A ``fork`` hands them over; only when the
limits asked for need another scratch size (or the spare has died) is a worker forked on
the spot, the same way.

The zygote never runs student code itself. Its workers run as the same uid, so it guards
itself: it is non-dumpable (no ptrace, no /proc/1/mem), ignores the signals Python would
turn into exceptions, and installs the seccomp filter (``autograder.worker.seccomp``) that
forbids its workers to signal, trace or re-limit it. Each worker closes every inherited
descriptor but its pipes and volunteers as the first victim of the cgroup's OOM killer.

Under bubblewrap everything is read-only but ``/tmp`` and ``/dev/shm``, and every worker
gets its own: it is forked into a PID namespace of its own (as its pid 1), enters a new
mount, IPC and cgroup namespace, mounts a fresh size-capped tmpfs on both, and only then
drops the one capability the zygote holds for this (``CAP_SYS_ADMIN``, in the sandbox's
own user namespace) and installs the seccomp filter that forbids mounts and namespaces.
Whatever a submission writes (files at any depth, POSIX IPC objects, the memory they hold;
SysV IPC and memfd the filter refuses, since their memory counts against no rlimit) dies
with its namespaces when its last process is killed: the next submission
starts from the zygote's state, with nothing to restore and no walk of what the last one
left.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import platform
import resource
import shutil
import signal
import socket
import sys
from typing import Any

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPABILITY_VERSION_3 = 0x20080522
CAP_SYS_ADMIN = 21
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWCGROUP = 0x00020000, 0x08000000, 0x20000000, 0x02000000
SIGCHLD = 17  # the signal a clone'd child sends its parent when it ends (every Linux architecture)
# clone(2)'s number where its first argument is the flags (s390x's is the stack): the machines seccomp covers,
# and others whose kernels take it the same way
CLONE_SYSCALL = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120, "armv7l": 120}
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
CGROUPS = "/sys/fs/cgroup"
SCRATCH = "scratch"
DEFAULT_SCRATCH_MB = 512
FRESH_MOUNTS = ("/tmp", "/dev/shm")  # the only writable places; every worker gets its own
IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def preload(modules: list[str]) -> Any:
    """Import what submissions use (``modules``: the course's ``[grading] preload``, which
    the launcher passes) and do their first-use work once (``warmup``), so a fork pays
    nothing for either."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SystemExit(f"course.toml [grading] preload names {module!r}, which does not import in the "
                             f"grading environment ({exc}): pin its library in the course's requirements "
                             "file and run make setup, or remove it from preload") from None

    from autograder.worker.core import make_shell
    from autograder.worker.heap import fill_free_chunks, into_huge_pages
    from autograder.worker.warmup import warm_up

    shell = make_shell()
    warm_up(shell)
    # Park everything imported so far outside the collector: a worker's garbage
    # collections then never walk (and so copy-on-write) the zygote's pages.
    gc.collect()
    gc.freeze()
    fill_free_chunks()
    into_huge_pages()
    return shell


def _non_dumpable() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except OSError:
        return False


def _apply_limits(limits: dict[str, int]) -> None:
    mb = 1 << 20
    table = {
        resource.RLIMIT_AS: limits.get("memory_mb", 0) * mb,
        resource.RLIMIT_CPU: limits.get("cpu_s", 0),
        resource.RLIMIT_NPROC: limits.get("nproc", 0),
        resource.RLIMIT_NOFILE: limits.get("nofile", 0),
        resource.RLIMIT_FSIZE: limits.get("fsize_mb", 0) * mb,
        resource.RLIMIT_CORE: 0,
    }
    for which, value in table.items():
        if value or which == resource.RLIMIT_CORE:
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                pass  # a limit above the hard limit: keep the stricter existing one


def _close_inherited(keep: set[int]) -> None:
    """Close every descriptor but stdio and ``keep``: the zygote's control socket, its
    wake-up pipe and whatever the imports opened are none of the submission's business."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _first_to_go() -> None:
    """Make this worker (and all it starts) the OOM killer's choice in the cgroup, rather
    than the zygote: raising one's own score needs no privilege, lowering it does. A
    non-dumpable process's /proc files belong to root, so the worker is dumpable for the
    moment of the write, before any student code runs."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        finally:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError:
        pass


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def has_mount_capability() -> bool:
    """Whether this process may make namespaces and mounts (``CAP_SYS_ADMIN`` in effect)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    return False


def mounts_below_scratch() -> list[str]:
    """Read-only binds that sit inside ``/tmp`` (a course cloned under /tmp binds its
    virtualenv there): a worker's fresh tmpfs would hide them, so it binds them again."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            target = line.split()[4]
            if any(target.startswith(place + "/") for place in FRESH_MOUNTS):
                found.append(target)
    return found


def _fresh_namespaces(size_mb: int, keep: list[str]) -> None:
    """A mount and IPC namespace of this worker's own, with an empty tmpfs on every
    writable place: the next worker never sees what this one leaves. ``keep``: binds
    below those places, put back (read-only, as they were) on the fresh tmpfs."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWCGROUP), "unshare")
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    # this worker is pid 1 of a PID namespace of its own (``_fork``): a /proc of that
    # namespace shows it alone (no zygote, no pid counter of the sandbox), and an empty
    # read-only tmpfs over the cgroups hides every cgroup's counters and names
    _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")
    if os.path.isdir(CGROUPS):
        _check(libc.mount(b"tmpfs", CGROUPS.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          b"size=4k,mode=0555"), f"mount {CGROUPS}")
    kept = [(path, os.open(path, os.O_PATH)) for path in keep]  # this namespace's copies
    for index, target in enumerate(FRESH_MOUNTS):
        options = f"size={size_mb << 20},mode={'0700' if index == 0 else '1777'}".encode()
        _check(libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"mount {target}")
    for path, fd in kept:
        os.makedirs(path, exist_ok=True)
        _check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None),
               f"bind {path}")
        os.close(fd)


def _fork(*, new_pid_namespace: bool) -> int:
    """``os.fork()``; with ``new_pid_namespace``, a fork straight into a PID namespace of the
    child's own, as its pid 1 (``clone`` with ``CLONE_NEWPID``): its pid (and every pid and
    thread id it sees) is the same whatever ran before, and no worker can move the counter
    the next one starts from.

    Python 3.11 has no ``os.clone``, so this is ``os.fork`` spelled out: the interpreter's
    own before- and after-fork steps (``PyOS_BeforeFork``, ``PyOS_AfterFork_Child``/``_Parent``:
    the import lock, the GIL and thread states, ``os.register_at_fork`` hooks) around the
    system call, made with the GIL held, as ``os.fork`` makes it. What the C library's
    ``fork`` does besides (its ``pthread_atfork`` handlers, resetting locks other threads
    might hold) has nothing to do here: the zygote has one thread. (``unshare(CLONE_NEWPID)``
    in the zygote is no alternative: it applies to all its later children, and only once.)
    """
    if not new_pid_namespace:
        return os.fork()
    api = ctypes.pythonapi
    libc = ctypes.PyDLL(None, use_errno=True)  # a PyDLL keeps the GIL through the call
    libc.syscall.restype = ctypes.c_long
    api.PyOS_BeforeFork()
    pid = libc.syscall(ctypes.c_long(CLONE_SYSCALL[platform.machine()]), ctypes.c_ulong(CLONE_NEWPID | SIGCHLD),
                       *(ctypes.c_ulong(0),) * 4)
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    errno = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(errno, f"clone(CLONE_NEWPID): {os.strerror(errno)}")
    return int(pid)


def _drop_capabilities() -> None:
    """Give up every capability (the zygote's ``CAP_SYS_ADMIN`` is inherited), for good:
    no ambient set, and no gain through exec (``NO_NEW_PRIVS``)."""
    libc = _libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    _check(libc.capset(ctypes.byref(_CapHeader(CAPABILITY_VERSION_3, 0)), (_CapData * 2)()), "capset")


def _child(shell: Any, pipes: socket.socket, scratch_mb: int, scratch: str, *, fresh_namespaces: bool,
           keep: list[str], seccomp_filter: bytes | None, data: str | None, helpers: list[list[str]]) -> None:
    """In the forked worker: enter fresh namespaces and scratch and drop every privilege,
    then wait on ``pipes`` for the submission's pipe ends and limits (a spare waits here
    while the grader judges the last submission; nothing of anyone's runs before they come),
    wire them, limit, serve. Never returns."""
    code = 70
    try:
        from autograder.worker.core import WorkerCore
        from autograder.worker.serve import serve

        os.setsid()
        for signum in IGNORED_SIGNALS:
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        _first_to_go()
        if fresh_namespaces:
            _fresh_namespaces(scratch_mb, keep)
            _drop_capabilities()
        if seccomp_filter is not None:
            from autograder.worker.seccomp import load

            load(seccomp_filter)
        os.makedirs(scratch, exist_ok=True)
        if data is not None:
            os.symlink(data, os.path.join(scratch, "data"))
        for relative, path in helpers:  # the week's helper modules, where they sit beside its notebook
            place = os.path.join(scratch, relative)
            os.makedirs(os.path.dirname(place), exist_ok=True)
            os.symlink(path, place)
        if helpers:
            sys.path.insert(0, scratch)  # importable, as the notebook's folder is in Jupyter
        os.chdir(scratch)
        os.environ["HOME"] = scratch
        message, fds, _, _ = socket.recv_fds(pipes, 1 << 16, 3)
        if len(fds) != 3:
            return  # the zygote let this spare go (or sent nothing usable): end unused
        req, resp, out = fds
        limits = json.loads(message)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        _close_inherited({req, resp})
        _apply_limits(limits)
        serve(WorkerCore(shell), req, resp)
        code = 0
    except BaseException:  # noqa: BLE001 - the worker ends either way; the grader sees EOF
        pass
    finally:
        os._exit(code)


class _Spare:
    """A worker forked ahead, waiting for a submission's pipes on ``sock``."""

    def __init__(self, pid: int, sock: socket.socket, scratch_mb: int) -> None:
        self.pid, self.sock, self.scratch_mb = pid, sock, scratch_mb


def _unlock(folder: str) -> None:
    """Give the zygote back every folder below ``folder``: a submission may have chmod-ed
    them to 0 (same uid, so it could). Top-down, each folder is opened before the walk
    descends into it."""
    try:
        os.chmod(folder, os.stat(folder).st_mode | 0o700)
    except OSError:
        return
    for parent, dirnames, _ in os.walk(folder):
        for name in dirnames:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass


def _remove(folder: str) -> None:
    """Without namespaces (no bubblewrap): remove the scratch folder, however deep."""
    _unlock(folder)
    try:
        shutil.rmtree(folder, ignore_errors=True)
    except RecursionError:
        import subprocess

        subprocess.run(["rm", "-rf", "--one-file-system", folder], check=False)


class ZygoteLoop:
    """The zygote's loop: one submission at a time."""

    def __init__(self, ctrl: socket.socket, shell: Any, *, fresh_namespaces: bool = False,
                 data: str | None = None, helpers: list[list[str]] | None = None) -> None:
        self.ctrl = ctrl
        self.shell = shell
        self.base = os.getcwd()
        self.scratch = os.path.join(self.base, SCRATCH)
        self.in_pid_namespace = os.getpid() == 1
        self.fresh_namespaces = fresh_namespaces
        self.keep = mounts_below_scratch() if fresh_namespaces else []
        self.data = data
        self.helpers = helpers or []
        self.seccomp_rules = 0
        self.worker_filter: bytes | None = None  # the full seccomp filter, loaded by every worker
        self.child: int | None = None
        self.spare: _Spare | None = None  # the next worker, forked ahead (only while no child runs)
        self.scratch_mb: int | None = None  # the scratch size the last worker was asked for: the spare's
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        for signum in IGNORED_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def send(self, message: dict[str, Any]) -> None:
        """One JSON line to the grader."""
        self.ctrl.sendall(json.dumps(message).encode() + b"\n")

    def run(self) -> None:
        """Serve the grader: fork workers on request, reap them, until it hangs up."""
        self.send({"op": "ready", "pid": os.getpid(), "uid": os.getuid(), "pid_namespace": self.in_pid_namespace,
                   "non_dumpable": _non_dumpable(), "seccomp_rules": self.seccomp_rules,
                   "fresh_namespaces": self.fresh_namespaces})
        buffer = b""
        pending: list[int] = []  # descriptors received, not yet handed to a ``fork``
        import select

        while True:
            watched: list[socket.socket | int] = [self.ctrl, self.wake_r]
            readable, _, _ = select.select(watched, [], [])
            if self.wake_r in readable:
                os.read(self.wake_r, 512)
                self._reap()
            if self.ctrl in readable:
                data, fds, _, _ = socket.recv_fds(self.ctrl, 1 << 16, 3)
                if not data:
                    self._kill_all()
                    self._let_spare_go()
                    return
                # Descriptors come only with a ``fork``, but one read may hold lines sent
                # apart (an ``end``, then the ``fork`` sent once its ``exited`` came): they
                # go to the next ``fork`` line, whichever line the read began with.
                pending += fds
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    taken, pending = (pending[:3], pending[3:]) if message.get("op") == "fork" else ([], pending)
                    self._command(message, taken)

    def _command(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        if op == "fork" and len(fds) == 3 and self.child is None:
            try:
                self.child = self._start_worker(message.get("limits", {}), fds)
            finally:
                for fd in fds:
                    os.close(fd)
            self._send_forked(self.child)
        elif op == "end":
            # The grader has what it needs: the worker goes now, whatever it does to stay
            # (a rebound os._exit, an ignored signal). Its one "exited" follows the clean-up.
            self._kill_all()
        elif op == "kill":
            # Exactly one "killed" per kill, after the clean-up; a worker still alive is
            # reaped first, which sends its one "exited". The grader can never mistake
            # one answer for another.
            self._kill_all()
            self.send({"op": "killed"})
        else:
            for fd in fds:
                os.close(fd)
            self.send({"op": "error", "message": f"bad command {str(op)[:30]}"})

    def _send_forked(self, pid: int) -> None:
        """Say the worker serves, handing the grader a pidfd of it: the grader reads the
        worker's CPU time from its own /proc, where this pid (the sandbox's) means nothing.
        Without pidfds (a kernel before 5.3) the line goes alone, and the grader says so."""
        line = json.dumps({"op": "forked"}).encode() + b"\n"
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            self.ctrl.sendall(line)
            return
        try:
            socket.send_fds(self.ctrl, [line], [pidfd])
        finally:
            os.close(pidfd)

    def _start_worker(self, limits: dict[str, Any], fds: list[int]) -> int:
        """The pid of a worker now serving the pipes ``fds`` within ``limits``: the spare, or
        one forked now when there is none, it needs another scratch size or it has died."""
        self.scratch_mb = scratch_mb = int(limits.get("scratch_mb", DEFAULT_SCRATCH_MB))
        if self.spare is not None and self.spare.scratch_mb != scratch_mb:
            self._let_spare_go()
        for _attempt in (1, 2):
            if self.spare is None:
                self.spare = self._fork_spare(scratch_mb)
            spare, self.spare = self.spare, None
            try:
                socket.send_fds(spare.sock, [json.dumps(limits).encode()], fds)
            except OSError:  # it died since it was forked: fork one now
                self._end_spare(spare)
                continue
            spare.sock.close()
            return spare.pid
        raise OSError("a worker forked for this submission ended before it was given its pipes")

    def _fork_spare(self, scratch_mb: int) -> _Spare:
        """Fork a worker that sets itself up and then waits for a submission's pipes."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = _fork(new_pid_namespace=self.fresh_namespaces)
        if pid == 0:
            ours.close()
            self.ctrl.close()
            signal.set_wakeup_fd(-1)
            os.close(self.wake_r)
            os.close(self.wake_w)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _child(self.shell, theirs, scratch_mb, self.scratch, fresh_namespaces=self.fresh_namespaces,
                   keep=self.keep, seccomp_filter=self.worker_filter, data=self.data,
                   helpers=self.helpers)
        theirs.close()
        return _Spare(pid, ours, scratch_mb)

    def _fork_ahead(self) -> None:
        """Fork the next worker now, while the grader judges: a failure (the sandbox's
        process limit, say) is left for the next ``fork`` to meet and report."""
        if self.scratch_mb is None or self.spare is not None:
            return
        try:
            self.spare = self._fork_spare(self.scratch_mb)
        except OSError:
            self.spare = None

    def _let_spare_go(self) -> None:
        """End the spare, if there is one (it has run nothing of anyone's)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            self._end_spare(spare)

    @staticmethod
    def _end_spare(spare: _Spare) -> None:
        spare.sock.close()
        try:
            os.kill(spare.pid, signal.SIGKILL)
            os.waitpid(spare.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    def _kill_all(self) -> None:
        """Kill the worker and everything it started (all of the PID namespace but us). With no
        worker there is nothing to kill: the last one's clean-up killed and reaped all it had
        started, and a spare forked since has run nothing of anyone's (it stays; a spare exists
        only while no worker does)."""
        if self.child is None:
            self._reap()
            return
        if self.in_pid_namespace:
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            try:
                os.killpg(self.child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        # SIGKILL lands asynchronously: wait for the worker itself, so that its one
        # "exited" is sent before the "killed" that answers this kill
        try:
            os.waitpid(self.child, 0)
        except ChildProcessError:
            pass
        else:
            self.child = None
            self._after_submission()
        self._reap()

    def _reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == self.child:
                self.child = None
                self._after_submission()
            elif self.spare is not None and pid == self.spare.pid:
                self.spare.sock.close()
                self.spare = None

    def _after_submission(self) -> None:
        """Everything the submission started is gone: say so. The message is the same
        whatever the worker did (no exit code, signal or pid, which the grader does not use):
        the zygote's memory, which every later worker inherits, keeps no number the last
        submission chose."""
        if self.in_pid_namespace:
            try:
                os.kill(-1, signal.SIGKILL)  # anything that escaped with setsid() or double-fork
            except ProcessLookupError:
                pass
            try:
                while os.waitpid(-1, 0):
                    pass
            except ChildProcessError:
                pass
        if not self.fresh_namespaces:
            _remove(self.scratch)
        self.send({"op": "exited"})
        self._fork_ahead()


def main(ctrl_fd: int, *, fresh_namespaces: bool = False, seccomp: bool = False, data: str | None = None,
         helpers: list[list[str]] | None = None, preload_modules: list[str] | None = None) -> None:
    """Entry point inside the sandbox: preload, then serve the grader until it hangs up.

    ``fresh_namespaces``: give every worker its own mount and IPC namespace with empty
    tmpfs scratch (needs ``CAP_SYS_ADMIN`` in the sandbox's user namespace; refusing to
    start without it, so the grader never runs with a layer it reported but does not
    have). ``seccomp``: install the filter, likewise fatal when it fails. ``data``: a
    read-only folder each worker sees as ``./data``. ``helpers``: pairs of a path relative
    to the worker's folder and a read-only file there (the week's helper modules, linked
    into every worker's folder, which is then first on ``sys.path``). ``preload_modules``:
    what to import before the first fork.
    """
    ctrl = socket.socket(fileno=ctrl_fd)
    if fresh_namespaces and not has_mount_capability():
        raise SystemExit("the sandbox did not grant CAP_SYS_ADMIN in its user namespace: "
                         "fresh scratch namespaces per worker are impossible")
    if fresh_namespaces and platform.machine() not in CLONE_SYSCALL:
        raise SystemExit(f"no PID namespace per worker on {platform.machine()}: the zygote knows clone(2)'s "
                         f"number on {', '.join(CLONE_SYSCALL)} only (add this machine's to CLONE_SYSCALL)")
    shell = preload(preload_modules or [])
    sys.stdout.flush()
    zygote = ZygoteLoop(ctrl, shell, fresh_namespaces=fresh_namespaces, data=data, helpers=helpers)
    if seccomp:
        from autograder.worker.seccomp import compile_filter, install

        # the zygote keeps namespaces and mounts for its workers' set-up; each worker then
        # loads the full filter on top (filters stack: the strictest answer wins)
        allowed = ("unshare", "mount", "clone(CLONE_NEWPID)") if fresh_namespaces else ()
        zygote.worker_filter, _ = compile_filter(protected_pid=os.getpid())
        zygote.seccomp_rules = install(protected_pid=os.getpid(), allow=allowed)
    zygote.run()
