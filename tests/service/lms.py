"""The running pair the service's end-to-end tests share: the stand-in LMS (lti1p3platform)
over http on loopback and the whole grading service (web app, grading threads, outbox)
over https on loopback, registered with each other by LTI Dynamic Registration."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from lti1p3platform.registration import Registration

from autograder.course import Course
from autograder.service.app import create_app, service_app
from autograder.service.policy import policy_for
from autograder.service.settings import Settings
from autograder.service.store import Store
from autograder.service.tool import Tool
from tests.service.lti_platform import COURSE, LEARNER, PlatformState, create_platform
from tests.service.web import Browser, free_port, make_certificate, serving

CLAIM = "https://purl.imsglobal.org/spec/lti/claim"


@dataclass
class Lms:
    platform: PlatformState
    platform_url: str
    tool_url: str
    certificate: Path
    app: Any
    activity_link: str = ""   # the resource link deep linking created for week01
    registered_page: str = ""  # the tool's page that closed the registration dialog
    keep_alive: bool = True  # False: each browser request on a new connection (tests.service.web.Browser)

    def browser(self) -> Browser:
        return Browser(self.certificate, keep_alive=self.keep_alive)

    def launch(self, user: str, *, role: str = "learner", link: str | None = None,
               locale: str = "") -> tuple[Browser, httpx.Response]:
        """A user opens the activity in the LMS: login initiation, auth, the form post, the tool's
        page (``locale``: the language the LMS shows them in, "": none sent)."""
        browser = self.browser()
        page = browser.get(f"{self.platform_url}/start", params={"user": user, "role": role, "locale": locale,
                                                                 "link": link or self.activity_link})
        return browser, page

    def open_activity(self, context: Any, user: str, role: str, locale: str = "") -> Any:
        """In a Playwright browser ``context``, a user opens the activity's course page in the LMS
        (shown to them in ``locale``, "": none sent); the page once the launch has gone through
        to the tool's page in its iframe."""
        page = context.new_page()
        page.goto(f"{self.platform_url}/course?user={user}&role={role}&link={self.activity_link}&locale={locale}")
        page.frame_locator("iframe#tool").locator("h1").wait_for()
        return page

    def tool_frame(self, page: Any) -> Any:
        """The tool's frame inside the LMS's course page (not the feedback's inside it)."""
        return next(f for f in page.frames if f.url.startswith(self.tool_url) and f.name != "feedback"
                    and "/feedback" not in f.url)

    def begin_login(self, browser: Browser) -> tuple[str, str]:
        """The tool's half of a login, by hand: (state, nonce); the browser gets the state cookie."""
        registration = self.platform.registration()
        reply = browser.client.get(f"{self.tool_url}/lti/login", follow_redirects=False, params={
            "iss": self.platform.base, "login_hint": "s-forged", "client_id": registration.get_client_id(),
            "target_link_uri": f"{self.tool_url}/lti/launch", "lti_deployment_id": registration.get_deployment_id()})
        assert reply.status_code == 302, reply.text
        query = parse_qs(urlsplit(reply.headers["location"]).query)
        return query["state"][0], query["nonce"][0]

    def claims(self, nonce: str, **changes: Any) -> dict[str, Any]:
        """An id_token's claims as the platform would send them for a learner of the week01 activity."""
        registration = self.platform.registration()
        now = int(time.time())
        claims = {
            "iss": self.platform.base, "aud": registration.get_client_id(), "azp": registration.get_client_id(),
            "iat": now, "exp": now + 60, "nonce": nonce, "sub": "s-forged", "name": "Mallory",
            f"{CLAIM}/message_type": "LtiResourceLinkRequest", f"{CLAIM}/version": "1.3.0",
            f"{CLAIM}/deployment_id": registration.get_deployment_id(), f"{CLAIM}/roles": [LEARNER],
            f"{CLAIM}/context": {"id": COURSE}, f"{CLAIM}/resource_link": {"id": self.activity_link},
            f"{CLAIM}/custom": {"week": "week01"}}
        claims.update(changes)
        return claims

    def post_id_token(self, browser: Browser, claims: dict[str, Any], state: str, *,
                      private_key: str | None = None) -> httpx.Response:
        key = private_key or self.platform.private_key
        kid = Registration.get_jwk(self.platform.private_key)["kid"]
        token = Registration.encode_and_sign(claims, key, headers={"kid": kid})
        return browser.client.post(f"{self.tool_url}/lti/launch", data={"id_token": token, "state": state})


@contextmanager
def tool_app(settings: Settings, course: Course, *, grading: bool) -> Iterator[Any]:
    """The whole service; or, for tests of LTI alone, the web app on a real store with no grader
    started (nothing is uploaded there, so nothing waits for one)."""
    if grading:
        with service_app(settings, course, jobs=1) as app:
            yield app
        return
    store = Store(settings.data, database=settings.database)
    tool = Tool(settings)
    app = create_app(settings, course=course, store=store, tool=tool,
                     policy_for=lambda week: policy_for(course.root, week), wake=lambda: None)
    app.state.store, app.state.tool = store, tool
    yield app


@contextmanager
def running_lms(folder: Path, course: Course, *, grading: bool = True,
                upload_limit_bytes: int = 512 * 1024, **changes: Any) -> Iterator[Lms]:
    """``changes``: other ``Settings`` of the tool (``edge=EdgeLimits(...)``, rate limits)."""
    certificate = make_certificate(folder)
    state = PlatformState()
    platform_port, tool_port = free_port(), free_port()
    state.base = f"http://127.0.0.1:{platform_port}"
    settings = Settings(**{"public_url": f"https://127.0.0.1:{tool_port}", "data": folder / "service",
                           "upload_limit_bytes": upload_limit_bytes, "uploads_per_minute": 30, **changes})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))  # the LMS fetches our JWKS over https
        with tool_app(settings, course, grading=grading) as app, \
                serving(create_platform(state), platform_port) as platform_url, \
                serving(app, tool_port, certificate=certificate, limits=settings.edge) as tool_url:
            yield Lms(platform=state, platform_url=platform_url, tool_url=tool_url, certificate=certificate[0],
                      app=app)


@contextmanager
def registered_lms(folder: Path, course: Course, **options: Any) -> Iterator[Lms]:
    """A running pair (``options`` as ``running_lms`` takes them) once the tool is registered
    and week01 added: where every service test that goes through the LMS starts."""
    with running_lms(folder, course, **options) as running:
        running.registered_page = register_and_add_week(running).text
        yield running


def register_and_add_week(lms: Lms, week: str = "week01", *, registration_url: str | None = None) -> httpx.Response:
    """What an admin and an instructor do once: dynamic registration (at ``registration_url``,
    by default one the in-process tool makes), then adding the week by deep linking."""
    browser = lms.browser()
    token = lms.platform.new_registration_token()
    page = browser.get(registration_url or lms.app.state.tool.new_registration_url(), params={
        "openid_configuration": f"{lms.platform_url}/.well-known/openid-configuration",
        "registration_token": token})
    assert page.status_code == 200, page.text
    picker = browser.get(f"{lms.platform_url}/start", params={"user": "t1", "role": "instructor",
                                                              "deep_link": "true"})
    assert picker.status_code == 200, picker.text
    created = browser.submit(picker, "pick", data={"week": week})
    assert created.status_code == 200, created.text
    lms.activity_link = created.json()["created"][0]["resource_link_id"]
    return page


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"
