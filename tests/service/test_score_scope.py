"""A platform that did not grant the score scope: its score posts fail at once, with a reason
the instructor reads on the week's page, instead of being retried for ever (issue 37).

The stand-in LMS leaves the scope out as Moodle does when the tool type may not post scores:
the launch's AGS claim lacks it and the token endpoint answers 400 ``invalid_scope``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.outbox import Outbox
from autograder.service.policy import WeekPolicy
from autograder.service.store import Post, Store
from tests.service.lms import Lms, register_and_add_week, running_lms
from tests.service.lti_platform import COURSE

NO_SCOPE = "the LMS did not grant the score scope"


@pytest.fixture
def lms(tmp_path: Path, course: Course) -> Iterator[Lms]:
    """A pair of its own: the platform's grant changes from test to test."""
    with running_lms(tmp_path, course, grading=False) as running:
        yield running


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
    (post,) = store.posts(context=context)
    return post


def test_a_launch_without_the_score_scope_fails_the_post_at_once_and_the_instructor_reads_why(lms: Lms) -> None:
    lms.platform.grant_score = False
    register_and_add_week(lms)
    lms.launch("s-scope")  # the launch names the line item and what it grants
    post = graded_post(lms, "s-scope")
    assert post.state == "failed" and post.tries == 1
    assert NO_SCOPE in (post.last_error or "") and "Assignment and Grade Services" in (post.last_error or "")
    assert lms.platform.token_refusals == [] and lms.platform.scores == []  # the platform was not even asked
    _, page = lms.launch("t-scope", role="instructor")
    assert page.status_code == 200 and NO_SCOPE in page.text and 'id="resend-' in page.text


def test_a_token_endpoint_refusing_the_score_scope_fails_the_post_at_once(lms: Lms) -> None:
    register_and_add_week(lms)
    lms.launch("s-untick")  # launched while the score scope was granted
    lms.platform.grant_score = False  # then the admin takes it away
    post = graded_post(lms, "s-untick")
    assert post.state == "failed" and post.tries == 1 and NO_SCOPE in (post.last_error or "")
    assert "invalid_scope" in (post.last_error or "") and lms.platform.token_refusals == ["invalid_scope"]
