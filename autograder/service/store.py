"""The grading service's memory: one facade over attempts, the grading queue, counted
scores and the AGS outbox, with the gradebook they share.

Everything lives in one database (``autograder.database``): by default the gradebook's
SQLite file in the service's data folder, or the URL ``database`` names (PostgreSQL, so
several service processes can share it). The gradebook is the only record of a graded
attempt's result (key ``attempt-<id>``): its score, pending points and feedback are read
from there with the marks applied (``attempt_queue.read_attempts``, ``result``), never
from a copy in the attempt's row or a file read back, so manual marks are the gradebook's
marks (tied to the answer they were given to, carried to a later attempt with the same
answer by ``Gradebook.record``) and a mark merged with the CLI's ``merge-manual`` is what
the next page shows. The attempt's row keeps the queue's state. Each state change is one
transaction, and the score post it causes is enqueued in that same transaction; a counted
score changed from outside (a merged mark) is noted and posted by ``refresh_scores`` when
the service starts: a process killed at any moment restarts with no attempt graded twice
into the record and no score change lost.

The jobs live in their own modules: ``users.py`` (who launched), ``attempt_queue.py``
(uploads, attempts and the queue), ``counting.py`` (the counted-score rule), ``posts.py``
and ``ags.py`` (the outbox's rows and the payload's timestamp rule); the result JSON and feedback
page are rendered from the gradebook by ``autograder.publish`` (``publish_attempt`` writes them
under ``results/<week>/`` when a result or a mark is stored, ``attempt_page`` renders the page for
a request). This class joins them where a step spans several (grading, marking).

Uploads are stored once per content (``uploads/<sha256[:2]>/<sha256>.ipynb``), written
before the attempt that names them. Every query a student's request can reach filters by
``(context, user)``; ``context`` is the launch's ``"<iss>|<deployment_id>|<context id>"``,
``user`` its ``sub``. Instructors' queries filter by ``context``.

For the web app: ``attempt(id, context=..., user=...)`` filters in SQL (pass them on
student routes); ``mark(...)`` stores a hand mark and re-posts the score, ``override(...)`` an
instructor's points for an autograded task in place of the checks' (``remove_override(...)``
takes them back), re-posting it too; ``regrade(...)``
re-queues, each attempt's last result counting until its new one lands, and
``regrade_status(...)`` says how far it is; ``result(...)`` gives the gradebook's result with marks applied (the marking
form's data) and ``feedback(...)`` its feedback page; ``Post.state`` may also be
``"superseded"`` (a newer score for the same user replaced it before it was sent);
``Attempt.penalty`` is a fraction of ``max_score``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from sqlalchemy import update

from autograder.course import Course, normalise_week_name
from autograder.database import clock, open_database
from autograder.database.tables import attempts
from autograder.exceptions import CourseError, GradebookError
from autograder.formats.atomic import write_bytes
from autograder.gradebook import FILENAME, Gradebook
from autograder.i18n.runtime import N_
from autograder.publish import attempt_page, publish_attempt
from autograder.results import SubmissionResult
from autograder.service.attempt_queue import MAX_TRIES, Attempt, AttemptQueue, AttemptState
from autograder.service.claims import CLAIM_TTL_S
from autograder.service.counting import CountedScore, counted, refresh_score, refresh_scores
from autograder.service.policy import WeekPolicy
from autograder.service.posts import Post, Posts, PostState
from autograder.service.users import Users

__all__ = ["MAX_TRIES", "Attempt", "AttemptState", "CountedScore", "Post", "PostState", "Store"]


class Store:
    """The service's data folder (``uploads/``, ``results/``) and its database: by default
    ``gradebook.sqlite`` in the folder, or the database URL ``database`` names."""

    def __init__(self, root: Path, course: Course | None = None, *, database: str | None = None,
                 claim_ttl_s: float = CLAIM_TTL_S) -> None:
        self.root = Path(root)
        self.course = course  # for feedback pages in the student's language (the week's catalogs)
        self.root.mkdir(parents=True, exist_ok=True)
        self.database = open_database(database or self.root / FILENAME)  # creates or migrates every table
        self.gradebook = Gradebook(self.database, owned=False)
        self.users, self.ags_posts = Users(self.database), Posts(self.database)
        self.queue = AttemptQueue(self.database, claim_ttl_s=claim_ttl_s)  # claims expire after claim_ttl_s
        try:
            self.queue.queue_under_canonical_names()
        except BaseException:
            self.close()
            raise
        # the calls the web app, the runner and the outbox make, each answered by its module
        users, queue, posts = self.users, self.queue, self.ags_posts
        self.remember_user, self.user_name, self.user_names = users.remember_user, users.user_name, users.user_names
        self.attempt, self.attempts, self.week_attempts = queue.attempt, queue.attempts, queue.week_attempts
        self.claim, self.release, self.fail, self.regrade = queue.claim, queue.release, queue.fail, queue.regrade
        self.regrade_status = queue.regrade_status
        self.queue_position, self.queued_weeks = queue.queue_position, queue.queued_weeks
        self.oldest_queued_week, self.requeue_interrupted = queue.oldest_queued_week, queue.requeue_interrupted
        self.set_lineitem, self.lineitem, self.posts = posts.set_lineitem, posts.lineitem, posts.posts
        self.claim_due_posts, self.newer_post_exists = posts.claim_due, posts.newer_post_exists
        self.renew_post_claims, self.post_done, self.post_retry = posts.renew_claims, posts.post_done, posts.post_retry
        self.post_failed, self.post_superseded = posts.post_failed, posts.post_superseded
        self.retry_post = posts.retry_post

    def close(self) -> None:
        self.queue.close()
        self.database.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- uploads ------------------------------------------------------------------------------

    def upload_path(self, content_hash: str) -> Path:
        return self.root / "uploads" / content_hash[:2] / f"{content_hash}.ipynb"

    def content(self, attempt: Attempt) -> bytes:
        """The notebook an attempt uploaded."""
        return self.upload_path(attempt.content_hash).read_bytes()

    def submit(self, *, context: str, user: str, week: str, content: bytes, policy: WeekPolicy,
               now: datetime) -> Attempt:
        """Record an upload as a queued attempt, or raise ``AttemptRefused`` saying why.

        The file is stored (once per content) before the attempt names it, and the policy
        is checked in the transaction that inserts the attempt. ``week`` is the canonical name
        (``week01``): an alias would be a queue no grader claims and a count no limit sees."""
        if week != normalise_week_name(week):
            raise CourseError(f"{week!r} is not a canonical week name (week01 ...): normalise it before submitting")
        content_hash = hashlib.sha256(content).hexdigest()
        path = self.upload_path(content_hash)
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, content)
        return self.queue.add(context=context, user=user, week=week, content_hash=content_hash, policy=policy,
                              now=now)

    def result(self, attempt_id: int, *, context: str, user: str | None = None) -> SubmissionResult | None:
        """A graded attempt's result with hand marks applied (while a regrade is at it, its last
        one); None if not graded or not theirs."""
        attempt = self.attempt(attempt_id, context=context, user=user)
        if attempt is None or not attempt.scored:
            return None
        return self.gradebook.result(attempt.week, attempt.key)

    def feedback(self, attempt: Attempt) -> str | None:
        """The feedback page of an attempt's result as the gradebook holds it now (marks
        applied); None before it has one."""
        result = self.gradebook.result(attempt.week, attempt.key)
        if result is None:
            return None
        return attempt_page(self.course, result, week_title=attempt.title or attempt.week)

    def results_of(self, attempts: Sequence[Attempt]) -> dict[int, SubmissionResult]:
        """The gradebook's result (marks applied) of each of ``attempts`` that has one, by
        attempt id: one read per week, however many attempts."""
        by_week: dict[str, dict[str, int]] = {}
        for attempt in attempts:
            by_week.setdefault(attempt.week, {})[attempt.key] = attempt.id
        return {ids[r.key]: r for week, ids in by_week.items() for r in self.gradebook.results(week, keys=list(ids))}

    # --- grading ------------------------------------------------------------------------------

    def seed_for(self, attempt: Attempt) -> int | None:
        """The seed an earlier grading of this very attempt drew, so a regrade reproduces it."""
        return self.gradebook.recorded_seed(attempt.week, attempt.key, submission_sha256=attempt.content_hash)

    def record_result(self, attempt_id: int, result: SubmissionResult, *, week_title: str) -> Attempt | None:
        """Store a graded attempt: gradebook result (its JSON and feedback page written from
        it), then in one transaction the attempt's state and, if the counted score changed,
        its AGS post.

        Only while this process still holds the attempt's claim: None, writing nothing, if
        another replica took the attempt over (this process stalled past the claim's
        lifetime); that replica's result stands, even if a regrade queued the attempt since.
        The claim is checked and renewed before anything is written (``still_held``: the
        writes then have a whole claim lifetime) and the attempt's row is written under it.

        Marks given to the same student's other attempts carry over to this one where the
        answer is the same text (``Gradebook.record``'s ``carry_from``)."""
        claim = self.queue.claim_of(attempt_id)
        attempt = self.attempt(attempt_id)
        if attempt is None:
            raise GradebookError(f"no attempt {attempt_id} in {self.database.where}")
        if not self.queue.still_held(attempt_id):
            self.queue.let_go(attempt_id)
            return None
        result.key, result.week = attempt.key, attempt.week
        others = [a.key for a in self.attempts(context=attempt.context, user=attempt.user, week=attempt.week)
                  if a.id != attempt.id]
        self.gradebook.record(result, carry_from=others)
        self._publish(attempt, week_title)
        with self.database.write() as db:
            stored = db.execute(update(attempts).where(self.queue.owned(attempt_id, claim)).values(
                state="graded", title=week_title, graded_at=clock.now(), message=None, claimed_at=None,
                claimed_by=None)).rowcount == 1
            if stored:
                refresh_score(self.database, db, attempt.context, attempt.user, attempt.week)
        self.queue.let_go(attempt_id)
        return self._reread(attempt_id) if stored else None

    def _publish(self, attempt: Attempt, week_title: str) -> None:
        """Write the attempt's result JSON and feedback page from the gradebook's result."""
        result = self.gradebook.result(attempt.week, attempt.key)
        if result is not None:
            publish_attempt(self.root, self.course, result, week_title=week_title)

    def _reread(self, attempt_id: int) -> Attempt:
        updated = self.attempt(attempt_id)
        assert updated is not None
        return updated

    # --- marks --------------------------------------------------------------------------------

    def mark(self, attempt_id: int, *, context: str, task: int, points: float, comment: str = "",
             marker: str | None = None) -> Attempt:
        """An instructor's points for a hand-graded task of a graded attempt in their course,
        saved by ``marker`` (the LMS user at the page: ``ManualMark.marker``).

        Stored as the gradebook's manual mark (checked there: a manual task, points within
        its maximum), the feedback page rewritten with it, and the score posted again when
        the counted score or its progress changes (e.g. PendingManual -> FullyGraded)."""
        attempt, answer = self._markable(attempt_id, context=context, task=task)
        self.gradebook.set_manual(attempt.week, attempt.key, task, points=points, comment=comment,
                                  answer_sha256=answer, marker=marker)
        return self._marked(attempt)

    def rubric_mark(self, attempt_ids: Sequence[int], *, context: str, task: int, items: Sequence[int],
                    adjustment: float = 0.0, note: str = "", marker: str | None = None) -> list[Attempt]:
        """One decision for many answers: rubric ``items`` (numbers), an ``adjustment`` and a
        ``note`` for ``task`` of each attempt (``autograder.rubric`` defines the mark), by ``marker``;
        each attempt's page and score follow as with ``mark``. Every attempt is checked
        before any is marked."""
        checked = [self._markable(attempt_id, context=context, task=task) for attempt_id in attempt_ids]
        for attempt, answer in checked:
            self.gradebook.set_rubric_mark(attempt.week, attempt.key, task, items=items, adjustment=adjustment,
                                           note=note, answer_sha256=answer, marker=marker)
        return [self._marked(attempt) for attempt, _ in checked]

    def edit_rubric_item(self, week: str, task: int, number: int, *, points: float, comment: str) -> list[Attempt]:
        """Change a rubric item; every attempt whose mark uses it gets its new result,
        feedback page and score post (``Gradebook.edit_rubric_item`` recomputes the marks)."""
        keys = self.gradebook.edit_rubric_item(week, task, number, points=points, comment=comment)
        changed = [self.attempt(int(key.removeprefix("attempt-"))) for key in keys if key.startswith("attempt-")]
        return [self._marked(a) for a in changed if a is not None]

    def _markable(self, attempt_id: int, *, context: str, task: int) -> tuple[Attempt, str | None]:
        """A graded attempt of the course (or one a regrade queued again: its marks stay with the
        answer) and the fingerprint of its answer to ``task``, or why not."""
        attempt = self.attempt(attempt_id, context=context)
        stored = None if attempt is None or not attempt.scored else self.gradebook.result(attempt.week,
                                                                                                  attempt.key)
        if attempt is None or stored is None:
            raise GradebookError.refusing(None, N_("attempt {attempt} is not a graded attempt of this course: "
                                                   "nothing to mark"), attempt=attempt_id)
        try:
            return attempt, stored.task(task).answer_sha256
        except KeyError:
            raise GradebookError.refusing(None, N_("{week} has no task {task}"), week=attempt.week, task=task) from None

    def _marked(self, attempt: Attempt) -> Attempt:
        """After the gradebook took a mark for an attempt: its pages written again, its counted
        score noted and posted if it changed; the attempt as it reads now."""
        self._publish(attempt, attempt.title or attempt.week)
        with self.database.write() as db:
            refresh_score(self.database, db, attempt.context, attempt.user, attempt.week)
        return self._reread(attempt.id)

    def refresh_scores(self) -> int:
        """Note and post every counted score that differs from the last one noted (a mark
        merged into the gradebook from outside, a service stopped between a mark and its
        post); how many. The service calls this when it starts."""
        return refresh_scores(self.database)

    # --- overrides of autograded points -------------------------------------------------------

    def override(self, attempt_id: int, *, context: str, task: int, points: float, reason: str,
                 by: str) -> Attempt:
        """An instructor's ``points`` for an autograded task of an attempt in their course, in
        place of the checks', with the ``reason`` the student reads, given ``by`` them: stored
        as the gradebook's override (checked there: an autograded task, points within its
        maximum, a reason), the feedback page rewritten and the counted score posted again
        if it changed, as after a mark."""
        attempt, _ = self._markable(attempt_id, context=context, task=task)
        self.gradebook.set_override(attempt.week, attempt.key, task, points=points, reason=reason, by=by)
        return self._marked(attempt)

    def remove_override(self, attempt_id: int, *, context: str, task: int) -> Attempt:
        """Take an override back: the checks' points count again, on the page and in the LMS."""
        attempt, _ = self._markable(attempt_id, context=context, task=task)
        self.gradebook.remove_override(attempt.week, attempt.key, task)
        return self._marked(attempt)

    # --- counted scores -------------------------------------------------------------------------

    def counted_score(self, *, context: str, user: str, week: str) -> float | None:
        """The score the gradebook gets for this student and week (late penalty applied); None
        before any attempt is graded."""
        score = self.counted(context=context, user=user, week=week)
        return None if score is None else score.score

    def counted(self, *, context: str, user: str, week: str) -> CountedScore | None:
        """The counted score with the attempt it comes from and whether it is final."""
        return counted(self.attempts(context=context, user=user, week=week))
