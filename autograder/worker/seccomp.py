"""A seccomp filter for the zygote and every worker it forks (libseccomp through ctypes).

Namespaces, the unprivileged uid and ``NO_NEW_PRIVS`` already stop most of what a
submission could try; this filter removes the kernel surface a grading run never needs,
so a kernel bug behind it is out of reach too, and pins the rules that protect the
zygote from its own workers (same uid):

- no ``ptrace``, ``process_vm_readv/writev``, ``kcmp``, ``pidfd_getfd``;
- no signals, ``prlimit``, scheduling or ``pidfd_open`` aimed at the zygote's pid;
- no new namespaces (``unshare``, ``setns``, namespace flags to ``clone``; ``clone3``,
  whose flags a filter cannot read, says ENOSYS so the C library falls back to ``clone``);
- no mounts, ``chroot``, modules, ``bpf``, ``perf_event_open``, ``userfaultfd``, keyrings,
  ``io_uring`` (whose requests bypass seccomp);
- sockets of the ``AF_UNIX`` family only (multiprocessing and joblib need those);
- no memory that takes no address space (``memfd_create``, ``memfd_secret``, SysV
  ``shmget``, ``semget``, ``msgget``): ``RLIMIT_AS`` never counts it, so where the memory
  cgroup is off nothing else would. What a caller falls back on, a file in ``/tmp`` or
  ``/dev/shm`` (POSIX shared memory, multiprocessing's semaphores), is held by the scratch
  tmpfs's size.

Denied calls fail with EPERM (ENOSYS for ``clone3``, ``io_uring`` and the memory calls,
as from a kernel built without them, which is what callers with a fallback test for);
nothing is killed, so a submission sees an ordinary ``OSError``. The filter is installed
once in the zygote, after the imports, without ``unshare``, ``mount`` and ``clone`` into a
new PID namespace (it forks each worker into its own and sets up its fresh namespaces), and
again, whole, by every worker before any student code runs; filters stack and cannot be
removed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import platform

from autograder.exceptions import SeccompUnavailable

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE = 1
SCMP_CMP_MASKED_EQ = 7
SUPPORTED_MACHINES = ("x86_64", "aarch64")  # where every rule's argument index holds
AF_UNIX = 1
LOW32 = 0xFFFFFFFF

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "swapon", "swapoff", "reboot",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
    "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "acct", "quotactl",
    "open_by_handle_at", "name_to_handle_at", "syslog", "lookup_dcookie",
)
NOT_AVAILABLE = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
# memory outside every rlimit: a memfd written with write() (its pages are in no mapping),
# SysV shared memory touched and detached, semaphore sets and messages (kernel memory). The
# IPC namespace's own caps (kernel.shmall, msgmni, semmni...) cannot be lowered instead: its
# sysctl files answer only the namespace's root, and the sandbox maps no uid 0
UNCOUNTED_MEMORY = ("memfd_create", "memfd_secret", "shmget", "semget", "msgget")
# syscall -> index of the argument that names a process
AIMED_AT_A_PID = {
    "kill": 0, "tkill": 0, "tgkill": 0, "rt_sigqueueinfo": 0, "rt_tgsigqueueinfo": 0, "pidfd_open": 0,
    "prlimit64": 0, "sched_setaffinity": 0, "sched_setscheduler": 0, "sched_setparam": 0,
    "sched_setattr": 0, "migrate_pages": 0, "move_pages": 0, "setpriority": 1, "ioprio_set": 1,
}
CLONE_NEWPID = 0x20000000
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, CLONE_NEWPID, 0x40000000, 0x00000080)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)
    ]


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    """libseccomp, found once (``find_library`` runs ``ldconfig``): a worker forked from the
    zygote installs its filter without paying for the search again."""
    if platform.machine() not in SUPPORTED_MACHINES:
        raise SeccompUnavailable(f"no seccomp rules for {platform.machine()}")
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable(f"libseccomp not found ({exc}): apt-get install libseccomp2") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def available() -> str | None:
    """Why the filter cannot be installed here, or None when it can."""
    try:
        _library()
    except SeccompUnavailable as exc:
        return str(exc)
    return None


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def compile_filter(protected_pid: int, allow: tuple[str, ...] = ()) -> tuple[bytes, int]:
    """The filter as a BPF program, and its number of rules. ``protected_pid`` is the
    zygote, which its workers may not touch; ``allow`` names denied calls to leave out
    (the zygote's own set-up of each worker; ``"clone(CLONE_NEWPID)"``: forking into a new
    PID namespace). Compiled once in the zygote, so a worker
    loads it with one ``prctl`` instead of rebuilding it through ctypes after every fork."""
    lib = _library()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    rules = 0

    def rule(name: str, action: int, *conditions: tuple[int, int, int, int]) -> None:
        nonlocal rules
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:
            return  # not a syscall on this architecture
        array = (_ArgCmp * max(1, len(conditions)))(*[_ArgCmp(*c) for c in conditions])
        code = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
        if code < 0:
            raise SeccompUnavailable(f"seccomp rule for {name} refused ({-code})")
        rules += 1

    try:
        eperm = _errno_action(errno.EPERM)
        for name in DENIED:
            if name not in allow:
                rule(name, eperm)
        for name in NOT_AVAILABLE + UNCOUNTED_MEMORY:
            rule(name, _errno_action(errno.ENOSYS))
        # -pid names the zygote's process group, but -1 means "every process I may signal"
        # (which excludes a PID namespace's init): the zygote relies on kill(-1) itself
        targets = (protected_pid,) if protected_pid == 1 else (protected_pid, -protected_pid)
        for name, index in AIMED_AT_A_PID.items():
            for target in targets:
                rule(name, eperm, (index, SCMP_CMP_MASKED_EQ, LOW32, target & LOW32))
        for flag in NAMESPACE_FLAGS:
            if not (flag == CLONE_NEWPID and "clone(CLONE_NEWPID)" in allow):
                rule("clone", eperm, (0, SCMP_CMP_MASKED_EQ, flag, flag))
        rule("socket", eperm, (0, SCMP_CMP_NE, AF_UNIX, 0))  # compares 64 bits: fails closed
        fd = os.memfd_create("seccomp-bpf")  # so compiled before any filter is loaded: it refuses memfds
        try:
            code = lib.seccomp_export_bpf(ctx, fd)
            if code < 0:
                raise SeccompUnavailable(f"seccomp_export_bpf failed ({-code})")
            os.lseek(fd, 0, os.SEEK_SET)
            program = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)
    return program, rules


def load(program: bytes) -> None:
    """Install a compiled filter in this process and all its future children; it cannot
    be removed. Sets ``NO_NEW_PRIVS`` first, as the kernel requires of the unprivileged."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SeccompUnavailable(f"no_new_privs refused ({os.strerror(ctypes.get_errno())})")
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise SeccompUnavailable(f"loading the filter failed ({os.strerror(ctypes.get_errno())})")


def install(protected_pid: int, allow: tuple[str, ...] = ()) -> int:
    """Compile and load the filter here (see ``compile_filter``); return its number of rules."""
    program, rules = compile_filter(protected_pid, allow)
    load(program)
    return rules
