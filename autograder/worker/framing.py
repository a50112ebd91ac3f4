"""Length-prefixed frames over pipes, with deadlines and a size cap on both sides.

A frame is a 4-byte big-endian length and that many bytes. Reading never trusts the
length beyond ``max_size`` and never blocks past the deadline: a worker that sends
garbage, nothing, or dies mid-frame gives a ``ProtocolError``/``FrameTimeout``/``EOFError``
instead of a hung or exhausted grader.
"""

from __future__ import annotations

import os
import select
import struct
import time

from autograder.exceptions import FrameTimeout, ProtocolError

HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20  # 64 MiB: larger than any legitimate answer


def _wait(fd: int, deadline: float | None, *, write: bool) -> None:
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise FrameTimeout("deadline passed")
        r, w, _ = select.select([] if write else [fd], [fd] if write else [], [], remaining)
        if r or w:
            return


def _due(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise FrameTimeout("deadline passed")


# Each read or write is tried first and waited for (``select``) only when the pipe is not
# ready (``BlockingIOError``, a non-blocking fd): a request and its reply take two system
# calls fewer than waiting first, and every step still checks the deadline.


def write_frame(fd: int, payload: bytes, deadline: float | None = None) -> None:
    """Write one frame; ``fd`` must be non-blocking when a deadline is given."""
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        _due(deadline)
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            _wait(fd, deadline, write=True)
            continue
        data = data[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    while n:
        _due(deadline)
        try:
            chunk = os.read(fd, min(n, 1 << 20))
        except BlockingIOError:
            _wait(fd, deadline, write=False)
            continue
        if not chunk:
            raise EOFError("peer closed the pipe")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None, max_size: int = MAX_FRAME) -> bytes:
    """Read one frame, refusing one announced larger than ``max_size``."""
    (length,) = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    if length > max_size:
        raise ProtocolError(f"frame of {length} bytes exceeds the {max_size}-byte cap")
    return _read_exact(fd, length, deadline)
