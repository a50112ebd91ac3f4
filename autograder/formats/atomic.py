"""Every file the grader writes appears whole or not at all.

A run killed half-way (Ctrl-C, the machine going down, a full disk) must never leave a
half-written worksheet that Moodle would import, or a truncated result. Each writer
writes beside the target and renames over it: a rename within one folder is atomic. A
file made only once (``create_once``) is linked into place instead, so the first of
several writers wins.
"""

from __future__ import annotations

import contextlib
import os
import secrets
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
