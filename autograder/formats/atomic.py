"""Every file the grader writes appears whole or not at all.

A run killed half-way (Ctrl-C, the machine going down, a full disk) must never leave a
half-written worksheet that Moodle would import, or a truncated result. Each writer
writes beside the target and renames over it: a rename within one folder is atomic.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A fresh path beside ``path`` to write to; renamed over ``path`` when the block ends
    without an error, removed when it raises. Two writers of one target never share it."""
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step."""
    with atomic_path(path) as partial:
        partial.write_bytes(data)


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` as UTF-8, line endings kept as they are."""
    write_bytes(path, text.encode("utf-8"))
