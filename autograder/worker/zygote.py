"""The warm zygote: imports the heavy libraries once, forks one worker per submission.

Runs inside the sandbox (see ``autograder.execution.sandbox``). The grader talks to it
over a Unix socket: ``fork`` (with three pipe ends passed as SCM_RIGHTS: requests in,
replies out, student output out) and ``kill``. After each worker ends, the zygote kills
everything the submission left behind and wipes the scratch folder before it reports
``exited``, so the next submission starts from exactly the zygote's state.

The zygote never runs student code itself, and makes itself non-dumpable so a worker
running as the same uid cannot ptrace it or read its memory.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import socket
import sys
from typing import Any

PR_SET_DUMPABLE = 4
SCRATCH = "scratch"


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

    return make_shell()


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


def _child(shell: Any, fds: list[int], limits: dict[str, int], scratch: str) -> None:
    """In the forked worker: wire the pipes, enter scratch, limit, serve. Never returns."""
    from autograder.worker.core import WorkerCore
    from autograder.worker.serve import serve

    req, resp, out = fds
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    for fd in (devnull, out):
        os.close(fd)
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


class Zygote:
    """The zygote's loop: one submission at a time."""

    def __init__(self, ctrl: socket.socket, shell: Any) -> None:
        self.ctrl = ctrl
        self.shell = shell
        self.base = os.getcwd()
        self.scratch = os.path.join(self.base, SCRATCH)
        self.in_pid_namespace = os.getpid() == 1
        self.child: int | None = None
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)

    def send(self, message: dict[str, Any]) -> None:
        self.ctrl.sendall(json.dumps(message).encode() + b"\n")

    def run(self) -> None:
        self.send({"op": "ready", "pid": os.getpid(), "uid": os.getuid(), "pid_namespace": self.in_pid_namespace,
                   "non_dumpable": _non_dumpable()})
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
                os.close(self.wake_r)
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _child(self.shell, fds, message.get("limits", {}), self.scratch)
            for fd in fds:
                os.close(fd)
            self.child = pid
            self.send({"op": "forked", "pid": pid})
        elif op == "kill":
            if self.child is None:
                self.send({"op": "idle"})
            self._kill_all()
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
        shutil.rmtree(self.scratch, ignore_errors=True)
        signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        self.send({"op": "exited", "signal": signum, "code": code})


def main(ctrl_fd: int) -> None:
    """Entry point inside the sandbox: preload, then serve the grader until it hangs up."""
    ctrl = socket.socket(fileno=ctrl_fd)
    shell = preload()
    sys.stdout.flush()
    Zygote(ctrl, shell).run()
