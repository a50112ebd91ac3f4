"""The AGS score payload a post carries, and when it may be dated.

Moodle refuses a score whose timestamp is not later than the one it holds, to the second
(409; docs/LMS.md, "What the tool relies on"), so a post is dated at least one second
after the last one sent for that user: ``next_moment`` is that rule, the one place both
the store (a new score) and the outbox (a 409 answered by sending again) apply it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

MIN_STEP = timedelta(seconds=1)  # Moodle compares timestamps to the second


def ags_timestamp(moment: datetime) -> str:
    """An AGS timestamp: ISO 8601 UTC with milliseconds."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def next_moment(now: datetime, last: datetime | None) -> datetime:
    """When a post may be dated: ``now``, or one second after the ``last`` one if that is later."""
    return now if last is None else max(now, last + MIN_STEP)


def score_payload(*, user: str, score: float, max_score: float, progress: str, comment: str,
                  moment: datetime) -> dict[str, Any]:
    """The body of a score post (LTI AGS 2.0, "Score publish service")."""
    return {"userId": user, "scoreGiven": score, "scoreMaximum": max_score, "activityProgress": "Completed",
            "gradingProgress": progress, "timestamp": ags_timestamp(moment), "comment": comment}


def dated(payload: dict[str, Any]) -> datetime:
    """The moment a score payload is dated (its AGS timestamp, aware)."""
    return datetime.fromisoformat(str(payload["timestamp"]))


def redated(payload: dict[str, Any], now: datetime) -> dict[str, Any]:
    """``payload`` dated again, after its own timestamp (the platform answered 409 to it)."""
    return {**payload, "timestamp": ags_timestamp(next_moment(now, dated(payload)))}
