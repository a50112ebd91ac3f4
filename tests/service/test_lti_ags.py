"""The AGS score sender against the lti1p3platform LMS: the client-credentials token got with
our signed JWT assertion and reused, the score posted with the fields Moodle reads, and
Moodle's answers turned into what the outbox needs (409: do not retry; 401: new token)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autograder.exceptions import ScorePostError
from autograder.service.lti import AgsScoreSender, Platform, scores_url
from tests.service.lms import Lms

pytestmark = pytest.mark.lms(grading=False)


def payload(user: str, score: float, moment: datetime, progress: str = "FullyGraded") -> dict[str, object]:
    return {"userId": user, "scoreGiven": score, "scoreMaximum": 100, "activityProgress": "Completed",
            "gradingProgress": progress, "timestamp": moment.isoformat(timespec="milliseconds")}


def lineitem(lms: Lms) -> str:
    (item,) = [i for i in lms.platform.lineitems.values() if i.resource_link_id == lms.activity_link]
    return f"{lms.platform.base}/42/lineitems/{item.id}/lineitem?type_id=1"


def test_scores_url_goes_before_the_query() -> None:
    assert scores_url("https://lms/mod/lti/services.php/2/lineitems/7/lineitem?type_id=3") == \
        "https://lms/mod/lti/services.php/2/lineitems/7/lineitem/scores?type_id=3"


def test_a_score_is_posted_with_a_token_that_is_then_reused(lms: Lms) -> None:
    sender: AgsScoreSender = lms.app.state.tool.sender
    now = datetime.now(UTC)
    sender.post_score(lineitem(lms), payload("ags-1", 72.5, now))
    token = sender.access_token(lms.app.state.tool.platforms.all()[0])
    sender.post_score(lineitem(lms), payload("ags-2", 10, now))
    assert sender.access_token(lms.app.state.tool.platforms.all()[0]) == token
    stored = {s["userId"]: s for s in lms.platform.scores}
    assert stored["ags-1"]["stored"] == 72.5 and stored["ags-1"]["gradingProgress"] == "FullyGraded"


def test_an_older_timestamp_is_a_409_not_worth_retrying(lms: Lms) -> None:
    sender: AgsScoreSender = lms.app.state.tool.sender
    now = datetime.now(UTC)
    sender.post_score(lineitem(lms), payload("ags-3", 50, now))
    with pytest.raises(ScorePostError) as refused:
        sender.post_score(lineitem(lms), payload("ags-3", 60, now - timedelta(seconds=1)))
    assert refused.value.status == 409 and not refused.value.retryable


def test_pending_manual_scores_store_no_value_at_moodle(lms: Lms) -> None:
    sender: AgsScoreSender = lms.app.state.tool.sender
    sender.post_score(lineitem(lms), payload("ags-4", 60, datetime.now(UTC), progress="PendingManual"))
    assert next(s for s in lms.platform.scores if s["userId"] == "ags-4")["stored"] is None


def test_a_rejected_token_is_dropped_and_the_post_retried_later(lms: Lms) -> None:
    sender: AgsScoreSender = lms.app.state.tool.sender
    platform = lms.app.state.tool.platforms.all()[0]
    sender.access_token(platform)
    sender._tokens[(platform.issuer, platform.client_id)] = ("not-a-token", float("inf"))
    with pytest.raises(ScorePostError) as refused:
        sender.post_score(lineitem(lms), payload("ags-5", 1, datetime.now(UTC)))
    assert refused.value.status == 401 and refused.value.retryable
    sender.post_score(lineitem(lms), payload("ags-5", 1, datetime.now(UTC)))  # a fresh token this time
    assert any(s["userId"] == "ags-5" for s in lms.platform.scores)


def test_a_lineitem_of_no_registered_platform_is_refused_for_good(lms: Lms) -> None:
    sender: AgsScoreSender = lms.app.state.tool.sender
    lms.app.state.tool.platforms.add(Platform(
        issuer="https://other.example", client_id="x", auth_login_url="https://other.example/auth",
        token_url="https://other.example/token", jwks_url="https://other.example/jwks", deployment_ids=("1",)))
    with pytest.raises(ScorePostError) as refused:
        sender.post_score("https://unknown.example/lineitems/1/lineitem", payload("ags-6", 1, datetime.now(UTC)))
    assert refused.value.status is None and not refused.value.retryable
