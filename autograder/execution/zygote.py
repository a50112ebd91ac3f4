"""The grader's handle on one zygote and on the worker it has forked.

``SandboxedZygote`` starts the sandboxed zygote (see ``sandbox.plan``) and asks it for workers;
``Worker`` sends requests with a CPU-time limit each (``cputime.CpuMeter``), and a wall-clock
backstop for code that waits instead of computing (load does not move it: time the worker
spent waiting for a CPU is not counted). Everything the other side
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
from autograder.execution.cputime import CpuMeter, Usage
from autograder.execution.sandbox import Helpers, Limits, SandboxPlan, plan
from autograder.worker.codec import dumps_message, loads_message
from autograder.worker.framing import read_frame, write_frame

log = logging.getLogger(__name__)

ZYGOTE_START_TIMEOUT_S = 120.0
CONTROL_TIMEOUT_S = 10.0
CLEANUP_TIMEOUT_S = 60.0  # killing and reaping a fork bomb's thousands of processes takes a while
MAX_CONTROL_LINE = 1 << 16
CPU_POLL_S = 0.05  # how often a request that has not been answered yet reads the worker's CPU time
# The request and reply pipes hold this much (Linux's default is 64 KiB, the most an
# unprivileged process may ask is /proc/sys/fs/pipe-max-size, 1 MiB by default): a
# week-4 request of 600 KB then crosses in one write and one read instead of ten of each,
# with a wake-up of the other side for every one. Pages are taken only as data is written.
PIPE_BYTES = 1 << 20


class SandboxedZygote:
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
        self._fds: list[int] = []  # descriptors the zygote sent (a worker's pidfd), not yet taken
        self._stderr = tempfile.TemporaryFile()
        self.worker: Worker | None = None
        self._cleaning = False  # a worker ended; the zygote's "exited" not read yet

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> SandboxedZygote:
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
        self._close_received()
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

    def __enter__(self) -> SandboxedZygote:
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
                chunk, fds, _, _ = socket.recv_fds(self.sock, MAX_CONTROL_LINE, 4)
                self._fds += fds
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
        self._close_received()
        self._expect({"forked"}, CONTROL_TIMEOUT_S)
        self.worker = Worker(self, req_w, resp_r, out_r, self._meter())
        return self.worker

    def _meter(self) -> CpuMeter | None:
        """The CPU meter of the worker just forked, from the pidfd the zygote sent with its
        ``forked``; None (budgets then count wall time, with a warning) where it sent none."""
        fds, self._fds = self._fds, []
        try:
            if not fds:
                raise OSError("the zygote sent no pidfd of its worker")
            return CpuMeter.from_pidfd(fds[0])
        except (OSError, ValueError) as exc:
            _warn_once(f"cannot read the worker's CPU time ({exc}): budgets count wall-clock time instead")
            return None
        finally:
            for fd in fds:
                os.close(fd)

    def _close_received(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)

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


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Log ``message`` once per process: a machine that cannot meter one worker meters none."""
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


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
    """One forked worker: request/reply within a CPU-time limit and a wall-clock backstop per request."""

    def __init__(self, zygote: SandboxedZygote, req_w: int, resp_r: int, out_r: int,
                 meter: CpuMeter | None = None) -> None:
        self.zygote = zygote
        self.req_w, self.resp_r = req_w, resp_r
        os.set_blocking(req_w, False)
        os.set_blocking(resp_r, False)
        self._seq = 0
        self.dead = False
        self.received = 0  # bytes of every reply so far: what the grader has had to read
        self.meter = meter  # the kernel's count of the worker's CPU time (None: wall time stands in)
        self.cpu_used = 0.0  # CPU seconds charged to the last request (its wall seconds without a meter)
        self.wall_used = 0.0  # its wall seconds, less those the worker waited for a CPU
        self._seen = meter.usage() if meter is not None else None  # the counts at the last read
        self._seen_at = time.monotonic()
        self._charged = self._seen  # the counts charged to requests so far
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

    def _read(self) -> Usage:
        """Read the worker's counts (the last ones once it has ended) and note when."""
        assert self.meter is not None and self._seen is not None
        self._seen = self.meter.usage() or self._seen
        self._seen_at = time.monotonic()
        return self._seen

    def request(self, message: dict[str, Any], timeout: float, *, wall: float | None = None) -> dict[str, Any]:
        """Send one request and wait for its reply, until the worker has spent ``timeout``
        seconds of CPU time on it, or ``wall`` seconds (default ``timeout``) have passed that
        it did not spend waiting for a CPU: the backstop for code that sleeps or blocks,
        reached at the same time on a busy machine as on an idle one (``cputime``). Without
        a CPU meter ``timeout`` is plain wall time. ``WorkerTimeout`` says which ran out.

        The counts are read while the reply is awaited (every ``CPU_POLL_S``) and after it,
        unless they were read less than ``CPU_POLL_S`` ago: a stream of quick requests costs
        one read per ``CPU_POLL_S``, and a request's CPU time is counted from the last read
        (which a quick request before it may precede). Afterwards ``cpu_used`` is the CPU
        time since the read before this request's last (0 when none was made), so what all
        requests are charged adds up to the worker's CPU time; ``wall_used`` is the
        request's wall time, less what the worker waited for a CPU where that was read."""
        if self.dead:
            raise WorkerDied("the worker has already ended")
        self._seq += 1
        message = {**message, "seq": self._seq}
        before = self._seen  # None: no meter, or a worker that ended before it was read
        if before is None or wall is None:
            wall = timeout
        started = time.monotonic()
        try:
            write_frame(self.req_w, dumps_message(message), started + wall)
            if before is not None:
                self._await_reply(before, timeout, wall, started)
            # once a metered reply has begun, the rest is only being written
            raw = read_frame(self.resp_r, started + wall if before is None else time.monotonic() + wall)
            self.received += len(raw)
            reply = loads_message(raw)
        except FrameTimeout:
            self.dead = True
            raise WorkerTimeout(wall, wall=True) from None
        except (EOFError, BrokenPipeError):
            self.dead = True
            raise WorkerDied("the worker process ended") from None
        except ProtocolError:
            self.dead = True
            raise
        finally:
            self._account(before, started)
        if reply.get("seq") != self._seq:
            self.dead = True
            raise ProtocolError("reply out of turn")
        return reply

    def _account(self, before: Usage | None, started: float) -> None:
        now = time.monotonic()
        self.cpu_used, self.wall_used = 0.0, now - started
        if before is None:
            self.cpu_used = self.wall_used  # no meter: wall time stands in
            return
        if self.dead or now - self._seen_at >= CPU_POLL_S:
            self._read()
        assert self._seen is not None and self._charged is not None
        self.cpu_used = self._seen.cpu - self._charged.cpu
        self.wall_used -= self._seen.waited - self._charged.waited
        self._charged = self._seen

    def _await_reply(self, before: Usage, timeout: float, wall: float, started: float) -> None:
        """Wait until the reply starts to come, reading the worker's counts every
        ``CPU_POLL_S``; ``WorkerTimeout`` once it has spent ``timeout`` seconds of CPU time
        or ``wall`` seconds not waiting for a CPU. A reply wakes this at once."""
        while True:
            readable, _, _ = select.select([self.resp_r], [], [], CPU_POLL_S)
            if readable:
                return
            now = self._read()
            if now.cpu - before.cpu > timeout:
                self.dead = True
                raise WorkerTimeout(timeout, wall=False)
            if time.monotonic() - started - (now.waited - before.waited) > wall:
                self.dead = True
                raise WorkerTimeout(wall, wall=True)

    def close_fds(self) -> None:
        """Close our ends of the worker's pipes, and its CPU meter."""
        if self.meter is not None:
            self.meter.close()
        for fd in (self.req_w, self.resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.req_w = self.resp_r = -1
