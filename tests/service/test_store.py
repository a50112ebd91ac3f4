"""The service's store and policies: what an upload may do, how attempts queue and count,
which score is posted when, and that nobody reads another student's attempts; on SQLite
and on a real PostgreSQL server (the ``database_url`` fixture)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import column, insert, select, table, update

from autograder.database import Database, clock
from autograder.database.migrate import MIGRATIONS, SQLITE_USER_VERSION
from autograder.database.tables import attempts, posts
from autograder.exceptions import AttemptRefused, CourseError, GradebookError, PolicyError
from autograder.gradebook import FILENAME
from autograder.moodle_ws.sync_state import SyncState
from autograder.results import Status, SubmissionResult, TaskResult
from autograder.results_folders import service_results
from autograder.service.lti import LoginStates
from autograder.service.policy import WeekPolicy, load_policies, policy_for
from autograder.service.store import MAX_TRIES, Store

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC)
A, B = "https://moodle.example|3|course-1", "https://moodle.example|3|course-2"  # two courses (contexts)
OPEN = WeekPolicy()


def notebook(text: str) -> bytes:
    cell = {"cell_type": "code", "source": text, "metadata": {}, "outputs": [], "execution_count": None}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def result(auto: float, *, manual: float | None = None, answer: str = "because") -> SubmissionResult:
    """A graded result: task 1 autograded (of 10), task 2 by hand (of 5), ``manual`` None = unmarked."""
    tasks = [TaskResult(task=1, score=auto, max_score=10),
             TaskResult(task=2, score=manual or 0.0, max_score=5, manual=True, marked=manual is not None,
                        answer_sha256=answer)]
    return SubmissionResult(submission="x", key="x", status=Status.GRADED, tasks=tasks, submission_sha256="h",
                            tests_sha256="t", grader_version="v", week="week01")


def grade(store: Store, attempt_id: int, auto: float, answer: str = "because") -> None:
    claimed = store.claim()
    assert claimed is not None and claimed.id == attempt_id
    store.record_result(attempt_id, result(auto, answer=answer), week_title="week01: The perceptron")


@pytest.fixture
def store(tmp_path: Path, database_url: str | None):
    with Store(tmp_path / "data", database=database_url) as s:
        yield s


# --- policies ---------------------------------------------------------------------------------


def test_the_course_file_sets_each_week_and_the_defaults(tmp_path: Path):
    (tmp_path / "service.toml").write_text(
        'timezone = "Europe/Berlin"\n[defaults]\nmax_attempts = 5\nmin_interval_s = 60\n'
        '[week01]\nopens = 2026-09-01T08:00:00\ndue = 2026-09-14\nlate_penalty_per_day = 0.1\n'
        'late_cutoff_days = 3\ncounted = "last"\n[week2]\nmax_attempts = 2\n', encoding="utf-8")
    policies = load_policies(tmp_path)
    week1 = policies["week01"]
    assert week1.opens == datetime(2026, 9, 1, 6, 0, tzinfo=UTC)  # Berlin summer time is UTC+2
    assert week1.due == datetime(2026, 9, 14, 21, 59, 59, tzinfo=UTC)  # a date alone: due at its end
    assert (week1.max_attempts, week1.min_interval_s, week1.counted) == (5, 60.0, "last")
    assert policies["week02"].max_attempts == 2  # "week2" is week02
    assert policy_for(tmp_path, "week03") == WeekPolicy(max_attempts=5, min_interval_s=60, timezone="Europe/Berlin")
    assert policy_for(tmp_path / "nowhere", "week01") == WeekPolicy()  # no file: no limits, best counts


@pytest.mark.parametrize(("text", "says"), [
    ("[week01]\nmax_atempts = 3\n", "[week01] max_atempts: unknown key; the keys here are counted, due"),
    ("[week01]\nopens = 2026-09-10\ndue = 2026-09-01\n", "must come after opens"),
    ("[week01]\ncounted = \"first\"\n", '[week01] counted = "first" is not allowed here: write "best" or "last"'),
    ("[week01]\nlate_penalty_per_day = 10\n", "fraction of the week's points"),
    ("[week01]\nlate_penalty_per_day = 0.1\n", "need a due date"),
    ("[week01]\nmax_attempts = 0\n", "at least 1"),
    ("[week01]\nmin_interval_s = -5\n", "at least 0"),
    ("[lecture]\nmax_attempts = 1\n", "[lecture] is not a week"),
    ('timezone = "Mars/Olympus"\n', "unknown timezone"),
    ("[week01\n", "not valid TOML"),
])
def test_a_wrong_course_file_says_where_and_what(tmp_path: Path, text: str, says: str):
    (tmp_path / "service.toml").write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError, match=r"service\.toml") as caught:
        load_policies(tmp_path)
    assert says in str(caught.value)


def test_refusals_say_what_and_when():
    policy = WeekPolicy(opens=T0, due=T0 + timedelta(days=7), late_cutoff_days=2, max_attempts=3, min_interval_s=600)
    early = policy.refusal(now=T0 - timedelta(minutes=1), attempts_made=0, last_submitted=None)
    assert early == "This week opens for submissions at 2026-09-10 12:00 UTC; upload again from then."
    closed = policy.refusal(now=T0 + timedelta(days=9), attempts_made=0, last_submitted=None)
    assert closed is not None and "closed at 2026-09-19 12:00 UTC" in closed
    used = policy.refusal(now=T0 + timedelta(days=1), attempts_made=3, last_submitted=T0)
    assert used is not None and "all 3 attempts" in used
    soon = policy.refusal(now=T0 + timedelta(minutes=4), attempts_made=1, last_submitted=T0)
    assert soon == ("Attempts must be at least 10 min apart: upload again at 2026-09-10 12:10 UTC (in 6 min).")
    assert policy.refusal(now=T0 + timedelta(minutes=10), attempts_made=1, last_submitted=T0) is None
    assert [policy.penalty(T0 + timedelta(days=7, hours=h)) for h in (0, 1, 25)] == [0.0, 0.0, 0.0]  # no rate
    late = WeekPolicy(due=T0, late_penalty_per_day=0.25)
    assert [late.penalty(T0 + timedelta(hours=h)) for h in (0, 1, 24, 25, 24 * 9)] == [0.0, 0.25, 0.25, 0.5, 1.0]


# --- uploads and attempts -----------------------------------------------------------------------


def test_uploads_are_stored_once_by_content_and_numbered_per_student(store: Store):
    first = store.submit(context=A, user="ann", week="week01", content=notebook("a = 1"), policy=OPEN, now=T0)
    other = store.submit(context=A, user="bob", week="week01", content=notebook("a = 1"), policy=OPEN, now=T0)
    second = store.submit(context=A, user="ann", week="week01", content=notebook("a = 2"), policy=OPEN, now=T0)
    assert (first.number, other.number, second.number) == (1, 1, 2)
    assert first.content_hash == other.content_hash != second.content_hash
    assert store.content(first) == notebook("a = 1")
    assert sorted((store.root / "uploads").rglob("*.ipynb")) == sorted({store.upload_path(first.content_hash),
                                                                        store.upload_path(second.content_hash)})
    assert first.state == "queued" and first.score is None


def test_the_policy_refuses_with_its_reason_and_failed_attempts_do_not_count(store: Store):
    policy = WeekPolicy(max_attempts=2, min_interval_s=60)
    store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=policy, now=T0)
    with pytest.raises(AttemptRefused, match="at least 60 s apart: upload again at 2026-09-10 12:01 UTC \\(in 60 s\\)"):
        store.submit(context=A, user="ann", week="week01", content=notebook("2"), policy=policy, now=T0)
    with pytest.raises(AttemptRefused, match="same file as your attempt 1"):
        store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=policy,
                     now=T0 + timedelta(minutes=5))
    second = store.submit(context=A, user="ann", week="week01", content=notebook("2"), policy=policy,
                          now=T0 + timedelta(minutes=5))
    with pytest.raises(AttemptRefused, match="all 2 attempts"):
        store.submit(context=A, user="ann", week="week01", content=notebook("3"), policy=policy,
                     now=T0 + timedelta(minutes=10))
    store.fail(second.id, "the grader broke")
    third = store.submit(context=A, user="ann", week="week01", content=notebook("3"), policy=policy,
                         now=T0 + timedelta(minutes=10))
    assert third.number == 3  # numbers keep going; the failed one is not held against the student


def test_two_uploads_at_once_cannot_both_pass_the_attempt_limit(tmp_path: Path, database_url: str | None):
    """Two web workers (two connections to the file) race; the limit holds."""
    Store(tmp_path, database=database_url).close()
    policy, outcomes = WeekPolicy(max_attempts=1), []

    def upload(i: int) -> None:
        with Store(tmp_path, database=database_url) as mine:
            try:
                mine.submit(context=A, user="ann", week="week01", content=notebook(f"x = {i}"), policy=policy, now=T0)
                outcomes.append("ok")
            except AttemptRefused:
                outcomes.append("refused")

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] + ["refused"] * 7


def test_a_student_reads_only_their_own_attempts(store: Store):
    ann = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
    bob = store.submit(context=A, user="bob", week="week01", content=notebook("2"), policy=OPEN, now=T0)
    ann_b = store.submit(context=B, user="ann", week="week01", content=notebook("3"), policy=OPEN, now=T0)
    assert [a.id for a in store.attempts(context=A, user="ann", week="week01")] == [ann.id]
    assert store.attempt(bob.id, context=A, user="ann") is None
    assert store.attempt(ann.id, context=B, user="ann") is None  # the same sub in another course is someone else
    assert store.attempt(ann.id, context=A, user="ann") == ann
    assert [a.id for a in store.week_attempts(context=A, week="week01")] == [ann.id, bob.id]  # instructor of A
    grade(store, ann.id, 7)
    assert store.result(ann.id, context=A, user="bob") is None
    assert store.result(ann.id, context=B) is None
    own = store.result(ann.id, context=A, user="ann")
    assert own is not None and own.score == 7
    assert ann_b.id not in [a.id for a in store.week_attempts(context=A, week="week01")]


def test_claims_take_each_queued_attempt_exactly_once_across_connections(tmp_path: Path, database_url: str | None):
    with Store(tmp_path, database=database_url) as s:
        ids = {s.submit(context=A, user=f"u{i}", week="week01", content=notebook(str(i)), policy=OPEN, now=T0).id
               for i in range(40)}
        assert s.queue_position(min(ids)) == 1 and s.queue_position(max(ids)) == 40
    claimed: list[int] = []

    def worker() -> None:
        with Store(tmp_path, database=database_url) as mine:
            while (attempt := mine.claim()) is not None:
                claimed.append(attempt.id)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(ids)
    with Store(tmp_path, database=database_url) as s:
        assert s.queue_position(min(ids)) == 0  # being graded


def test_an_attempt_that_keeps_killing_its_grader_is_failed_not_retried_forever(store: Store):
    attempt = store.submit(context=A, user="ann", week="week01", content=notebook("boom"), policy=OPEN, now=T0)
    for _ in range(MAX_TRIES):
        assert store.claim() is not None
        store.release(attempt.id, count_try=True)  # the grader died with it
    assert store.claim() is None
    failed = store.attempt(attempt.id)
    assert failed is not None and failed.state == "failed" and "does not count" in (failed.message or "")
    again = store.submit(context=A, user="ann", week="week01", content=notebook("fixed"), policy=OPEN, now=T0)
    store.claim()
    store.release(again.id, count_try=False)  # the service stopped: no try used
    assert store.requeue_interrupted() == 0 and store.attempt(again.id).state == "queued"  # type: ignore[union-attr]


def test_an_attempt_taken_over_after_its_claim_expired_keeps_its_new_owners_outcome(
        tmp_path: Path, database_url: str | None) -> None:
    """Replica ``a`` claims four attempts and stalls past the claims' lifetime (its renewals
    stop); replica ``b`` takes them over. What ``a`` does on waking changes nothing: its result
    while ``b`` grades, its release, its failure, and its result after ``b``'s result and a
    regrade; ``b``'s results are the ones recorded, shown and posted."""
    ttl = 0.5
    with Store(tmp_path, database=database_url, claim_ttl_s=ttl) as a, \
            Store(tmp_path, database=database_url, claim_ttl_s=ttl) as b:
        a.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
        ann, bob, cat, dan = (a.submit(context=A, user=user, week="week01", content=notebook(user), policy=OPEN,
                                       now=T0) for user in ("ann", "bob", "cat", "dan"))
        assert [a.claim() is not None for _ in range(4)] == [True] * 4
        a.queue.close()  # a stalls: its claims are not renewed any more
        time.sleep(1.5 * ttl)
        assert b.requeue_interrupted() == 4
        assert sorted(taken.id for taken in (b.claim(), b.claim(), b.claim(), b.claim()) if taken) == \
            [ann.id, bob.id, cat.id, dan.id]
        assert a.record_result(ann.id, result(1), week_title="week01") is None  # while b grades it
        assert not a.release(bob.id, count_try=True)
        assert not a.fail(cat.id, "the grader broke")
        assert {x.state for x in (b.attempt(i) for i in (ann.id, bob.id, cat.id, dan.id)) if x} == {"grading"}
        for attempt, auto in ((ann, 9), (bob, 8), (cat, 7), (dan, 6)):
            recorded = b.record_result(attempt.id, result(auto), week_title="week01")
            assert recorded is not None and recorded.score == auto
        assert b.regrade(context=A, week="week01", attempt_id=dan.id) == 1
        assert a.record_result(dan.id, result(1), week_title="week01") is None  # after b's result and a regrade
        assert b.attempt(dan.id).state == "queued"  # type: ignore[union-attr]
        kept = b.gradebook.lookup("week01", dan.key, submission_sha256="h", tests_sha256="t", grader_version="v")
        assert kept is not None and kept.score == 6  # b's result, not a's
        assert [x.score for x in (b.attempt(i) for i in (ann.id, bob.id, cat.id)) if x] == [9, 8, 7]
        assert {p.user: p.payload["scoreGiven"] for p in b.posts(context=A)} == {"ann": 9, "bob": 8, "cat": 7,
                                                                                "dan": 6}


# --- counted scores and their posts -----------------------------------------------------------------


def test_best_attempt_counts_with_the_late_penalty_and_each_change_is_posted(store: Store):
    store.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
    late = WeekPolicy(due=T0, late_penalty_per_day=0.1)
    one = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=late, now=T0)
    grade(store, one.id, 6)
    two = store.submit(context=A, user="ann", week="week01", content=notebook("2"), policy=late,
                       now=T0 + timedelta(hours=30))  # 2 days late: 20% of 15 points off
    grade(store, two.id, 9)
    assert store.attempt(two.id).counted == pytest.approx(6.0)  # type: ignore[union-attr]
    assert store.counted_score(context=A, user="ann", week="week01") == 6.0  # a tie: the later attempt
    three = store.submit(context=A, user="ann", week="week01", content=notebook("3"), policy=late,
                         now=T0 + timedelta(hours=50))
    grade(store, three.id, 2)  # worse: best stays
    posts = store.posts(context=A, week="week01")
    payloads = [p.payload for p in reversed(posts)]
    assert [(p["scoreGiven"], p["gradingProgress"]) for p in payloads] == [(6.0, "PendingManual"),
                                                                           (6.0, "PendingManual")]
    assert payloads[1]["comment"].startswith("Attempt 2: 6 of 15 points after a late penalty of 20%")
    assert payloads[0]["userId"] == "ann" and payloads[0]["scoreMaximum"] == 15
    stamps = [datetime.fromisoformat(p["timestamp"]) for p in payloads]
    assert stamps[1] >= stamps[0] + timedelta(seconds=1)  # Moodle refuses the same second
    assert posts[1].state == "superseded" and posts[0].state == "pending"  # never sent: only the newest goes


def test_last_attempt_counts_when_the_policy_says_so(store: Store):
    last = WeekPolicy(counted="last")
    one = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=last, now=T0)
    grade(store, one.id, 9)
    two = store.submit(context=A, user="ann", week="week01", content=notebook("2"), policy=last, now=T0)
    grade(store, two.id, 4)
    assert store.counted_score(context=A, user="ann", week="week01") == 4.0
    assert store.posts(context=A) == []  # no line item yet: nothing to send ...
    store.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
    assert [p.payload["scoreGiven"] for p in store.posts(context=A)] == [4.0]  # ... until the launch names one


def test_marking_a_hand_graded_task_posts_the_final_score_and_carries_to_the_same_answer(store: Store):
    store.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
    one = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
    grade(store, one.id, 8, answer="margin")
    with pytest.raises(GradebookError, match="task 1 of week01 is autograded"):
        store.mark(one.id, context=A, task=1, points=3)
    with pytest.raises(GradebookError, match="outside 0..5"):
        store.mark(one.id, context=A, task=2, points=6)
    with pytest.raises(GradebookError, match="not a graded attempt of this course"):
        store.mark(one.id, context=B, task=2, points=3)
    marked = store.mark(one.id, context=A, task=2, points=4, comment="Good: the margin.")
    assert (marked.score, marked.pending) == (12.0, 0.0)
    assert "Good: the margin." in (store.feedback(marked) or "")
    latest = store.posts(context=A)[0].payload
    assert (latest["scoreGiven"], latest["gradingProgress"]) == (12.0, "FullyGraded")
    two = store.submit(context=A, user="ann", week="week01", content=notebook("2"), policy=OPEN, now=T0)
    grade(store, two.id, 10, answer="margin")  # code improved, same written answer: the mark carries
    assert store.attempt(two.id).pending == 0.0  # type: ignore[union-attr]
    assert store.counted(context=A, user="ann", week="week01").progress == "FullyGraded"  # type: ignore[union-attr]
    three = store.submit(context=A, user="ann", week="week01", content=notebook("3"), policy=OPEN, now=T0)
    grade(store, three.id, 10, answer="rewritten")  # a new answer waits for the marker
    assert store.attempt(three.id).pending == 5.0  # type: ignore[union-attr]
    assert store.counted_score(context=A, user="ann", week="week01") == 14.0  # attempt 2 stays best


def test_a_rubric_mark_follows_its_item_into_every_attempt_and_the_same_answer_resubmitted(store: Store):
    store.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
    ann = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
    bob = store.submit(context=A, user="bob", week="week01", content=notebook("2"), policy=OPEN, now=T0)
    grade(store, ann.id, 8, answer="margin")
    grade(store, bob.id, 6, answer="margin too")
    store.gradebook.add_rubric_item("week01", 2, points=3, comment="Names the margin")
    store.gradebook.add_rubric_item("week01", 2, points=-1, comment="No example")
    marked = store.rubric_mark([ann.id, bob.id], context=A, task=2, items=[1], note="Good.")
    assert [a.score for a in marked] == [11.0, 9.0] and all(a.pending == 0 for a in marked)
    again = store.submit(context=A, user="ann", week="week01", content=notebook("3"), policy=OPEN, now=T0)
    grade(store, again.id, 9, answer="margin")  # same written answer: the rubric mark carries, items and all

    changed = store.edit_rubric_item("week01", 2, 1, points=5, comment="Names the margin")

    assert sorted((a.id, a.score) for a in changed) == [(ann.id, 13.0), (bob.id, 11.0), (again.id, 14.0)]
    page = store.feedback(store.attempt(again.id)) or ""  # type: ignore[arg-type]
    assert "Names the margin (+5)" in page and "Good." in page
    assert {p.user: p.payload["scoreGiven"] for p in reversed(store.posts(context=A))} == {"ann": 14.0, "bob": 11.0}
    with pytest.raises(GradebookError, match="not a graded attempt of this course"):
        store.rubric_mark([ann.id], context=B, task=2, items=[1])


def test_a_regrade_queues_graded_attempts_of_that_course_only(store: Store):
    mine = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
    theirs = store.submit(context=B, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
    grade(store, mine.id, 5)
    grade(store, theirs.id, 5)
    assert store.regrade(context=A, week="week01") == 1
    assert store.attempt(mine.id).state == "queued"  # type: ignore[union-attr]
    assert store.attempt(theirs.id).state == "graded"  # type: ignore[union-attr]
    assert store.regrade(context=B, week="week01", attempt_id=mine.id) == 0  # not B's attempt


def test_a_mark_the_gradebook_took_from_outside_is_shown_at_once_and_posted_at_restart(
        tmp_path: Path, database_url: str | None) -> None:
    """The gradebook is the attempt's only record: a mark stored there without the store
    (``merge-manual``, or a service that died before posting) is what the next read shows,
    and the counted score it changes is posted when the service starts (``refresh_scores``)."""
    with Store(tmp_path, database=database_url) as store:
        store.set_lineitem(A, "week01", "https://moodle.example/lineitem/1")
        attempt = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
        grade(store, attempt.id, 8, answer="margin")
        # the service died right after the gradebook took the mark (or `merge-manual` wrote it)
        store.gradebook.set_manual("week01", attempt.key, 2, points=0, comment="", answer_sha256="margin")
        assert (store.attempt(attempt.id).score, store.attempt(attempt.id).pending) == (8, 0)  # type: ignore[union-attr]
        assert store.posts(context=A)[0].payload["gradingProgress"] == "PendingManual"  # not posted yet
    with Store(tmp_path, database=database_url) as store:
        assert store.refresh_scores() == 1
        assert store.refresh_scores() == 0  # once
        latest = store.posts(context=A)[0].payload  # 0 points is a mark too: the score is final
        assert (latest["scoreGiven"], latest["gradingProgress"]) == (8, "FullyGraded")
        store.gradebook.set_manual("week01", attempt.key, 2, points=5, comment="Fine.", answer_sha256="margin")
        assert "Fine." in (store.feedback(store.attempt(attempt.id)) or "")  # type: ignore[arg-type]
        assert store.refresh_scores() == 1
        assert store.posts(context=A)[0].payload["scoreGiven"] == 13


def test_attempts_an_older_version_queued_under_a_week_alias_are_queued_under_the_canonical_name(
        tmp_path: Path, database_url: str | None) -> None:
    with Store(tmp_path, database=database_url) as store:
        first = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
        aliased = store.submit(context=A, user="ann", week="week02", content=notebook("2"), policy=OPEN, now=T0)
        lost = store.submit(context=A, user="bob", week="week03", content=notebook("3"), policy=OPEN, now=T0)
        with store.database.write() as db:  # as the version before the edge stored them
            db.execute(update(attempts).where(attempts.c.id == aliased.id).values(week="1"))
            db.execute(update(attempts).where(attempts.c.id == lost.id).values(week="wee\u212a03"))  # KELVIN SIGN
    with Store(tmp_path, database=database_url) as store:
        renamed = store.attempt(aliased.id)
        assert renamed is not None and (renamed.week, renamed.number) == ("week01", 2)
        assert [a.id for a in store.attempts(context=A, user="ann", week="week01")] == [first.id, aliased.id]
        failed = store.attempt(lost.id)
        assert failed is not None and failed.state == "failed" and "names no week" in str(failed.message)
        assert store.queued_weeks() == {"week01": 2}


def test_the_store_refuses_a_week_name_that_is_not_canonical(store: Store) -> None:
    with pytest.raises(CourseError, match="canonical"):
        store.submit(context=A, user="ann", week="1", content=notebook("x"), policy=OPEN, now=T0)


def test_a_data_folder_written_before_the_database_module_is_adopted_with_everything_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tests/fixtures/legacy_data`` was written by the code before ``autograder.database``
    (gradebook ``user_version`` 3, the service's ``service_meta`` row, the sync's table, the
    LTI file): ann's attempt graded and marked by rubric, bob's waiting, a post retried
    after two 409s, a sync row, a login and a line item's owner. The login states are read
    an hour after the fixture was written: a nonce is forgotten a day after its use."""
    legacy = Path(__file__).resolve().parent.parent / "fixtures" / "legacy_data"
    for name in ("gradebook.sqlite", "lti.sqlite"):
        shutil.copy(legacy / name, tmp_path / name)
    with Store(tmp_path) as store:
        assert store.user_name(A, "ann") == "Ann Example"
        ann, bob = store.attempt(1), store.attempt(2)
        assert ann is not None and (ann.state, ann.score, ann.pending) == ("graded", 11.0, 0.0)
        assert bob is not None and bob.state == "queued"
        mark = store.gradebook.manual_marks("week01")[ann.key][2]
        assert (mark.items, mark.note, mark.answer_sha256) == ((1,), "Good.", "margin")
        assert [(p.id, p.state, p.conflicts) for p in store.posts(context=A)] == [(2, "pending", 2),
                                                                                  (1, "superseded", 0)]
        assert [r.finished is not None for r in store.gradebook.runs()] == [True]
        claimed = store.claim()
        assert claimed is not None and claimed.id == bob.id
        newer = store.submit(context=A, user="cat", week="week01", content=notebook("c"), policy=OPEN, now=T0)
        assert newer.id == 3  # ids go on after the file's
    with SyncState(tmp_path / FILENAME, site="https://m", assignment=7, week="week01") as state:
        synced = state.users()[101]
        assert (synced.downloaded, synced.pushed, synced.pushed_grader, synced.pushed_grade) == (1700000000, "sig", 2, 8.0)
    with sqlite3.connect(legacy / "lti.sqlite") as db:
        written = db.execute("SELECT used FROM lti_nonce WHERE nonce = 'nonce-1'").fetchone()[0]
    monkeypatch.setattr(clock, "now", lambda: datetime.fromtimestamp(written + 3600, UTC))
    states = LoginStates(tmp_path / "lti.sqlite")
    assert states.lineitem_owner("https://moodle.example/lineitem/1") == ("https://moodle.example", "client-1")
    # used before the upgrade: still used (asked an hour after the fixture used it: a nonce is
    # forgotten a day after its use, and the fixture's clock stopped when it was written)
    assert not states.use_nonce("https://moodle.example", "nonce-1")
    monkeypatch.undo()
    states.close()
    with sqlite3.connect(tmp_path / FILENAME) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SQLITE_USER_VERSION  # older versions refuse it
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'service_meta'").fetchall() == []


def test_claims_made_before_claims_had_owners_are_left_alone_until_they_expire(
        tmp_path: Path, database_url: str | None) -> None:
    """A database at revision 0003 with an attempt being graded and a post being sent: the
    migration gives both claims an owner no process holds, so a process holding no claim
    cannot finish them, and they are taken over once they expire."""
    database = Database.connect(database_url or tmp_path / FILENAME)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    long_ago = "2026-09-10T12:00:00.000000+00:00"
    with database.write() as db:
        config.attributes["connection"] = db
        command.upgrade(config, "0003")
        attempts_0003 = table("attempts", *map(column, ("context", "user", "week", "number", "content_hash",
                                                        "submitted_at", "state", "penalty", "counted_mode", "tries",
                                                        "claimed_at")))  # moments as text
        db.execute(insert(attempts_0003).values(context=A, user="ann", week="week01", number=1, content_hash="h",
                                                submitted_at=long_ago, state="grading", penalty=0,
                                                counted_mode="best", tries=1, claimed_at=long_ago))
        at_0003 = table("posts", *map(column, ("context", "user", "week", "lineitem", "payload", "state", "tries",
                                               "next_try_at", "created_at", "sending_since")))  # moments as text
        db.execute(insert(at_0003).values(context=A, user="ann", week="week01", lineitem="https://m/l/1",
                                          payload="{}", state="pending", tries=1, next_try_at=long_ago,
                                          created_at=long_ago, sending_since=long_ago))
    database.close()
    with Store(tmp_path, database=database_url) as store:
        with store.database.read() as db:
            owners = {db.execute(select(attempts.c.claimed_by)).scalar_one(),
                      db.execute(select(posts.c.claimed_by)).scalar_one()}
        assert len(owners) == 1 and None not in owners  # one owner for both, which no process holds
        [post] = store.posts(context=A)
        assert not store.fail(1, "x") and not store.post_failed(post.id, "x")
        assert store.requeue_interrupted() == 1 and store.attempt(1).state == "queued"  # type: ignore[union-attr]
        assert [p.id for p in store.claim_due_posts(datetime.now(UTC))] == [post.id]


def test_a_mark_and_a_regrade_writing_one_attempts_pages_at_once_both_land_whole(store: Store) -> None:
    """The runner's ``record_result`` and a marker's ``mark`` write the same attempt's pages;
    each write has its own temporary file, so neither loses its rename to the other."""
    attempt = store.submit(context=A, user="ann", week="week01", content=notebook("1"), policy=OPEN, now=T0)
    grade(store, attempt.id, 8)
    errors: list[BaseException] = []

    def repeat(step) -> None:
        try:
            for _ in range(15):
                step()
        except BaseException as exc:  # noqa: BLE001 - the failure is what the test reports
            errors.append(exc)

    writers = [threading.Thread(target=repeat, args=(lambda: store.mark(attempt.id, context=A, task=2, points=3),)),
               threading.Thread(target=repeat, args=(lambda: store.record_result(
                   attempt.id, result(8, answer="because"), week_title="week01: The perceptron"),))]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert errors == []
    final = store.attempt(attempt.id)
    assert final is not None and final.state == "graded"
    written = service_results(store.root, "week01")
    assert json.loads((written / f"{attempt.key}.json").read_text(encoding="utf-8"))["key"] == attempt.key
    assert "</html>" in (written / f"{attempt.key}.html").read_text(encoding="utf-8")
    assert not list(written.glob("*.partial"))
