"""The per-submission JSON document: Gradescope's ``results.json`` shape plus our fields.

``to_dict`` is what ``autograder grade --json`` prints and ``--out`` writes; ``from_dict``
reads it back (the gradebook stores results this way), so the two must stay inverse.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from autograder.results import (
    Participant,
    Status,
    SubmissionResult,
    TaskResult,
    TestResult,
    Visibility,
)
from autograder.text import scrub_tree


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


def from_dict(data: dict[str, Any]) -> SubmissionResult:
    """Inverse of ``to_dict``; computed fields (score, max_score) are recomputed."""
    return SubmissionResult(
        submission=data["submission"],
        key=data["key"],
        week=data.get("week", ""),
        status=Status(data["status"]),
        tasks=[
            TaskResult(
                task=t["task"],
                title=t.get("title", ""),
                score=t["score"],
                max_score=t["max_score"],
                manual=t.get("manual", False),
                not_attempted=t.get("not_attempted", False),
                comment=t.get("comment", ""),
                marked=t.get("marked", False),
                stale=t.get("stale", False),
                answer_sha256=t.get("answer_sha256"),
            )
            for t in data.get("tasks", [])
        ],
        tests=[
            TestResult(
                name=t["name"],
                task=t["task"],
                score=t["score"],
                max_score=t["max_score"],
                output=t.get("output", ""),
                visibility=Visibility(t.get("visibility", "visible")),
                not_attempted=t.get("not_attempted", False),
                timed_out=t.get("timed_out", False),
            )
            for t in data.get("tests", [])
        ],
        messages=list(data.get("messages", [])),
        participant=Participant(**data["participant"]) if data.get("participant") else None,
        submission_sha256=data.get("submission_sha256"),
        tests_sha256=data.get("tests_sha256"),
        grader_version=data.get("grader_version", ""),
        duration_s=data.get("duration_s", 0.0),
        seed=data.get("seed"),
        language=str(data.get("language") or ""),
    )
