"""The score outbox over real HTTP: a platform that is down, one that answers 409, one that
refuses, a send cut off mid-way; every score arrives once and each post says how it went.
The store under it runs on SQLite and on PostgreSQL (the ``database_url`` fixture)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.claims import CLAIM_TTL_S
from autograder.service.outbox import MAX_CONFLICTS, Outbox
from autograder.service.policy import WeekPolicy
from autograder.service.store import Post, Store
from tests.service.score_endpoint import HttpSender, ScoreEndpoint

CONTEXT = "https://moodle.example|3|course-1"


def after_the_claim_expired() -> datetime:
    """When a send cut off now (its process died) may be taken over by another."""
    return datetime.now(UTC) + timedelta(seconds=CLAIM_TTL_S + 1)


@pytest.fixture
def endpoint() -> Iterator[ScoreEndpoint]:
    server = ScoreEndpoint()
    yield server
    server.close()


@pytest.fixture
def store(tmp_path: Path, endpoint: ScoreEndpoint, database_url: str | None) -> Iterator[Store]:
    with Store(tmp_path / "data", database=database_url) as s:
        s.set_lineitem(CONTEXT, "week01", endpoint.lineitem)
        yield s


def graded(store: Store, user: str, auto: float, *, marked: bool = True, context: str = CONTEXT) -> int:
    """An attempt of ``user`` graded ``auto`` of 10 (plus 5 by hand when ``marked``)."""
    attempt = store.submit(context=context, user=user, week="week01", content=f"{user}{auto}".encode(),
                           policy=WeekPolicy(), now=datetime.now(UTC))
    claimed = store.claim()
    assert claimed is not None and claimed.id == attempt.id
    tasks = [TaskResult(task=1, score=auto, max_score=10)]
    tasks.append(TaskResult(task=2, score=5 if marked else 0, max_score=5, manual=True, marked=marked))
    store.record_result(attempt.id, SubmissionResult(submission="x", key="x", status=Status.GRADED, tasks=tasks,
                                                     submission_sha256="h", tests_sha256="t", grader_version="v"),
                        week_title="week01")
    return attempt.id


def until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_platform_that_is_down_gets_the_score_once_it_is_back(store: Store, endpoint: ScoreEndpoint):
    endpoint.state.fail_next = [500, 503]
    graded(store, "ann", 8)
    with Outbox(store, HttpSender(), base_delay_s=0.2, poll_s=0.05):
        until(lambda: store.posts(context=CONTEXT)[0].state == "posted")
    post = store.posts(context=CONTEXT)[0]
    assert post.tries == 3 and post.status == "posted" and post.posted_at is not None
    assert endpoint.state.answers == [500, 503, 200]
    [score] = endpoint.state.accepted
    assert (score.user, score.score, score.maximum, score.progress) == ("ann", 13.0, 15.0, "FullyGraded")


def test_retries_back_off_and_show_as_retrying_with_the_reason(store: Store, endpoint: ScoreEndpoint):
    endpoint.state.fail_next = [502] * 3
    graded(store, "ann", 8)
    outbox = Outbox(store, HttpSender(), base_delay_s=10)
    assert outbox.send_due() == 1  # sent once, then waits 10 s: the next round finds nothing due
    assert outbox.send_due() == 0
    post = store.posts(context=CONTEXT)[0]
    assert (post.status, post.tries) == ("retrying", 1) and "answered 502" in (post.last_error or "")
    assert post.next_try_at is not None and post.next_try_at > datetime.now(UTC) + timedelta(seconds=8)
    later = datetime.now(UTC) + timedelta(seconds=11)
    assert outbox.send_due(later) == 1
    post = store.posts(context=CONTEXT)[0]
    assert post.next_try_at is not None and post.next_try_at > datetime.now(UTC) + timedelta(seconds=18)  # doubled


def test_an_unreachable_platform_never_loses_the_score(tmp_path: Path):
    with Store(tmp_path) as store:
        server = ScoreEndpoint()
        lineitem = server.lineitem
        server.close()  # nothing listens there now
        store.set_lineitem(CONTEXT, "week01", lineitem)
        graded(store, "ann", 7)
        outbox = Outbox(store, HttpSender(timeout_s=1), base_delay_s=0.01)
        outbox.send_due()
        post = store.posts(context=CONTEXT)[0]
        assert post.status == "retrying" and "could not be reached" in (post.last_error or "")


@pytest.mark.slow
def test_409_from_a_platform_clock_ahead_of_ours_is_sent_again_later(store: Store, endpoint: ScoreEndpoint):
    endpoint.state.clock_ahead_s = 1.5  # as Moodle 4.1 stores time() instead of our timestamp
    graded(store, "ann", 5)
    with Outbox(store, HttpSender(), base_delay_s=0.05, poll_s=0.05):
        until(lambda: store.posts(context=CONTEXT)[0].state == "posted")
    graded(store, "ann", 9)  # a better attempt within the platform's clock skew
    with Outbox(store, HttpSender(), base_delay_s=0.05, poll_s=0.05):
        until(lambda: store.posts(context=CONTEXT)[0].state == "posted")
    assert 409 in endpoint.state.answers
    assert endpoint.state.grades["ann"] == 14.0
    first, second = (datetime.fromisoformat(a.timestamp) for a in endpoint.state.accepted)
    assert second > first


def test_409s_in_a_row_are_counted_on_the_post_until_it_fails(store: Store, endpoint: ScoreEndpoint):
    endpoint.state.stored["ann"] = datetime.now().timestamp() + 3600  # the LMS holds a grade dated an hour ahead
    graded(store, "ann", 8)
    outbox = Outbox(store, HttpSender(), base_delay_s=0.25)  # the 503 on the 3rd try waits 1 s, as a 409 does

    def send() -> Post:  # one try: at the time the post is due, so its retry is not due yet
        outbox.send_due(store.posts(context=CONTEXT)[0].next_try_at)
        return store.posts(context=CONTEXT)[0]

    assert [send().conflicts for _ in range(2)] == [1, 2]
    endpoint.state.fail_next = [503]
    assert send().conflicts == 0  # another answer in between: the next 409 is the first in a row again
    assert [send().conflicts for _ in range(MAX_CONFLICTS - 1)] == list(range(1, MAX_CONFLICTS))
    failed = send()
    assert failed.state == "failed" and f"409 {MAX_CONFLICTS} times" in (failed.last_error or "")
    assert endpoint.state.answers.count(409) == 2 + MAX_CONFLICTS


def test_a_refusal_fails_the_post_with_the_platforms_answer_and_can_be_sent_again(store: Store,
                                                                                 endpoint: ScoreEndpoint):
    endpoint.state.fail_next = [404]
    graded(store, "ann", 8)
    Outbox(store, HttpSender()).send_due()
    post = store.posts(context=CONTEXT)[0]
    assert post.status == "failed" and "answered 404" in (post.last_error or "")
    assert not store.retry_post(post.id, context="https://elsewhere|1|2")  # another course's instructor
    assert store.retry_post(post.id, context=CONTEXT)
    Outbox(store, HttpSender()).send_due()
    assert store.posts(context=CONTEXT)[0].state == "posted" and len(endpoint.state.accepted) == 1


def test_a_send_cut_off_after_it_arrived_is_not_counted_twice(store: Store, endpoint: ScoreEndpoint):
    """The process died after the platform stored the score but before we noted it."""
    graded(store, "ann", 8)
    post = store.posts(context=CONTEXT)[0]
    HttpSender().post_score(post.lineitem, post.payload)  # it arrived ...
    assert store.claim_due_posts(datetime.now(UTC)) == [post]  # ... and all we know is that a send started
    Outbox(store, HttpSender()).send_due(after_the_claim_expired())  # after the restart
    post = store.posts(context=CONTEXT)[0]
    assert post.state == "posted" and "already held" in (post.last_error or "")
    assert endpoint.state.answers == [200, 409] and len(endpoint.state.accepted) == 1


def test_pending_manual_scores_are_posted_as_such_and_moodle_keeps_no_grade(store: Store, endpoint: ScoreEndpoint):
    graded(store, "bob", 10, marked=False)
    Outbox(store, HttpSender()).send_due()
    [score] = endpoint.state.accepted
    assert score.progress == "PendingManual" and endpoint.state.grades["bob"] is None  # Moodle drops scoreGiven
    assert store.posts(context=CONTEXT)[0].payload["scoreGiven"] == 10.0  # we still say it (other platforms show it)


@pytest.mark.slow
def test_a_slow_platform_does_not_hold_up_recording_grades(store: Store, endpoint: ScoreEndpoint):
    endpoint.state.delay_s = 3.0  # under the sender's 5 s timeout
    graded(store, "ann", 1)
    with Outbox(store, HttpSender(), poll_s=0.01):
        until(lambda: store.posts(context=CONTEXT)[0].sending_since is not None)
        for i, user in enumerate(["bob", "cat", "dan"]):
            graded(store, user, i)
        ann = store.posts(context=CONTEXT)[-1]
        assert ann.user == "ann" and ann.sending_since is not None  # recorded while ann's post awaits its answer
        assert endpoint.state.accepted == []
        until(lambda: all(p.state == "posted" for p in store.posts(context=CONTEXT)))
    assert sorted(a.user for a in endpoint.state.accepted) == ["ann", "bob", "cat", "dan"]


def test_students_posts_go_side_by_side_and_each_students_in_order(store: Store, endpoint: ScoreEndpoint):
    endpoint.state.delay_s = 0.3
    graded(store, "ann", 3)
    first = store.posts(context=CONTEXT)[0]
    assert store.claim_due_posts(datetime.now(UTC)) == [first]  # its send was cut off: it may have arrived,
    for user in ["bob", "cat", "dan", "eve", "fay"]:
        graded(store, user, 3)
    graded(store, "ann", 5)  # ann's better attempt: a second post of hers, behind the first
    graded(store, "ann", 7)  # and a third, which replaces the second before it was sent
    assert [p.state for p in store.posts(context=CONTEXT)].count("pending") == 7
    Outbox(store, HttpSender(), senders=3).send_due(after_the_claim_expired())  # so it stays, and goes first
    assert endpoint.state.most_in_flight == 3
    assert [a.sent for a in endpoint.state.accepted if a.user == "ann"] == [8.0, 12.0]  # in order, newest last
    assert endpoint.state.grades["ann"] == 12.0 and len(endpoint.state.accepted) == 7



def test_a_post_taken_over_after_its_claim_expired_is_finished_by_its_new_owner_alone(
        tmp_path: Path, database_url: str | None) -> None:
    """Replica ``a`` claims a post and stalls past the claim's lifetime; replica ``b`` takes it
    over. ``a``'s retry does not reset ``b``'s live claim (so no third replica sends the post
    again), ``a``'s renewal does not refresh it, and ``a``'s done and failure change nothing:
    ``b``'s outcome stands."""
    database = database_url or f"sqlite:///{tmp_path / 'shared.sqlite'}"
    with Store(tmp_path / "a", database=database) as a, Store(tmp_path / "b", database=database) as b:
        a.set_lineitem(CONTEXT, "week01", "https://moodle.example/mod/lti/services.php/2/lineitem")
        graded(a, "ann", 8)
        now = datetime.now(UTC)
        [mine] = a.claim_due_posts(now, owner="replica-a")
        later = now + timedelta(seconds=CLAIM_TTL_S + 1)
        [taken] = b.claim_due_posts(later, owner="replica-b")
        assert taken.id == mine.id
        assert not a.post_retry(mine.id, "the platform answered 503", now + timedelta(seconds=2), claim="replica-a")
        assert list(a.renew_post_claims({mine.id: "replica-a"})) == []
        post = b.posts(context=CONTEXT)[0]
        assert (post.state, post.sending_since, post.tries, post.last_error) == ("pending", later, 2, None)
        assert b.claim_due_posts(later + timedelta(seconds=3), owner="replica-c") == []  # b's claim lives
        assert b.post_done(mine.id, later, claim="replica-b")
        assert not a.post_done(mine.id, now, claim="replica-a")
        assert not a.post_failed(mine.id, "the platform answered 400", claim="replica-a")
        post = b.posts(context=CONTEXT)[0]
        assert (post.state, post.posted_at, post.last_error, post.next_try_at) == ("posted", later, None, None)


def test_an_outbox_whose_send_was_taken_over_leaves_the_new_owners_outcome_and_says_so(
        tmp_path: Path, endpoint: ScoreEndpoint, database_url: str | None, caplog: pytest.LogCaptureFixture) -> None:
    """While replica ``a``'s send is on its way, ``a`` stalls past its claim and replica ``b``'s
    outbox takes the post over, sends it (the platform stores it) and marks it posted. ``a``'s
    send then gets a 409 (the platform holds that timestamp), which would have it send the
    score again with a later one: the post is ``b``'s now, so ``a`` writes nothing and logs
    that another replica took it over."""
    database = database_url or f"sqlite:///{tmp_path / 'shared.sqlite'}"
    with Store(tmp_path / "a", database=database) as a, Store(tmp_path / "b", database=database) as b:
        a.set_lineitem(CONTEXT, "week01", endpoint.lineitem)
        graded(a, "ann", 8)
        other = Outbox(b, HttpSender())  # sends when told (its own thread would take the post at once)
        [before] = a.posts(context=CONTEXT)

        class Stalling:
            """``a``'s sender: ``a`` stalls before its request goes out, and ``b`` takes the post over."""

            def post_score(self, lineitem: str, payload: dict[str, Any]) -> None:
                assert other.send_due(after_the_claim_expired()) == 1
                HttpSender().post_score(lineitem, payload)

        with caplog.at_level(logging.WARNING, logger="autograder.service.outbox"):
            assert Outbox(a, Stalling()).send_due() == 1
        [post] = a.posts(context=CONTEXT)
        assert (post.state, post.last_error, post.conflicts, post.payload) == ("posted", None, 0, before.payload)
    assert endpoint.state.answers == [200, 409] and len(endpoint.state.accepted) == 1
    assert f"score post {post.id}: another replica took it over" in caplog.text


def test_a_sender_meeting_the_database_away_retries_the_post_without_a_traceback(
        store: Store, endpoint: ScoreEndpoint, caplog: pytest.LogCaptureFixture) -> None:
    """The LTI sender reads who owns a line item from the database before it sends: a database
    restarting then is an outage (one warning line), not a sender bug with its traceback, and
    the post goes once the database answers."""
    graded(store, "ann", 8)

    class AwayOnce:
        def __init__(self) -> None:
            self.calls = 0

        def post_score(self, lineitem: str, payload: dict[str, Any]) -> None:
            self.calls += 1
            if self.calls == 1:
                raise OperationalError("SELECT issuer FROM lti_lineitem", {}, Exception("the database system is "
                                                                                         "shutting down"))
            HttpSender().post_score(lineitem, payload)

    outbox = Outbox(store, AwayOnce(), base_delay_s=0.01)
    with caplog.at_level(logging.WARNING, logger="autograder.service"):
        assert outbox.send_due() == 1
    [post] = store.posts(context=CONTEXT)
    assert post.status == "retrying" and "OperationalError" in (post.last_error or "")
    assert not [r for r in caplog.records if r.exc_info], "a database away is logged without a traceback"
    assert "the database is unreachable" in caplog.text
    assert outbox.send_due(datetime.now(UTC) + timedelta(seconds=1)) == 1
    assert store.posts(context=CONTEXT)[0].state == "posted" and len(endpoint.state.accepted) == 1
