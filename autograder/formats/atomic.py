"""Every file the grader writes appears whole or not at all: the one place a file is written.

A run killed half-way (Ctrl-C, the machine going down, a full disk) must never leave a
half-written worksheet that Moodle would import, or a truncated result. Each writer
writes beside the target and renames over it: a rename within one folder is atomic. A
file made only once (``create_once``) is linked into place instead, so the first of
several writers wins. A copy (``copy_file``, also as ``shutil.copytree``'s
``copy_function``) is written the same way.

Every write of a file in the package goes through here (``tests/test_one_place.py`` scans
for any other), or writes into an ``atomic_path``'s partial file (a CSV writer, a zip, a
private key's mode). What is not an output file, and is written directly where it is:

- the kernel's control files (``execution/cgroup.py``: cgroupfs's ``cgroup.procs``,
  ``memory.max``...; ``worker/zygote.py``: ``/proc/self/oom_score_adj``): a write there is
  a request to the kernel, not content, and cannot be renamed into place;
- lock files opened only to hold ``flock`` on them (the service's runner, the sync's
  output folder, the platforms' file): nothing is written into them;
- ``/dev/null`` opened as a sink for output nobody reads (``testing/hidden.py``);
- the sandbox's mount points, empty files made to bind a file onto (``execution/launch.py``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A fresh path beside ``path`` to write to; renamed over ``path`` when the block ends
    without an error, removed when it raises. Two writers of one target never share it."""
    partial = _partial(path)
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _partial(path: Path) -> Path:
    """A fresh name beside ``path``, hidden, that no other writer of ``path`` uses."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")


def create_once(path: Path, make: Callable[[], bytes], *, mode: int) -> bytes:
    """What ``path`` holds, made by ``make`` (with ``mode``) if no process made it yet.

    Several processes may start on one folder at once (replicas on a shared volume): each
    writes its own partial file and links it to ``path``, which fails if ``path`` exists,
    so the first link wins and every process reads that one's content."""
    if not path.exists():
        partial = _partial(path)
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(make())
            with contextlib.suppress(FileExistsError):  # another process made it first: theirs is read
                os.link(partial, path)
        finally:
            partial.unlink(missing_ok=True)
    return path.read_bytes()


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step."""
    with atomic_path(path) as partial:
        partial.write_bytes(data)


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` as UTF-8, line endings kept as they are."""
    write_bytes(path, text.encode("utf-8"))


def copy_file(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Replace ``target`` with a copy of ``source`` (its bytes, mode and times, as ``shutil.copy2``)
    in one step; ``shutil.copytree(..., copy_function=copy_file)`` copies a folder file by file so."""
    with atomic_path(Path(target)) as partial:
        shutil.copy2(source, partial)
