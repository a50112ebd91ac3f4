"""The worker's request loop over its two pipes."""

from __future__ import annotations

import sys

from autograder.exceptions import ProtocolError
from autograder.worker.codec import dumps_message, loads_message
from autograder.worker.core import WorkerCore
from autograder.worker.framing import read_frame, write_frame


def serve(core: WorkerCore, req_fd: int, resp_fd: int) -> None:
    """Answer requests until ``bye`` or the grader closes the pipe.

    Every reply echoes the request's ``seq`` so the grader can reject out-of-turn frames.
    """
    while True:
        try:
            request = loads_message(read_frame(req_fd))
        except (EOFError, ProtocolError):
            return
        if request.get("op") == "bye":
            return
        reply = core.handle(request)
        reply["seq"] = request.get("seq")
        sys.stdout.flush()
        sys.stderr.flush()
        write_frame(resp_fd, dumps_message(reply))
