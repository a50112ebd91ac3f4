"""The CPU time a worker has used, and the time it waited for a CPU, from the kernel's count.

Budgets are in CPU seconds so that a notebook scores the same on an idle machine and on
one whose cores are all busy (a deadline rush): a pure-Python loop needing 6 s of CPU may
take 30 s of wall time beside other graders, and is no slower for it. The count comes from
``/proc/PID/stat`` of the worker (``utime + stime`` of all its threads, plus
``cutime + cstime`` of the children it has reaped), read in the grader's own PID
namespace: nothing the worker runs can change what the kernel wrote there. A child the
worker forks and never reaps is not counted; the wall-clock backstop bounds it, as it
bounds code that sleeps or blocks.

The backstop counts wall time minus the time the worker's main thread spent runnable but
waiting for a CPU (``run_delay`` in ``/proc/PID/schedstat``): a sleeping or blocked worker
reaches it at the same wall time whatever the load, and a computing one, however starved
of a core, reaches its CPU limit first.

The zygote hands the grader a pidfd of each worker it forks (the worker's pid means
nothing outside the sandbox's PID namespaces); the kernel names the pid in the grader's
namespace in the pidfd's ``fdinfo``.
"""

from __future__ import annotations

import os
from typing import NamedTuple

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/PID/stat's times


class Usage(NamedTuple):
    """A worker's counts since it was forked, in seconds."""

    cpu: float  # CPU time of its threads and reaped children
    waited: float  # time its main thread was runnable but waited for a CPU (0 where the kernel does not say)


class CpuMeter:
    """One worker's CPU time and CPU wait, counted by the kernel. Its two /proc files stay
    open (a read is then one system call); they name the process, not the number, so once
    the worker has ended they answer nothing, even if its pid is given to another process."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._stat = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._schedstat: int | None = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._schedstat = None  # a kernel without CONFIG_SCHED_INFO: no wait is subtracted

    @classmethod
    def from_pidfd(cls, pidfd: int) -> CpuMeter:
        """The meter of the process ``pidfd`` refers to (its pid as this process sees it).
        ``ProcessLookupError`` when it has ended or lives in no namespace of ours. The pid
        is read again once the files are open: still alive then, they are its own and not
        those of a process that got its number after it ended."""
        meter = cls(_pid_of(pidfd))
        if _pid_of(pidfd) != meter.pid:
            meter.close()
            raise ProcessLookupError("the worker ended as its CPU count was opened")
        return meter

    def usage(self) -> Usage | None:
        """The worker's counts now; None once it has ended (or the meter is closed)."""
        try:
            raw = os.pread(self._stat, 1024, 0)
            waited = int(os.pread(self._schedstat, 128, 0).split()[1]) / 1e9 if self._schedstat is not None else 0.0
        except (OSError, IndexError, ValueError):
            return None
        # the command name (field 2) is in parentheses and may hold spaces or ')'; from the
        # state (field 3) on, utime, stime, cutime and cstime are the 12th to 15th
        fields = raw[raw.rindex(b")") + 2:].split()
        return Usage(sum(int(value) for value in fields[11:15]) / CLOCK_TICKS, waited)

    def close(self) -> None:
        """Close the /proc files."""
        for fd in (self._stat, self._schedstat):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._stat, self._schedstat = -1, None


def _pid_of(pidfd: int) -> int:
    """The pid, in this process's namespace, of the process ``pidfd`` refers to."""
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        for line in f:
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                if pid > 0:
                    return pid
    raise ProcessLookupError("the pidfd names no live process in this PID namespace")
