"""The counted score: which attempt's score the gradebook shows for a student and week,
and noting it (with its AGS post) when it changes.

Attempts' scores are the gradebook's (``attempt_queue.read_attempts``), so a mark stored
there from outside the service (``autograder merge-manual`` into its database) changes a
counted score without passing through here: ``refresh_scores``, run when the service
starts, notes and posts every counted score that differs from the last one noted."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Literal, cast

from sqlalchemy import Connection, select

from autograder.database import Database
from autograder.database.tables import attempts, service_scores
from autograder.formats.points import format_points
from autograder.service.attempt_queue import SELECT_ATTEMPTS, Attempt, owned_attempts, read_attempts
from autograder.service.posts import enqueue, lineitem_of, lock_scores


@dataclass(frozen=True)
class CountedScore:
    """What the gradebook should show for a user and week, and whether it is final."""

    score: float
    max_score: float
    progress: Literal["FullyGraded", "PendingManual"]
    attempt: Attempt


def counted(attempts: list[Attempt]) -> CountedScore | None:
    """Of a student's attempts at a week (first to last): the best or last graded one, as the
    latest upload's policy said. For "best", pending hand-graded tasks count 0 and a tie
    goes to the later attempt. None before any attempt is graded.

    An attempt a regrade queued again counts with its last result until the new one lands
    (``Attempt.scored``): counted while the queue is still at it, it would drop to another
    attempt's score (or none) and that would be posted to the LMS in between."""
    graded = [a for a in attempts if a.scored and a.counted is not None]
    if not graded:
        return None
    chosen = graded[-1]
    if attempts[-1].counted_mode == "best":
        chosen = max(graded, key=lambda a: (a.counted, a.number))
    progress: Literal["FullyGraded", "PendingManual"] = "PendingManual" if chosen.pending > 0 else "FullyGraded"
    return CountedScore(score=cast(float, chosen.counted), max_score=chosen.max_score, progress=progress,
                        attempt=chosen)


def _noted(now: CountedScore) -> tuple[float, float, str, int]:
    """What ``service_scores`` notes of a counted score (a change in any is posted)."""
    return now.score, now.max_score, now.progress, now.attempt.id


def refresh_score(database: Database, db: Connection, context: str, user: str, week: str) -> bool:
    """Inside a write transaction: if the counted score (or whether it is final) changed,
    note it and enqueue its post (when the week's line item is known); whether it changed."""
    lock_scores(database, db, context, week)
    now = counted(owned_attempts(db, context=context, user=user, week=week))
    if now is None:
        return False
    where = (service_scores.c.context == context, service_scores.c.user == user, service_scores.c.week == week)
    old = db.execute(select(service_scores.c.score, service_scores.c.max_score, service_scores.c.progress,
                            service_scores.c.attempt_id).where(*where)).first()
    if old is not None and tuple(old) == _noted(now):
        return False
    late = f" after a late penalty of {now.attempt.penalty:.0%}" if now.attempt.penalty else ""
    pending = " Hand-graded tasks are not marked yet." if now.progress == "PendingManual" else ""
    points = f"{format_points(now.score)} of {format_points(now.max_score)} points"
    comment = f"Attempt {now.attempt.number}: {points}{late}.{pending}"
    db.execute(database.upsert(service_scores, {
        "context": context, "user": user, "week": week, "score": now.score, "max_score": now.max_score,
        "progress": now.progress, "attempt_id": now.attempt.id, "comment": comment}, keys=("context", "user", "week")))
    url = lineitem_of(db, context, week)
    if url is not None:
        enqueue(database, db, context, user, week, url)
    return True


def refresh_scores(database: Database) -> int:
    """Note and post every counted score that differs from the last one noted; how many.

    Such a score comes from a mark the gradebook took that the service did not store itself
    (merged by ``autograder merge-manual``) or whose score change a stopped service never
    noted. Each week is read in two queries (its attempts with their results, and its
    noted scores); only a student whose score differs takes the write lock."""
    with database.read() as db:
        weeks = list(db.execute(select(attempts.c.week).where(attempts.c.state == "graded").distinct()
                                .order_by(attempts.c.week)).scalars())
    changed = 0
    for week in weeks:
        with database.read() as db:
            every = read_attempts(db, SELECT_ATTEMPTS.where(attempts.c.week == week)
                                  .order_by(attempts.c.context, attempts.c.user, attempts.c.number))
            noted = {(context, user): tuple(rest) for context, user, *rest in db.execute(select(
                service_scores.c.context, service_scores.c.user, service_scores.c.score, service_scores.c.max_score,
                service_scores.c.progress, service_scores.c.attempt_id).where(service_scores.c.week == week))}
        for (context, user), theirs in groupby(every, key=lambda a: (a.context, a.user)):
            now = counted(list(theirs))
            if now is not None and noted.get((context, user)) != _noted(now):
                with database.write() as db:
                    changed += refresh_score(database, db, context, user, week)
    return changed
