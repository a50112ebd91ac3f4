"""A platform that did not grant the score scope: its score posts fail at once, with a reason
the instructor reads on the week's page, instead of being retried for ever (issue 37).

The stand-in LMS leaves the scope out as Moodle does when the tool type may not post scores:
the launch's AGS claim lacks it and the token endpoint answers 400 ``invalid_scope``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.outbox import Outbox
from autograder.service.policy import WeekPolicy
from autograder.service.store import Post, Store
from tests.service.lms import Lms
from tests.service.lti_platform import COURSE

pytestmark = pytest.mark.lms(grading=False)

NO_SCOPE = "the LMS did not grant the score scope"


@pytest.fixture
def without_score_scope(lms: Lms) -> Iterator[None]:
    """The platform's admin takes the score scope away (given back after the test)."""
    lms.platform.grant_score = False
    yield
    lms.platform.grant_score = True


def graded_post(lms: Lms, user: str) -> Post:
    """``user``'s attempt at week01 graded 8/10, its score post sent once; the post as it is then."""
    store: Store = lms.app.state.store
    context = f"{lms.platform.base}|{lms.platform.registration().get_deployment_id()}|{COURSE}"
    attempt = store.submit(context=context, user=user, week="week01", content=user.encode(), policy=WeekPolicy(),
                           now=datetime.now(UTC))
    claimed = store.claim()
    assert claimed is not None and claimed.id == attempt.id
    store.record_result(attempt.id, SubmissionResult(
        submission="x", key="x", status=Status.GRADED, tasks=[TaskResult(task=1, score=8, max_score=10)],
        submission_sha256="h", tests_sha256="t", grader_version="v"), week_title="week01")
    assert Outbox(store, lms.app.state.tool.sender).send_due() == 1
    (post,) = [post for post in store.posts(context=context) if post.user == user]
    return post


def test_a_launch_without_the_score_scope_fails_the_post_at_once_and_the_instructor_reads_why(
        lms: Lms, without_score_scope: None) -> None:
    lms.launch("s-scope")  # the launch names the line item and what it grants
    refusals = len(lms.platform.token_refusals)
    post = graded_post(lms, "s-scope")
    assert post.state == "failed" and post.tries == 1
    assert NO_SCOPE in (post.last_error or "") and "Assignment and Grade Services" in (post.last_error or "")
    # the platform was not even asked
    assert len(lms.platform.token_refusals) == refusals and not any(s["userId"] == "s-scope" for s in lms.platform.scores)
    _, page = lms.launch("t-scope", role="instructor")
    assert page.status_code == 200 and NO_SCOPE in page.text and 'id="resend-' in page.text


def test_a_token_endpoint_refusing_the_score_scope_fails_the_post_at_once(lms: Lms) -> None:
    lms.launch("s-untick")  # launched while the score scope was granted
    lms.platform.grant_score = False  # then the admin takes it away
    refusals = len(lms.platform.token_refusals)
    try:
            post = graded_post(lms, "s-untick")
    finally:
        lms.platform.grant_score = True
    assert post.state == "failed" and post.tries == 1 and NO_SCOPE in (post.last_error or "")
    assert "invalid_scope" in (post.last_error or "") and lms.platform.token_refusals[refusals:] == ["invalid_scope"]
