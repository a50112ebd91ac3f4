"""A pool lent to a child process: a Moodle sync run by ``autograder serve`` grades in the
service's own ``GraderPool`` rather than in grader processes of its own.

The sync runs in a child process (``service.moodle_sync``), the pool in the service's.
Over the pipe between them the child sends one batch (``RelayedGraders.grade``) and gets
each result back as it arrives; in the service, the batch is one more feed of the pool
(``Relay``), asked after the service's own queue. Both ways the messages are JSON text:
neither process unpickles what the other wrote. Results go back from the thread that
talks to the child, never from the pool's: a child slow to read never holds up the pool.
"""

from __future__ import annotations

import base64
import json
import queue
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

from autograder.course import Week
from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.formats.result_json import from_dict, to_dict
from autograder.grading.grader_process import send_json
from autograder.grading.loop import OnResult
from autograder.grading.pool import Feed, Job
from autograder.results import Participant, Status, SubmissionResult
from autograder.submission import Submission


def submission_to_dict(submission: Submission) -> dict[str, Any]:
    """A submission as JSON-ready data (its notebook in base64)."""
    content = submission.content
    return {"origin": submission.origin, "key": submission.key,
            "content": None if content is None else base64.b64encode(content).decode("ascii"),
            "participant": asdict(submission.participant) if submission.participant else None,
            "status": submission.status.value if submission.status else None, "message": submission.message,
            "seed": submission.seed}


def submission_from_dict(data: dict[str, Any]) -> Submission:
    """Inverse of ``submission_to_dict``."""
    return Submission(origin=str(data["origin"]), key=str(data["key"]),
                      content=None if data["content"] is None else base64.b64decode(data["content"]),
                      participant=Participant(**data["participant"]) if data["participant"] else None,
                      status=Status(data["status"]) if data["status"] else None, message=data["message"],
                      seed=data["seed"])


class RelayedGraders:
    """In the child: grade in the pool of the process at the other end of ``conn``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def grade(self, week: Week, submissions: Iterable[Submission],
              on_result: OnResult | None = None) -> list[SubmissionResult]:
        """Results in submission order; ``on_result`` sees each as it arrives. The week's
        hidden tests not loading there raise here, as they do in a pool of one's own."""
        batch = list(submissions)
        send_json(self.conn, {"op": "grade", "week": week.name,
                              "submissions": [submission_to_dict(s) for s in batch]})
        results: dict[int, SubmissionResult] = {}
        while len(results) < len(batch):
            message = json.loads(self.conn.recv_bytes())
            if message.get("op") == "fatal":
                kind = CourseError if message.get("kind") == "CourseError" else GradingError
                raise kind(str(message.get("message")))
            result = results[int(message["index"])] = from_dict(message["doc"])
            if on_result is not None:
                on_result(result)
        return [results[i] for i in range(len(batch))]


class Relay(Feed):
    """In the pool's process: one child's batch as a feed of the pool; what comes of it is
    sent back by ``flush``, called by the thread that talks to the child."""

    def __init__(self, conn: Connection, week_named: Callable[[str], Week]) -> None:
        self.conn = conn
        self.week_named = week_named
        self._jobs: deque[Job] = deque()
        self._lock = threading.Lock()
        self._replies: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.waker, self._wake = socket.socketpair()  # readable when replies wait for ``flush``
        self.waker.setblocking(False)
        self._wake.setblocking(False)

    def request(self, message: dict[str, Any]) -> None:
        """A ``grade`` message from the child: its submissions become the pool's work."""
        try:
            week = self.week_named(str(message["week"]))
        except AutograderError as exc:
            self._reply({"op": "fatal", "kind": type(exc).__name__, "message": str(exc)})
            return
        with self._lock:
            self._jobs.extend(Job(self, week, submission_from_dict(data), index)
                              for index, data in enumerate(message["submissions"]))

    def waiting(self, room: int) -> list[tuple[Week, int]]:
        with self._lock:
            return [(self._jobs[0].week, len(self._jobs))] if self._jobs else []

    def take(self, week: Week) -> Job | None:
        with self._lock:
            return self._jobs.popleft() if self._jobs and self._jobs[0].week == week else None

    def done(self, job: Job, result: SubmissionResult) -> None:
        self._reply({"op": "result", "index": job.tag, "doc": to_dict(result)})

    def broken(self, week: Week, error: AutograderError) -> None:
        with self._lock:
            if not self._jobs or self._jobs[0].week != week:
                return
            self._jobs.clear()
        self._reply({"op": "fatal", "kind": type(error).__name__, "message": str(error)})

    def pump(self) -> dict[str, Any] | None:
        """Hand the pool what the child asks and send back what came of it; the first other
        message from the child (its outcome), if one came."""
        while self.conn.poll():
            message = json.loads(self.conn.recv_bytes())
            if message.get("op") != "grade":
                return dict(message)
            self.request(message)
        self.flush()
        return None

    def _reply(self, message: dict[str, Any]) -> None:
        self._replies.put(message)
        try:
            self._wake.send(b"!")
        except OSError:  # already woken, or closed
            pass

    def flush(self) -> None:
        """Send the child what came of its batch so far (OSError once the child is gone)."""
        try:
            while self.waker.recv(4096):
                pass
        except OSError:
            pass
        while not self._replies.empty():
            send_json(self.conn, self._replies.get())

    def close(self) -> None:
        self.waker.close()
        self._wake.close()
