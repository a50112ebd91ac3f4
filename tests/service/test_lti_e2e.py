"""LTI 1.3 end to end over loopback HTTP against a platform built on lti1p3platform:
dynamic registration, deep linking, learner and instructor launches, and every launch the
tool must refuse (another key, expired, replayed nonce, wrong audience, unknown deployment)."""

from __future__ import annotations

import time

import pytest
from joserfc.jwk import RSAKey
from lti1p3platform.registration import Registration

from autograder.course import Course
from autograder.service.sessions import SESSION_COOKIE, STATE_COOKIE
from tests.service.lms import Lms
from tests.service.lti_platform import TOOL_CONFIG, new_private_key

pytestmark = pytest.mark.lms(grading=False)


def test_dynamic_registration_sends_every_value_and_keeps_the_answer(lms: Lms) -> None:
    sent = lms.platform.tool_requests[0]
    assert sent["initiate_login_uri"] == f"{lms.tool_url}/lti/login"
    assert sent["redirect_uris"] == [f"{lms.tool_url}/lti/launch"]
    assert sent["jwks_uri"] == f"{lms.tool_url}/lti/jwks"
    assert sent[TOOL_CONFIG]["domain"] == lms.tool_url.removeprefix("https://")
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in sent["scope"].split()
    assert any(m["type"] == "LtiDeepLinkingRequest" for m in sent[TOOL_CONFIG]["messages"])
    registration = lms.platform.registration()
    (known,) = lms.app.state.tool.platforms.all()
    assert (known.issuer, known.client_id) == (lms.platform.base, registration.get_client_id())
    assert known.deployment_ids == (registration.get_deployment_id(),)
    assert known.jwks_url == f"{lms.platform_url}/jwks"


def test_the_registration_page_closes_moodles_dialog_and_a_used_url_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    url = lms.app.state.tool.new_registration_url()
    params = {"openid_configuration": f"{lms.platform_url}/.well-known/openid-configuration",
              "registration_token": lms.platform.new_registration_token()}
    first = browser.get(url, params=params)
    assert "org.imsglobal.lti.close" in first.text
    before = len(lms.platform.tool_requests)
    again = browser.get(url, params={**params, "registration_token": lms.platform.new_registration_token()})
    assert again.status_code == 403 and "used up" in again.text
    assert len(lms.platform.tool_requests) == before  # the platform was not even asked


def test_registration_without_a_code_the_tool_issued_is_refused(lms: Lms) -> None:
    before = len(lms.platform.tool_requests)
    params = {"openid_configuration": f"{lms.platform_url}/.well-known/openid-configuration",
              "registration_token": lms.platform.new_registration_token()}
    for url in (f"{lms.tool_url}/lti/register", f"{lms.tool_url}/lti/register/guessed"):
        reply = lms.browser().get(url, params=params)
        assert reply.status_code == 403 and "registration-url" in reply.text
    assert len(lms.platform.tool_requests) == before  # the platform was not even asked


def test_the_manual_registration_page_lists_every_url(lms: Lms) -> None:
    page = lms.browser().get(f"{lms.tool_url}/lti/config")
    for path in ("/lti/login", "/lti/launch", "/lti/jwks"):
        assert f"{lms.tool_url}{path}" in page.text


def test_the_jwks_serves_the_public_key_only(lms: Lms) -> None:
    keys = lms.browser().get(f"{lms.tool_url}/lti/jwks").json()["keys"]
    assert keys and all(k["kty"] == "RSA" and k["alg"] == "RS256" and "d" not in k for k in keys)


def test_deep_linking_creates_the_activity_with_the_weeks_points(lms: Lms, course: Course) -> None:
    (item,) = [i for i in lms.platform.lineitems.values() if i.resource_link_id == lms.activity_link]
    week = course.week("week01")
    assert item.week == "week01" and item.score_maximum == week.max_score and item.label == week.title


def test_a_learner_launch_lands_on_the_weeks_upload_page(lms: Lms) -> None:
    _, page = lms.launch("s-launch")
    assert page.status_code == 200 and str(page.url).endswith("/week/week01")
    assert 'id="upload"' in page.text and "User s-launch" in page.text
    cookie = next(h for h in page.history[-1].headers.get_list("set-cookie") if h.startswith(SESSION_COOKIE))
    assert all(flag in cookie for flag in ("Secure", "HttpOnly", "SameSite=None", "Partitioned"))


def test_an_instructor_launch_lands_on_the_instructor_page(lms: Lms) -> None:
    _, page = lms.launch("t-launch", role="instructor")
    assert page.status_code == 200 and str(page.url).endswith("/instructor/week01") and 'id="report"' in page.text


def test_a_token_signed_by_another_key_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    other = RSAKey.generate_key(2048, private=True).as_pem(private=True).decode()
    reply = lms.post_id_token(browser, lms.claims(nonce), state, private_key=other)
    assert reply.status_code == 401 and "signature does not verify" in reply.text


def test_an_expired_token_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    now = int(time.time())
    reply = lms.post_id_token(browser, lms.claims(nonce, iat=now - 600, exp=now - 300), state)
    assert reply.status_code == 401 and "exp" in reply.text


def test_a_replayed_nonce_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    claims = lms.claims(nonce)
    assert lms.post_id_token(browser, claims, state).status_code == 200
    # the same id_token again, through a fresh login whose state the attacker also holds
    state_again, _ = lms.begin_login(browser)
    reply = lms.post_id_token(browser, claims, state_again)
    assert reply.status_code == 401 and "nonce" in reply.text


def test_a_reused_state_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    assert lms.post_id_token(browser, lms.claims(nonce), state).status_code == 200
    browser.client.cookies.set(STATE_COOKIE, state, domain="127.0.0.1")  # the launch cleared it; put it back
    reply = lms.post_id_token(browser, lms.claims(nonce), state)
    assert reply.status_code == 401 and "already been used or has expired" in reply.text


def test_a_token_for_another_tool_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    reply = lms.post_id_token(browser, lms.claims(nonce, aud="another-tool", azp="another-tool"), state)
    assert reply.status_code == 401 and "aud" in reply.text


def test_an_unknown_deployment_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    reply = lms.post_id_token(browser, lms.claims(
        nonce, **{"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "999"}), state)
    assert reply.status_code == 401 and "999" in reply.text and "is not registered here" in reply.text


def test_a_launch_without_this_browsers_state_cookie_is_refused(lms: Lms) -> None:
    browser = lms.browser()
    state, nonce = lms.begin_login(browser)
    browser.client.cookies.clear()
    reply = lms.post_id_token(browser, lms.claims(nonce), state)
    assert reply.status_code == 401 and "state" in reply.text


def test_a_learner_cannot_add_activities(lms: Lms) -> None:
    browser = lms.browser()
    page = browser.get(f"{lms.platform_url}/start", params={"user": "s-dl", "role": "learner",
                                                            "deep_link": "true"})
    assert page.status_code == 403


def test_after_the_platform_rotates_its_key_launches_still_work(lms: Lms) -> None:
    old_kid = Registration.get_jwk(lms.platform.private_key)["kid"]
    _, before = lms.launch("s-rotate")
    assert before.status_code == 200
    lms.platform.private_key = new_private_key()
    public = RSAKey.import_key(lms.platform.private_key).as_pem(private=False).decode()
    for registration in lms.platform.registrations.values():
        registration.set_platform_private_key(lms.platform.private_key).set_platform_public_key(public)
    assert Registration.get_jwk(lms.platform.private_key)["kid"] != old_kid
    _, after = lms.launch("s-rotate")  # signed with a key the tool has not cached: it fetches the JWKS again
    assert after.status_code == 200 and str(after.url).endswith("/week/week01")


def test_moodles_login_initiation_by_form_post_is_accepted(lms: Lms) -> None:
    registration = lms.platform.registration()
    reply = lms.browser().client.post(f"{lms.tool_url}/lti/login", follow_redirects=False, data={
        "iss": lms.platform.base, "login_hint": "2", "client_id": registration.get_client_id(),
        "target_link_uri": f"{lms.tool_url}/lti/launch", "lti_deployment_id": registration.get_deployment_id(),
        "lti_message_hint": '{"cmid":7,"launchid":"ltilaunch7_1"}'})
    assert reply.status_code == 302 and reply.headers["location"].startswith(f"{lms.platform_url}/auth?")
    assert "lti_message_hint=%7B%22cmid%22%3A7" in reply.headers["location"]  # echoed for Moodle
    assert reply.headers["set-cookie"].startswith(f"{STATE_COOKIE}=")


def test_a_login_from_an_unregistered_platform_is_refused(lms: Lms) -> None:
    reply = lms.browser().client.get(f"{lms.tool_url}/lti/login", params={
        "iss": "https://lms.elsewhere.example", "login_hint": "1", "client_id": "x"})
    assert reply.status_code == 401 and "is registered here" in reply.text
