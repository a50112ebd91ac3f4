"""Property tests of the frame reader over real pipes: whatever a worker sends (valid
frames in any fragmentation, garbage, truncated frames, silence), the grader's reader
returns the frame, or raises ``ProtocolError``/``EOFError``/``FrameTimeout``; it never
hangs past its deadline and never reads past ``max_size``."""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.exceptions import FrameTimeout, ProtocolError
from autograder.worker.codec import loads_message
from autograder.worker.framing import HEADER, read_frame, write_frame

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# small frames, and frames larger than a pipe's buffer (a short pattern repeated)
LARGE = st.tuples(st.binary(min_size=1, max_size=32), st.integers(70_000, 200_000)).map(
    lambda t: (t[0] * (t[1] // len(t[0]) + 1))[:t[1]])
PAYLOADS = st.binary(max_size=4096) | LARGE


class Pipe:
    """A real pipe; the write end can be closed once (a worker hanging up)."""

    def __init__(self, *, nonblocking_read: bool) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, not nonblocking_read)
        self.w_open = True

    def hang_up(self) -> None:
        if self.w_open:
            os.close(self.w)
            self.w_open = False

    def close(self) -> None:
        self.hang_up()
        os.close(self.r)


@contextmanager
def pipe(*, nonblocking_read: bool) -> Iterator[Pipe]:
    p = Pipe(nonblocking_read=nonblocking_read)
    try:
        yield p
    finally:
        p.close()


def send_in_pieces(p: Pipe, data: bytes, cuts: list[int]) -> threading.Thread:
    """Write ``data`` from another thread, split at ``cuts``, with a pause between pieces."""

    def run() -> None:
        edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
        for start, end in zip(edges, edges[1:]):
            view = memoryview(data)[start:end]
            while view:
                view = view[os.write(p.w, view):]
            time.sleep(0.0005)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@FAST
@given(payloads=st.lists(PAYLOADS, min_size=1, max_size=3), cuts=st.lists(st.integers(0, 300_000), max_size=6),
       nonblocking=st.booleans())
def test_frames_arrive_whole_however_they_are_split(payloads: list[bytes], cuts: list[int], nonblocking: bool):
    stream = b"".join(HEADER.pack(len(p)) + p for p in payloads)
    with pipe(nonblocking_read=nonblocking) as p:
        writer = send_in_pieces(p, stream, cuts)
        got = [read_frame(p.r, time.monotonic() + 10) for _ in payloads]
        writer.join()
    assert got == payloads


@FAST
@given(payload=PAYLOADS)
def test_write_frame_and_read_frame_agree_with_deadlines(payload: bytes):
    with pipe(nonblocking_read=True) as p:
        os.set_blocking(p.w, False)
        result: list[bytes] = []
        reader = threading.Thread(target=lambda: result.append(read_frame(p.r, time.monotonic() + 10)))
        reader.start()
        write_frame(p.w, payload, time.monotonic() + 10)
        reader.join()
    assert result == [payload]


@FAST
@given(garbage=st.binary(max_size=2048), max_size=st.integers(0, 4096))
def test_garbage_gives_a_frame_or_a_clean_error(garbage: bytes, max_size: int):
    with pipe(nonblocking_read=False) as p:
        send_in_pieces(p, garbage, [len(garbage) // 2]).join()
        p.hang_up()
        try:
            frame = read_frame(p.r, time.monotonic() + 5, max_size=max_size)
        except (ProtocolError, EOFError):
            return
    (length,) = struct.unpack(">I", garbage[:4])
    assert length <= max_size and frame == garbage[4:4 + length]


@FAST
@given(payload=st.binary(min_size=1, max_size=5000), data=st.data())
def test_a_worker_dying_mid_frame_is_an_eof(payload: bytes, data: st.DataObject):
    frame = HEADER.pack(len(payload)) + payload
    cut = data.draw(st.integers(0, len(frame) - 1))
    with pipe(nonblocking_read=True) as p:
        send_in_pieces(p, frame[:cut], [cut // 2]).join()
        p.hang_up()
        with pytest.raises(EOFError):
            read_frame(p.r, time.monotonic() + 5)


@FAST
@given(length=st.integers(1025, 2**32 - 1))
def test_an_oversized_announcement_is_refused_before_reading_it(length: int):
    with pipe(nonblocking_read=True) as p:
        os.write(p.w, HEADER.pack(length))  # and nothing else: the reader must not wait for it
        started = time.monotonic()
        with pytest.raises(ProtocolError):
            read_frame(p.r, started + 5, max_size=1024)
        assert time.monotonic() - started < 1


@settings(max_examples=8, deadline=None)
@given(prefix=st.binary(max_size=40))
def test_silence_or_a_stalled_frame_times_out_at_the_deadline(prefix: bytes):
    frame = HEADER.pack(100) + b"x" * 100
    sent = frame[:min(len(prefix), len(frame) - 1)]
    with pipe(nonblocking_read=True) as p:
        if sent:
            os.write(p.w, sent)
        started = time.monotonic()
        with pytest.raises(FrameTimeout):
            read_frame(p.r, started + 0.2)
        assert 0.19 <= time.monotonic() - started < 1.5


def test_a_stalled_reader_times_out_the_writer():
    """A worker that stops reading cannot block the grader's write past its deadline."""
    with pipe(nonblocking_read=True) as p:
        os.set_blocking(p.w, False)
        started = time.monotonic()
        with pytest.raises(FrameTimeout):
            write_frame(p.w, b"y" * (1 << 20), started + 0.2)
        assert time.monotonic() - started < 1.5


@FAST
@given(raw=st.binary(max_size=512) | st.text(max_size=200).map(str.encode)
       | st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                      max_leaves=20).map(lambda v: repr(v).encode()))
def test_any_frame_content_is_a_message_or_a_protocol_error(raw: bytes):
    """What the reader hands on is parsed defensively: an object, or ``ProtocolError``."""
    try:
        message = loads_message(raw)
    except ProtocolError:
        return
    assert type(message) is dict


def test_deep_nesting_in_a_frame_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        loads_message(b"[" * 200_000 + b"]" * 200_000)
    with pytest.raises(ProtocolError):
        loads_message(b'{"a": NaN}')
