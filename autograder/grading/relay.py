"""A pool lent to a child process: a Moodle sync run by ``autograder serve`` grades in the
service's own ``GraderPool`` rather than in grader processes of its own.

The sync runs in a child process (``service.moodle_sync``), the pool in the service's.
Over the pipe between them the child sends one batch (``RelayedGraders.grade``) and gets
each result back as it arrives; in the service, the batch is one more feed of the pool
(``Relay``), asked after the service's own queue. Both ways the messages are
``grading.messages``' models as JSON text (the batch a ``Grade``, each submission's outcome
a ``Result`` or the week's a ``Fatal``): neither process unpickles what the other wrote.
Results go back from the thread that talks to the child, never from the pool's: a child
slow to read never holds up the pool.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection
from typing import Any

from autograder.course import Week
from autograder.exceptions import AutograderError
from autograder.formats.result_json import from_dict, to_dict
from autograder.grading.loop import OnResult
from autograder.grading.messages import TO_SYNC, Fatal, Grade, Message, Result, SubmissionData, receive, send
from autograder.grading.pool import Feed, Job
from autograder.results import SubmissionResult
from autograder.submission import Submission


class RelayedGraders:
    """In the child: grade in the pool of the process at the other end of ``conn``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def grade(self, week: Week, submissions: Iterable[Submission],
              on_result: OnResult | None = None) -> list[SubmissionResult]:
        """Results in submission order; ``on_result`` sees each as it arrives. The week's
        hidden tests not loading there raise here, as they do in a pool of one's own."""
        batch = list(submissions)
        send(self.conn, Grade(week=week.name, submissions=[SubmissionData.of(s) for s in batch]))
        results: dict[int, SubmissionResult] = {}
        while len(results) < len(batch):
            message = receive(self.conn, TO_SYNC)
            if isinstance(message, Fatal):
                raise message.error()
            result = results[message.index] = from_dict(message.doc)
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
        self._replies: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self.waker, self._wake = socket.socketpair()  # readable when replies wait for ``flush``
        self.waker.setblocking(False)
        self._wake.setblocking(False)

    def request(self, message: Grade) -> None:
        """A batch from the child: its submissions become the pool's work."""
        try:
            week = self.week_named(message.week)
        except AutograderError as exc:
            self._reply(Fatal.of(exc))
            return
        with self._lock:
            self._jobs.extend(Job(self, week, data.submission(), index)
                              for index, data in enumerate(message.submissions))

    def waiting(self, room: int) -> list[tuple[Week, int]]:
        with self._lock:
            return [(self._jobs[0].week, len(self._jobs))] if self._jobs else []

    def take(self, week: Week) -> Job | None:
        with self._lock:
            return self._jobs.popleft() if self._jobs and self._jobs[0].week == week else None

    def done(self, job: Job, result: SubmissionResult) -> None:
        self._reply(Result(index=job.tag, doc=to_dict(result)))

    def broken(self, week: Week, error: AutograderError) -> None:
        with self._lock:
            if not self._jobs or self._jobs[0].week != week:
                return
            self._jobs.clear()
        self._reply(Fatal.of(error))

    def pump(self) -> dict[str, Any] | None:
        """Hand the pool what the child asks and send back what came of it; the first other
        message from the child (its run's outcome: ``service.moodle_sync.RunOutcome`` parses it), if one came."""
        while self.conn.poll():
            message = json.loads(self.conn.recv_bytes())
            if message.get("op") != "grade":
                return dict(message)
            self.request(Grade.model_validate(message))
        self.flush()
        return None

    def _reply(self, message: Message) -> None:
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
            send(self.conn, self._replies.get())

    def close(self) -> None:
        self.waker.close()
        self._wake.close()
