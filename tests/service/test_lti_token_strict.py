"""Moodle's token endpoint is strict (mod/lti/token.php with lib/php-jwt, no clock leeway,
400 for any failure checking the assertion), and the tool copes: its assertion is dated a
little in the past, a refusal there is tried again with backoff rather than failed, and a
post the platform did refuse can be sent again from the instructor's page."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autograder.service.outbox import Outbox
from autograder.service.store import Store
from tests.service.lms import Lms
from tests.service.lti_platform import COURSE
from tests.service.test_lti_ags import lineitem, payload
from tests.service.test_outbox import graded
from tests.service.web import Browser, forms

pytestmark = pytest.mark.lms(grading=False)


@pytest.fixture(scope="module")
def instructor(lms: Lms) -> Browser:
    """An instructor who opened the activity (which tells the tool the week's line item)."""
    browser, page = lms.launch("t-strict", role="instructor")
    assert page.status_code == 200 and str(page.url).endswith("/instructor/week01"), page.text
    assert lms.app.state.store.lineitem(context(lms), "week01")
    return browser


@pytest.fixture
def platform_clock(lms: Lms) -> Iterator[None]:
    """Each test sets the platform's clock; it is put right afterwards."""
    yield
    lms.platform.clock_offset_s = 0.0


def fresh_sender(lms: Lms) -> None:
    lms.app.state.tool.sender._tokens.clear()  # the next post asks the token endpoint again


def context(lms: Lms) -> str:
    return f"{lms.platform.base}|{lms.platform.registration().get_deployment_id()}|{COURSE}"


def test_a_platform_clock_two_seconds_behind_still_grants_a_token(lms: Lms, platform_clock: None) -> None:
    lms.platform.clock_offset_s = -2.0  # the tool's clock is 2 s ahead of Moodle's
    fresh_sender(lms)
    lms.app.state.tool.sender.post_score(lineitem(lms), payload("strict-1", 40, datetime.now(UTC)))
    assert any(s["userId"] == "strict-1" for s in lms.platform.scores)


def test_a_token_refusal_is_retried_with_backoff_then_the_score_arrives(lms: Lms, instructor: Browser,
                                                                         platform_clock: None) -> None:
    store: Store = lms.app.state.store
    lms.platform.clock_offset_s = -600.0  # far more than the assertion is dated back
    fresh_sender(lms)
    graded(store, "strict-2", 6, context=context(lms))
    outbox = Outbox(store, lms.app.state.tool.sender, base_delay_s=30)
    outbox.send_due()
    [post] = [p for p in store.posts(context=context(lms)) if p.user == "strict-2"]
    assert post.state == "pending" and post.status == "retrying"
    assert "Cannot handle token with nbf prior to" in (post.last_error or "")
    assert post.next_try_at is not None and post.next_try_at > datetime.now(UTC) + timedelta(seconds=20)
    outbox.send_due(datetime.now(UTC) + timedelta(seconds=40))  # still refused: the wait doubles
    [post] = [p for p in store.posts(context=context(lms)) if p.user == "strict-2"]
    assert post.status == "retrying" and post.next_try_at > datetime.now(UTC) + timedelta(seconds=50)
    lms.platform.clock_offset_s = 0.0  # someone set the clock right
    outbox.send_due(datetime.now(UTC) + timedelta(seconds=120))
    [post] = [p for p in store.posts(context=context(lms)) if p.user == "strict-2"]
    assert post.state == "posted"
    assert any(s["userId"] == "strict-2" for s in lms.platform.scores)


def test_a_refused_post_is_sent_again_from_the_instructors_page(lms: Lms, instructor: Browser) -> None:
    store: Store = lms.app.state.store
    item = next(i for i in lms.platform.lineitems.values() if i.resource_link_id == lms.activity_link)
    del lms.platform.lineitems[item.id]  # the grade item is gone for a moment: Moodle answers 404
    try:
        graded(store, "strict-3", 7, context=context(lms))
        Outbox(store, lms.app.state.tool.sender).send_due()
    finally:
        lms.platform.lineitems[item.id] = item
    [post] = [p for p in store.posts(context=context(lms)) if p.user == "strict-3"]
    assert post.state == "failed" and "answered 404" in (post.last_error or "")
    page = instructor.get(f"{lms.tool_url}/instructor/week01")
    assert f'id="resend-{post.id}"' in page.text
    after = instructor.submit(page, f"resend-{post.id}")
    assert after.status_code == 200 and str(after.url).endswith("/instructor/week01"), after.text
    [post] = [p for p in store.posts(context=context(lms)) if p.user == "strict-3"]
    assert post.state == "pending"
    Outbox(store, lms.app.state.tool.sender).send_due()
    assert [p.state for p in store.posts(context=context(lms)) if p.user == "strict-3"] == ["posted"]
    assert any(s["userId"] == "strict-3" for s in lms.platform.scores)


def test_the_resend_needs_the_forms_csrf_token(lms: Lms, instructor: Browser) -> None:
    reply = instructor.client.post(f"{lms.tool_url}/instructor/week01/posts/1/resend", data={"csrf": "forged"})
    assert reply.status_code == 403


@pytest.mark.parametrize("post_id", [2**63, 2**64 + 5])
def test_a_resend_of_a_number_no_post_can_have_is_a_404_under_the_weeks_own_name(
        lms: Lms, instructor: Browser, post_id: int) -> None:
    page = instructor.get(f"{lms.tool_url}/instructor/week01/regrade")  # a form of the session's, with its token
    csrf = next(f for f in forms(page.text) if "csrf" in f["fields"])["fields"]["csrf"]
    reply = instructor.client.post(f"{lms.tool_url}/instructor/1/posts/{post_id}/resend", data={"csrf": csrf})
    assert reply.status_code == 404, reply.text
    assert 'href="/instructor/week01"' in reply.text  # the way back names the week, not the alias
