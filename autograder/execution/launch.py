"""Start bubblewrap as the unprivileged user, with what it binds made reachable first.

bubblewrap runs as ``nobody`` (a sandbox started by root would map its user to root), so
it can bind only what ``nobody`` can walk to. A course cloned into a folder only its owner
may enter (``mktemp -d``, most home folders) would then lose the unprivileged layer. This
launcher runs as root, in a mount namespace of its own: it bind-mounts each folder the
sandbox needs (the virtualenv, the ``autograder`` package, a week's data and helper modules) read-only under a
fresh tmpfs at ``STAGING``, whose every parent ``nobody`` can enter, then drops to
``nobody`` and execs bubblewrap, which binds them from there at their fixed places. The
mounts live only in this namespace: they vanish with the sandbox and the host never sees
them. Run as ``python -I -c`` by ``sandbox.plan``; arguments come as one JSON document.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

STAGING = "/run/autograder-sandbox"
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18


def staging_root() -> str:
    """The folder the staged binds go under, made when missing (root only): a tmpfs is
    mounted on it inside the launcher's namespace, so it stays empty on the host."""
    os.makedirs(STAGING, mode=0o755, exist_ok=True)
    return STAGING


def _encode(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    if libc.mount(_encode(source), _encode(target), _encode(fstype), flags, _encode(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def main(spec_json: str) -> None:
    """``spec``: ``binds`` (pairs of a source folder and its staged path), ``uid``, ``gid``
    and ``argv`` (bubblewrap's command line, to exec once the binds are staged)."""
    spec = json.loads(spec_json)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _mount(libc, "autograder", spec["root"], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
    for source, staged in spec["binds"]:
        if os.path.isdir(source):
            os.mkdir(staged, 0o755)
        else:  # a file (a week's helper module) is bound onto a file
            os.close(os.open(staged, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        _mount(libc, source, staged, None, MS_BIND | MS_REC)
        _mount(libc, None, staged, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.setgroups([])
    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    os.execv(spec["argv"][0], spec["argv"])


if __name__ == "__main__":  # pragma: no cover - run by path only in manual checks
    main(sys.argv[1])
