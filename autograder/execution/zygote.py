"""The grader's handle on one zygote and on the worker it has forked.

``Zygote`` starts the sandboxed zygote (see ``sandbox.plan``) and asks it for workers;
``Worker`` sends requests with a wall-clock deadline each. Everything the other side
sends is parsed defensively; a worker that hangs, dies or talks out of turn becomes a
``WorkerTimeout``/``WorkerDied``/``ProtocolError`` for that submission only, and a
zygote that stops answering is replaced.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import select
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from autograder.exceptions import FrameTimeout, ProtocolError, SandboxError, WorkerDied, WorkerTimeout
from autograder.execution.sandbox import Helpers, Limits, SandboxPlan, plan
from autograder.worker.codec import dumps_message, loads_message
from autograder.worker.framing import read_frame, write_frame

log = logging.getLogger(__name__)

ZYGOTE_START_TIMEOUT_S = 120.0
CONTROL_TIMEOUT_S = 10.0
CLEANUP_TIMEOUT_S = 60.0  # killing and reaping a fork bomb's thousands of processes takes a while
MAX_CONTROL_LINE = 1 << 16
# The request and reply pipes hold this much (Linux's default is 64 KiB, the most an
# unprivileged process may ask is /proc/sys/fs/pipe-max-size, 1 MiB by default): a
# week-4 request of 600 KB then crosses in one write and one read instead of ten of each,
# with a wake-up of the other side for every one. Pages are taken only as data is written.
PIPE_BYTES = 1 << 20


class Zygote:
    """One sandboxed zygote; forks one worker at a time."""

    def __init__(self, limits: Limits | None = None, *, data: Path | None = None, helpers: Helpers = (),
                 preload: tuple[str, ...] = (), package: Path | None = None) -> None:
        self.limits = limits or Limits()
        self.data, self.helpers, self.preload, self.package = data, helpers, preload, package
        self.process: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.info: dict[str, Any] = {}
        self.plan: SandboxPlan | None = None
        self._buffer = b""
        self._stderr = tempfile.TemporaryFile()
        self.worker: Worker | None = None
        self._cleaning = False  # a worker ended; the zygote's "exited" not read yet

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> Zygote:
        """Start the sandboxed zygote and wait until it says it is ready."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.plan = plan(theirs.fileno(), limits=self.limits, data=self.data, helpers=self.helpers,
                         preload=self.preload, package=self.package)
        extra: dict[str, Any] = {}
        if self.plan.user is not None:
            extra = {"user": self.plan.user, "group": self.plan.group, "extra_groups": []}
        try:
            self.process = subprocess.Popen(
                self.plan.argv, env=self.plan.env, cwd=self.plan.cwd, pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, stdout=self._stderr, stderr=self._stderr,
                start_new_session=True, **extra,
            )
        finally:
            theirs.close()
        self.sock = ours
        try:
            self.info = self._expect({"ready"}, ZYGOTE_START_TIMEOUT_S)
        except (SandboxError, ProtocolError) as exc:
            detail = self._stderr_text()
            self.close()
            raise SandboxError(f"the worker zygote did not start: {exc}\n{detail}") from exc
        return self

    def stderr_tail(self) -> str:
        """The end of what the zygote wrote to stderr (its own errors, never a worker's)."""
        return self._stderr_text() if not self._stderr.closed else ""

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:].decode("utf-8", "replace")

    @property
    def alive(self) -> bool:
        """The zygote's process runs and its control socket is open."""
        return self.process is not None and self.process.poll() is None and self.sock is not None

    def close(self) -> None:
        """Hang up: the zygote kills its workers and exits; we make sure of it."""
        if self.worker is not None:
            self.worker.close_fds()
            self.worker = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.process is not None:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.plan is not None:
            self.plan.release()  # the zygote's cgroup: kill any leftover, remove it
        self._stderr.close()

    def __enter__(self) -> Zygote:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- control channel --------------------------------------------------------------
    def _send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        assert self.sock is not None
        data = json.dumps(message).encode() + b"\n"
        if fds:
            socket.send_fds(self.sock, [data], fds)
        else:
            self.sock.sendall(data)

    def _expect(self, ops: set[str], timeout: float) -> dict[str, Any]:
        """Read control lines until one whose op is in ``ops``."""
        assert self.sock is not None
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                message = loads_message(line)
                log.debug("zygote says %s (waiting for %s)", message, sorted(ops))
                if message.get("op") in ops:
                    return message
                if message.get("op") == "error":  # it refused what it was asked: no answer will come
                    raise SandboxError("the zygote refused a command")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError(f"zygote did not answer {sorted(ops)} within {timeout:.0f} s")
            readable, _, _ = select.select([self.sock], [], [], remaining)
            if readable:
                chunk = self.sock.recv(MAX_CONTROL_LINE)
                if not chunk:
                    raise SandboxError("zygote exited")
                self._buffer += chunk
                if len(self._buffer) > MAX_CONTROL_LINE:
                    raise ProtocolError("zygote control line too long")

    # -- workers ----------------------------------------------------------------------
    def spawn(self, limits: Limits | None = None) -> Worker:
        """Fork a fresh worker for one submission, with ``limits`` (default: the zygote's)
        for its rlimits and output cap; the cgroup keeps the zygote's own."""
        limits = limits or self.limits
        if self.worker is not None:
            raise SandboxError("the zygote already has a worker")
        self._await_cleanup()
        req_r, req_w = _wide_pipe()
        resp_r, resp_w = _wide_pipe()
        out_r, out_w = os.pipe()
        try:
            self._send({"op": "fork", "limits": limits.for_worker()}, [req_r, resp_w, out_w])
        finally:
            for fd in (req_r, resp_w, out_w):
                os.close(fd)
        self._expect({"forked"}, CONTROL_TIMEOUT_S)
        self.worker = Worker(self, req_w, resp_r, out_r)
        return self.worker

    def finish(self, *, kill: bool) -> None:
        """End the current worker: either way the zygote kills everything it started at once
        (a worker that will not exit must not run on into the next submission).

        Without ``kill`` the grader does not wait for the zygote's clean-up: ``spawn`` waits
        for the worker's one ``exited``, so the grader judges one submission while the
        zygote tidies up after it. With ``kill`` it waits for its one ``killed``, so a stuck
        zygote is found at once. Raises ``SandboxError`` when the zygote is stuck.
        """
        worker, self.worker = self.worker, None
        if worker is None:
            return
        worker.close_fds()
        if kill:
            self._kill()
        else:
            self._send({"op": "end"})
            self._cleaning = True

    def settle(self) -> None:
        """Wait for any clean-up still under way (the end of a batch)."""
        self._await_cleanup()

    def _await_cleanup(self) -> None:
        """Wait until the zygote reports the last worker gone and its traces wiped."""
        if not self._cleaning:
            return
        self._cleaning = False
        try:
            self._expect({"exited"}, CLEANUP_TIMEOUT_S)
        except SandboxError:
            self._kill()

    def _kill(self) -> None:
        self._cleaning = False
        self._send({"op": "kill"})
        self._expect({"killed"}, CLEANUP_TIMEOUT_S)


def _wide_pipe() -> tuple[int, int]:
    """A pipe of ``PIPE_BYTES``, or of the default size where the system refuses (a user's
    pipes over ``pipe-user-pages-soft``, a lower ``pipe-max-size``): only slower, never wrong."""
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass
    return read_end, write_end


class Worker:
    """One forked worker: request/reply with a deadline per request."""

    def __init__(self, zygote: Zygote, req_w: int, resp_r: int, out_r: int) -> None:
        self.zygote = zygote
        self.req_w, self.resp_r = req_w, resp_r
        os.set_blocking(req_w, False)
        os.set_blocking(resp_r, False)
        self._seq = 0
        self.dead = False
        self.received = 0  # bytes of every reply so far: what the grader has had to read
        threading.Thread(target=self._drain_output, args=(out_r,), daemon=True).start()

    @staticmethod
    def _drain_output(fd: int) -> None:
        """Read and drop what the student's code prints, so a flood never blocks the
        worker (nothing reads it: feedback comes from the tests, cell errors from replies)."""
        try:
            while os.read(fd, 1 << 16):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait for its reply, at most ``timeout`` seconds."""
        if self.dead:
            raise WorkerDied("the worker has already ended")
        self._seq += 1
        message = {**message, "seq": self._seq}
        deadline = time.monotonic() + timeout
        try:
            write_frame(self.req_w, dumps_message(message), deadline)
            raw = read_frame(self.resp_r, deadline)
            self.received += len(raw)
            reply = loads_message(raw)
        except FrameTimeout:
            self.dead = True
            raise WorkerTimeout(f"no answer within {timeout:g} s") from None
        except (EOFError, BrokenPipeError):
            self.dead = True
            raise WorkerDied("the worker process ended") from None
        except ProtocolError:
            self.dead = True
            raise
        if reply.get("seq") != self._seq:
            self.dead = True
            raise ProtocolError("reply out of turn")
        return reply

    def close_fds(self) -> None:
        """Close our ends of the worker's pipes."""
        for fd in (self.req_w, self.resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.req_w = self.resp_r = -1
