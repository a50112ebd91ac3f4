"""The warm zygote: imports the heavy libraries once, forks one worker per submission.

Runs inside the sandbox (see ``autograder.execution.sandbox``). The grader talks to it
over a Unix socket: ``fork`` (with three pipe ends passed as SCM_RIGHTS: requests in,
replies out, student output out) and ``kill``. After each worker ends, the zygote kills
everything the submission left behind and wipes the scratch folder before it reports
``exited``, so the next submission starts from exactly the zygote's state.

The zygote never runs student code itself. Its workers run as the same uid, so it guards
itself: it is non-dumpable (no ptrace, no /proc/1/mem), ignores the signals Python would
turn into exceptions, and installs the seccomp filter (``autograder.worker.seccomp``) that
forbids its workers to signal, trace or re-limit it. Each worker closes every inherited
descriptor but its pipes and volunteers as the first victim of the cgroup's OOM killer.
In a private tmpfs (bubblewrap), ``/tmp`` and ``/dev/shm`` are put back after every
submission exactly as they were when the zygote became ready, so nothing one submission
writes is seen by the next.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import shutil
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

PR_SET_DUMPABLE = 4
SCRATCH = "scratch"
SHARED_MEMORY = "/dev/shm"
MAX_SNAPSHOT_BYTES = 32 << 20
IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def preload() -> Any:
    """Import what submissions use, so a fork pays nothing for it."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import scipy.optimize  # noqa: F401
    import scipy.special  # noqa: F401
    import sklearn.datasets  # noqa: F401
    import sklearn.feature_extraction.text  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    import sklearn.metrics  # noqa: F401
    import sklearn.model_selection  # noqa: F401
    import sklearn.naive_bayes  # noqa: F401
    import sklearn.neighbors  # noqa: F401
    import sklearn.preprocessing  # noqa: F401

    from autograder.worker.core import make_shell

    shell = make_shell()
    # Park everything imported so far outside the collector: a worker's garbage
    # collections then never walk (and so copy-on-write) the zygote's pages.
    gc.collect()
    gc.freeze()
    return shell


def _non_dumpable() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
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


def _child(shell: Any, fds: list[int], limits: dict[str, int], scratch: str) -> None:
    """In the forked worker: wire the pipes, enter scratch, limit, serve. Never returns."""
    from autograder.worker.core import WorkerCore
    from autograder.worker.serve import serve

    req, resp, out = fds
    os.setsid()
    for signum in IGNORED_SIGNALS:
        signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    _close_inherited({req, resp})
    _first_to_go()
    os.makedirs(scratch, exist_ok=True)
    os.chdir(scratch)
    os.environ["HOME"] = scratch
    _apply_limits(limits)
    code = 0
    try:
        serve(WorkerCore(shell), req, resp)
    except BaseException:  # noqa: BLE001 - the worker ends either way; the grader sees EOF
        code = 70
    finally:
        os._exit(code)


def _same_device(folder: str) -> Callable[[str], bool]:
    """A test for "on the same file system as ``folder``": the read-only binds (the
    virtualenv, the package) may sit inside /tmp when the course itself lives under /tmp,
    and must never be walked, emptied or snapshotted as if they were scratch."""
    device = os.lstat(folder).st_dev

    def same(path: str) -> bool:
        try:
            return os.lstat(path).st_dev == device
        except OSError:
            return False

    return same


def _unlock(folder: str) -> None:
    """Give the zygote back every folder below ``folder``: a submission may have chmod-ed
    them to 0 (same uid, so it could). Top-down, each folder is opened before the walk
    descends into it; other file systems (mount points) are left alone."""
    try:
        os.chmod(folder, os.stat(folder).st_mode | 0o700)
    except OSError:
        return
    same = _same_device(folder)
    for parent, dirnames, _ in os.walk(folder):
        dirnames[:] = [d for d in dirnames if same(os.path.join(parent, d))]
        for name in dirnames:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass


def _empty(folder: str) -> None:
    """Remove everything inside ``folder`` (not the folder: it may be a mount point), but
    nothing on another file system. Iterative, so no nesting depth can exhaust the stack."""
    _unlock(folder)
    same = _same_device(folder)
    try:
        stack = [(os.path.join(folder, name), False) for name in os.listdir(folder)]
    except OSError:
        return
    while stack:
        path, emptied = stack.pop()
        if emptied:
            try:
                os.rmdir(path)
            except OSError:
                pass  # it holds a mount point's parent, or is busy: leave it
        elif os.path.isdir(path) and not os.path.islink(path):
            if same(path):
                stack.append((path, True))
                try:
                    stack.extend((os.path.join(path, name), False) for name in os.listdir(path))
                except OSError:
                    pass
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


class TmpSnapshot:
    """The private ``/tmp`` as the imports left it (font caches, IPython's folder), to put
    back after every submission: the next one must see none of what this one wrote."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.mode = os.stat(root).st_mode & 0o7777
        self.dirs: list[tuple[str, int]] = []
        self.files: list[tuple[str, int, bytes]] = []
        self.links: list[tuple[str, str]] = []
        total = 0
        same = _same_device(root)
        for folder, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if same(os.path.join(folder, d))]
            rel = os.path.relpath(folder, root)
            if rel != ".":
                self.dirs.append((rel, os.stat(folder).st_mode & 0o7777))
            for name in dirnames + filenames:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    self.links.append((os.path.relpath(path, root), os.readlink(path)))
            for name in filenames:
                path = os.path.join(folder, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                with open(path, "rb") as f:
                    data = f.read(MAX_SNAPSHOT_BYTES + 1)
                total += len(data)
                if total > MAX_SNAPSHOT_BYTES:
                    raise RuntimeError(f"{root} holds more than {MAX_SNAPSHOT_BYTES} bytes after the imports")
                self.files.append((os.path.relpath(path, root), os.stat(path).st_mode & 0o7777, data))

    def restore(self, *also_empty: str) -> None:
        _empty(self.root)
        os.chmod(self.root, self.mode)
        for folder in also_empty:
            _empty(folder)
        for rel, mode in self.dirs:
            os.makedirs(os.path.join(self.root, rel), exist_ok=True)
            os.chmod(os.path.join(self.root, rel), mode)
        for rel, mode, data in self.files:
            path = os.path.join(self.root, rel)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, mode)
        for rel, target in self.links:
            os.symlink(target, os.path.join(self.root, rel))


class Zygote:
    """The zygote's loop: one submission at a time."""

    def __init__(self, ctrl: socket.socket, shell: Any, *, private_tmp: bool = False) -> None:
        self.ctrl = ctrl
        self.shell = shell
        self.base = os.getcwd()
        self.scratch = os.path.join(self.base, SCRATCH)
        self.in_pid_namespace = os.getpid() == 1
        self.snapshot = TmpSnapshot(self.base) if private_tmp else None
        self.seccomp_rules = 0
        self.child: int | None = None
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        for signum in IGNORED_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def send(self, message: dict[str, Any]) -> None:
        self.ctrl.sendall(json.dumps(message).encode() + b"\n")

    def run(self) -> None:
        self.send({"op": "ready", "pid": os.getpid(), "uid": os.getuid(), "pid_namespace": self.in_pid_namespace,
                   "non_dumpable": _non_dumpable(), "seccomp_rules": self.seccomp_rules,
                   "private_tmp": self.snapshot is not None})
        buffer = b""
        import select

        while True:
            readable, _, _ = select.select([self.ctrl, self.wake_r], [], [])
            if self.wake_r in readable:
                os.read(self.wake_r, 512)
                self._reap()
            if self.ctrl in readable:
                data, fds, _, _ = socket.recv_fds(self.ctrl, 1 << 16, 3)
                if not data:
                    self._kill_all()
                    return
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    self._command(json.loads(line), fds)
                    fds = []

    def _command(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        if op == "fork" and len(fds) == 3 and self.child is None:
            pid = os.fork()
            if pid == 0:
                self.ctrl.close()
                signal.set_wakeup_fd(-1)
                os.close(self.wake_r)
                os.close(self.wake_w)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _child(self.shell, fds, message.get("limits", {}), self.scratch)
            for fd in fds:
                os.close(fd)
            self.child = pid
            self.send({"op": "forked", "pid": pid})
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

    def _kill_all(self) -> None:
        """Kill the worker and everything it started (all of the PID namespace but us)."""
        if self.in_pid_namespace:
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif self.child is not None:
            try:
                os.killpg(self.child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.child is not None:
            # SIGKILL lands asynchronously: wait for the worker itself, so that its one
            # "exited" is sent before the "killed" that answers this kill
            try:
                _, status = os.waitpid(self.child, 0)
            except ChildProcessError:
                pass
            else:
                self.child = None
                self._after_submission(status)
        self._reap()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == self.child:
                self.child = None
                self._after_submission(status)

    def _after_submission(self, status: int) -> None:
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
        if self.snapshot is not None:
            self.snapshot.restore(SHARED_MEMORY)
        else:
            _unlock(self.scratch)
            shutil.rmtree(self.scratch, ignore_errors=True)
        signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        self.send({"op": "exited", "signal": signum, "code": code})


def main(ctrl_fd: int, *, private_tmp: bool = False, seccomp: bool = False) -> None:
    """Entry point inside the sandbox: preload, then serve the grader until it hangs up.

    ``private_tmp``: ``/tmp`` is this sandbox's own tmpfs, to be restored after every
    submission. ``seccomp``: install the filter; failing to is fatal, so the grader never
    runs with a layer it reported but does not have.
    """
    ctrl = socket.socket(fileno=ctrl_fd)
    shell = preload()
    sys.stdout.flush()
    zygote = Zygote(ctrl, shell, private_tmp=private_tmp)
    if seccomp:
        from autograder.worker.seccomp import install

        zygote.seccomp_rules = install(protected_pid=os.getpid())
    zygote.run()
