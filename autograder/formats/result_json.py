"""The per-submission JSON document: Gradescope's ``results.json`` shape plus our fields.

One encoder, one reader. ``to_dict`` is the document (what the gradebook stores and grader
processes send each other); ``encode`` is its text as every result file holds it (the
batch's ``<key>.json``, the service's ``attempt-<id>.json``) and ``encode_all`` the array
``autograder grade --json`` prints. ``from_dict`` and ``decode`` read a document back
through ``ResultDocument``, a pydantic model of it, so a malformed one (edited by hand,
cut short, written by something else) is one ``ResultDocumentError`` naming every wrong
field, not a ``KeyError`` deep in a caller. The two directions must stay inverse:
computed fields (``score``, ``max_score``, ``pending_points``, a task's ``pending``) are
written for readers and recomputed on reading.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from autograder.exceptions import ResultDocumentError
from autograder.results import (
    Participant,
    Status,
    SubmissionResult,
    TaskResult,
    TestResult,
    Visibility,
)
from autograder.text import scrub_tree


def _number(value: object) -> int | float:
    """Points and seconds as the JSON wrote them (an int stays an int), so a document read
    and written again has the same bytes."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number", "Input should be a number")
    return value


Number = Annotated[int | float, PlainValidator(_number)]


class _Part(BaseModel):
    """A part of the document: keys this version does not know (a newer grader's) are ignored,
    as they always were, and a read document is not changed afterwards."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ParticipantDocument(_Part):
    participant_id: str | None = None
    full_name: str | None = None
    group_id: str | None = None
    group_name: str | None = None
    folder: str | None = None


class TaskDocument(_Part):
    task: int
    title: str = ""
    score: Number
    max_score: Number
    manual: bool = False
    not_attempted: bool = False
    comment: str = ""
    marked: bool = False
    stale: bool = False
    answer_sha256: str | None = None
    autograded_score: Number | None = None
    override_reason: str = ""


class TestDocument(_Part):
    name: str
    task: int
    score: Number
    max_score: Number
    output: str = ""
    visibility: Visibility = Visibility.VISIBLE
    not_attempted: bool = False
    timed_out: bool = False


class ResultDocument(_Part):
    """One submission's result document as ``to_dict`` writes it (its computed totals left out)."""

    submission: str
    key: str
    week: str = ""
    status: Status
    tasks: list[TaskDocument] = []
    tests: list[TestDocument] = []
    messages: list[str] = []
    participant: ParticipantDocument | None = None
    submission_sha256: str | None = None
    tests_sha256: str | None = None
    grader_version: str = ""
    duration_s: Number = 0.0
    seed: int | None = None
    language: str | None = ""  # None in documents of some earlier versions: the source's language

    def result(self) -> SubmissionResult:
        """The result this document records."""
        return SubmissionResult(
            submission=self.submission,
            key=self.key,
            week=self.week,
            status=self.status,
            tasks=[TaskResult(task=t.task, title=t.title, score=t.score, max_score=t.max_score, manual=t.manual,
                              not_attempted=t.not_attempted, comment=t.comment, marked=t.marked, stale=t.stale,
                              answer_sha256=t.answer_sha256, autograded_score=t.autograded_score,
                              override_reason=t.override_reason) for t in self.tasks],
            tests=[TestResult(name=t.name, task=t.task, score=t.score, max_score=t.max_score, output=t.output,
                              visibility=t.visibility, not_attempted=t.not_attempted, timed_out=t.timed_out)
                   for t in self.tests],
            messages=list(self.messages),
            participant=Participant(**self.participant.model_dump()) if self.participant is not None else None,
            submission_sha256=self.submission_sha256,
            tests_sha256=self.tests_sha256,
            grader_version=self.grader_version,
            duration_s=self.duration_s,
            seed=self.seed,
            language=self.language or "",
        )


def to_dict(result: SubmissionResult) -> dict[str, Any]:
    """The JSON-ready document for one submission, every string encodable as UTF-8.

    Every write of a result goes through here (its JSON file, the gradebook, ``--json``,
    the messages between grader processes), so this is where text a submission chose
    (an exception message, a file name that is not UTF-8) is scrubbed (``autograder.text``).
    """
    document: dict[str, Any] = scrub_tree({
        "submission": result.submission,
        "key": result.key,
        "week": result.week,
        "status": result.status.value,
        "score": result.score,
        "max_score": result.max_score,
        "pending_points": result.pending_points,
        "tasks": [
            {
                "task": t.task,
                "title": t.title,
                "score": t.score,
                "max_score": t.max_score,
                "manual": t.manual,
                "not_attempted": t.not_attempted,
                "comment": t.comment,
                "pending": t.pending,
                "marked": t.marked,
                "stale": t.stale,
                "answer_sha256": t.answer_sha256,
                **({"autograded_score": t.autograded_score, "override_reason": t.override_reason}
                   if t.overridden else {}),
            }
            for t in result.tasks
        ],
        "tests": [
            {
                "name": t.name,
                "task": t.task,
                "score": t.score,
                "max_score": t.max_score,
                "output": t.output,
                "visibility": t.visibility.value,
                "not_attempted": t.not_attempted,
                "timed_out": t.timed_out,
            }
            for t in result.tests
        ],
        "messages": list(result.messages),
        "participant": asdict(result.participant) if result.participant else None,
        "submission_sha256": result.submission_sha256,
        "tests_sha256": result.tests_sha256,
        "grader_version": result.grader_version,
        "duration_s": round(result.duration_s, 4),
        "seed": result.seed,
        "language": result.language,
    })
    return document


def encode(result: SubmissionResult) -> str:
    """The text of ``result``'s JSON file: the document, indented by one, UTF-8 as is, one final newline."""
    return json.dumps(to_dict(result), ensure_ascii=False, indent=1) + "\n"


def encode_all(results: Iterable[SubmissionResult]) -> str:
    """Several documents as one JSON array (``autograder grade --json``), laid out as ``encode`` lays out one."""
    return json.dumps([to_dict(r) for r in results], ensure_ascii=False, indent=1) + "\n"


def from_dict(data: Any, *, where: str = "result document") -> SubmissionResult:
    """Inverse of ``to_dict``; computed fields (score, max_score) are recomputed.

    ResultDocumentError, naming ``where`` and every wrong field, when ``data`` is not a
    document ``to_dict`` could have written."""
    try:
        return ResultDocument.model_validate(data).result()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the document'}: {e['msg']}"
                             for e in exc.errors(include_url=False))
        raise ResultDocumentError(f"{where} does not hold a result as this autograder writes it ({problems}): it was "
                                  "edited or cut short; grade the submission again (--regrade) to write it anew"
                                  ) from None


def decode(text: str | bytes, *, where: str = "result document") -> SubmissionResult:
    """Inverse of ``encode`` (any JSON layout of the document reads), as ``from_dict`` checks it."""
    try:
        data = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise ResultDocumentError(f"{where} does not hold JSON ({exc}): it was edited or cut short; grade the "
                                  "submission again (--regrade) to write it anew") from None
    return from_dict(data, where=where)
