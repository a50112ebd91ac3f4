"""What grading processes say to each other: one pydantic model per message, sent as JSON text.

Two pipes carry them, and neither end unpickles anything the other wrote:

- a ``GraderPool`` and each of its grader processes (``grading.pool``,
  ``grading.grader_process``): the pool sends ``Work`` (a submission, under the number its
  result must name) or ``NoMore``; the grader sends ``Next`` (ready for work), ``Watch``
  (the step it starts, and its budgets: ``grading.watch``), ``Result`` and ``Fatal`` (its
  week cannot be graded);
- a Moodle sync's process and the service's pool (``grading.relay``): the sync sends
  ``Grade`` (one batch), the service answers each submission with a ``Result`` or the
  batch with a ``Fatal``; the sync's last message is its run's outcome
  (``service.moodle_sync.RunOutcome``, a model too), not a grading message.

A submission crosses both, and a Dask task (``grading.distributed``), the one way:
``SubmissionData``, its notebook in base64. A result crosses as the result document
(``formats.result_json``). A message that does not parse is a ``pydantic.ValidationError``
naming the field, raised where it was received.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from autograder.exceptions import AutograderError, CourseError, GradingError
from autograder.results import Participant, Status
from autograder.submission import Submission


class Message(BaseModel):
    """Every message: strict about its fields, ``bytes`` in base64 on the wire."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")


class SubmissionData(Message):
    """A submission as it crosses from one process to another."""

    origin: str
    key: str
    content: bytes | None
    participant: Participant | None = None
    status: Status | None = None
    message: str | None = None
    seed: int | None = None

    @classmethod
    def of(cls, submission: Submission) -> SubmissionData:
        """``submission``'s data, to send."""
        return cls(origin=submission.origin, key=submission.key, content=submission.content,
                   participant=submission.participant, status=submission.status, message=submission.message,
                   seed=submission.seed)

    def submission(self) -> Submission:
        """The submission received."""
        return Submission(origin=self.origin, key=self.key, content=self.content, participant=self.participant,
                          status=self.status, message=self.message, seed=self.seed)


class Work(Message):
    """To a grader: grade ``submission``; its ``Result`` names ``index``."""

    op: Literal["work"] = "work"
    index: int
    submission: SubmissionData


class NoMore(Message):
    """To a grader: there is no more work for it; it ends."""

    op: Literal["no_more"] = "no_more"


class Next(Message):
    """From a grader: ready for the next submission."""

    op: Literal["next"] = "next"


class Watch(Message):
    """From a grader: a step starts (``what`` names it for the student); the wall and CPU
    seconds it may take (``grading.watch``)."""

    op: Literal["watch"] = "watch"
    what: str
    wall: float
    cpu: float


class Result(Message):
    """A submission's result document (``result_json.to_dict``), under the number it was sent with."""

    op: Literal["result"] = "result"
    index: int
    doc: dict[str, Any]


class Fatal(Message):
    """The week cannot be graded there (its hidden tests do not collect, the sandbox does not
    start): the error to raise on this side."""

    op: Literal["fatal"] = "fatal"
    kind: str
    message: str

    @classmethod
    def of(cls, error: AutograderError) -> Fatal:
        """``error`` to send."""
        return cls(kind=type(error).__name__, message=str(error))

    def error(self) -> AutograderError:
        """The error received: a ``CourseError`` stays one (the course is to fix), any other is a ``GradingError``."""
        return CourseError(self.message) if self.kind == CourseError.__name__ else GradingError(self.message)


class Grade(Message):
    """From a Moodle sync's process: grade this batch of ``week`` in the service's pool."""

    op: Literal["grade"] = "grade"
    week: str
    submissions: list[SubmissionData]


TO_GRADER: TypeAdapter[Work | NoMore] = TypeAdapter(Annotated[Work | NoMore, Field(discriminator="op")])
FROM_GRADER: TypeAdapter[Next | Watch | Result | Fatal] = TypeAdapter(
    Annotated[Next | Watch | Result | Fatal, Field(discriminator="op")])
TO_SYNC: TypeAdapter[Result | Fatal] = TypeAdapter(Annotated[Result | Fatal, Field(discriminator="op")])

M = TypeVar("M")


def send(conn: Connection, message: Message) -> None:
    """One message on a grading pipe, as JSON text."""
    conn.send_bytes(message.model_dump_json().encode())


def receive(conn: Connection, kind: TypeAdapter[M]) -> M:
    """The next message on ``conn``, one of ``kind``; blocks until it comes."""
    return kind.validate_json(conn.recv_bytes())
