"""A stand-in LMS for the service's tests, built on ``lti1p3platform`` (a third-party
implementation of the LTI 1.3 platform side) with its FastAPI adapter.

lti1p3platform does the protocol: OIDC login initiation, the signed id_token (claims,
deep linking settings, the AGS endpoint claim), the access token for the client
credentials grant with the tool's JWT assertion checked against the tool's JWKS, and the
deep linking response's signature.  What it leaves to the LMS is written here the way
Moodle does it (docs/LMS.md, each with its Moodle source file): the dynamic registration
endpoint, the ``redirect_uri`` check, line items, the token endpoint's strictness (the
assertion's times checked against the platform's own clock with no leeway, any failure a
400) and the scores endpoint with Moodle's quirks (400 unless the required fields are
there, 409 unless the timestamp is newer, ``scoreGiven`` dropped unless ``FullyGraded``).
"""

from __future__ import annotations

import base64
import html
import json
import math
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from joserfc.jwk import RSAKey
from lti1p3platform.framework.fastapi.oidc_login import FastAPIOIDCLogin
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.registration import Registration

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
COURSE = "42"
LTI_CLAIM = "https://purl.imsglobal.org/spec/lti/claim"


def new_private_key() -> str:
    return RSAKey.generate_key(2048, private=True).as_pem(private=True).decode()


@dataclass
class LineItem:
    id: int
    label: str
    score_maximum: float
    resource_id: str
    resource_link_id: str
    week: str


@dataclass
class PlatformState:
    """What a test reads back: registrations, line items, every score received."""

    base: str = ""
    private_key: str = field(default_factory=new_private_key)
    registration_tokens: set[str] = field(default_factory=set)
    registrations: dict[str, Registration] = field(default_factory=dict)
    tool_requests: list[dict[str, Any]] = field(default_factory=list)
    lineitems: dict[int, LineItem] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)        # accepted, as stored
    refused_scores: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    grades: dict[tuple[int, str], tuple[float | None, float]] = field(default_factory=dict)  # value, timestamp
    lock: threading.Lock = field(default_factory=threading.Lock)
    clock_offset_s: float = 0.0  # the platform's clock minus the tool's (negative: the platform is behind)
    token_refusals: list[str] = field(default_factory=list)  # the token endpoint's 400 answers
    # False: the admin left the score scope out (launches' AGS claim lacks it, the token endpoint refuses it)
    grant_score: bool = True

    def now(self) -> int:
        """PHP's time() on the platform: whole seconds, on its own clock."""
        return int(time.time() + self.clock_offset_s)

    def new_registration_token(self) -> str:
        token = secrets.token_urlsafe(16)
        self.registration_tokens.add(token)
        return token

    def registration(self) -> Registration:
        """The first tool registered: the one the tests launch."""
        return next(iter(self.registrations.values()))


class PlatformConfig(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration  # type: ignore[return-value]


class OIDCLogin(FastAPIOIDCLogin):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = json.dumps(kwargs)


class MessageLaunch(LTIAdvantageMessageLaunchAbstract):
    def get_preflight_response(self) -> dict[str, Any]:
        return dict(self._request.query_params)  # type: ignore[union-attr]

    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> Response:
        # the adapter's own template module imports pkg_resources, gone from new setuptools
        fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(str(launch_data[name]))}">'
                         for name in ("id_token", "state"))
        return HTMLResponse(f'<!doctype html><form method="POST" action="{html.escape(launch_data["launch_url"])}" '
                            f'id="form">{fields}</form>'
                            '<script>document.getElementById("form").submit();</script>')


def create_platform(state: PlatformState) -> FastAPI:
    app = FastAPI()

    def config_for(client_id: str | None = None) -> PlatformConfig:
        registration = state.registrations[client_id] if client_id else state.registration()
        return PlatformConfig(registration=registration)

    @app.get("/.well-known/openid-configuration")
    def openid_configuration() -> dict[str, Any]:
        return {"issuer": state.base, "authorization_endpoint": f"{state.base}/auth",
                "token_endpoint": f"{state.base}/token", "jwks_uri": f"{state.base}/jwks",
                "registration_endpoint": f"{state.base}/register",
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                "https://purl.imsglobal.org/spec/lti-platform-configuration": {
                    "product_family_code": "moodle", "version": "4.5",
                    "messages_supported": [{"type": "LtiResourceLinkRequest"}, {"type": "LtiDeepLinkingRequest"}]}}

    @app.post("/register")
    async def register(request: Request) -> Response:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in state.registration_tokens:
            return Response("token_already_used", status_code=401)
        state.registration_tokens.discard(token)
        body = await request.json()
        state.tool_requests.append(body)
        for key in ("initiate_login_uri", "redirect_uris", "client_name", "jwks_uri"):
            if not body.get(key):
                return Response(f"missing required attribute {key}", status_code=400)
        if "id_token" not in body.get("response_types", []) or body.get("token_endpoint_auth_method") != \
                "private_key_jwt":
            return Response("invalid response_types or token_endpoint_auth_method", status_code=400)
        tool = body.get(TOOL_CONFIG) or {}
        target = tool.get("target_link_uri") or body["redirect_uris"][0]
        if not tool.get("domain") or urlsplit(target).netloc != tool["domain"]:
            return Response("missing_domain", status_code=400)
        client_id = secrets.token_hex(8)
        deployment_id = str(len(state.registrations) + 1)
        deep_link = next((m.get("target_link_uri", target) for m in tool.get("messages", [])
                          if m.get("type") == "LtiDeepLinkingRequest"), target)
        registration = (Registration().set_iss(state.base).set_client_id(client_id)
                        .set_deployment_id(deployment_id).set_oidc_login_url(body["initiate_login_uri"])
                        .set_launch_url(target).set_deeplink_launch_url(deep_link)
                        .set_platform_private_key(state.private_key)
                        .set_platform_public_key(RSAKey.import_key(state.private_key).as_pem(private=False).decode())
                        .set_tool_key_set_url(body["jwks_uri"]))
        registration.redirect_uris = list(body["redirect_uris"])  # type: ignore[attr-defined]
        state.registrations[client_id] = registration
        return JSONResponse({"client_id": client_id, **{k: body[k] for k in ("client_name", "redirect_uris")},
                             "scope": " ".join(scope for scope in body.get("scope", "").split()
                                               if state.grant_score or scope != SCORE_SCOPE),
                             TOOL_CONFIG: {"version": "1.3.0", "deployment_id": deployment_id,
                                           "target_link_uri": target, "domain": tool["domain"]}})

    @app.get("/jwks")
    def jwks() -> dict[str, Any]:
        return {"keys": Registration().set_platform_public_key(
            RSAKey.import_key(state.private_key).as_pem(private=False).decode()).get_jwks()}

    @app.get("/start")
    def start(request: Request, user: str, role: str = "learner", link: str = "", deep_link: bool = False,
              week: str = "", locale: str = "") -> Response:
        """What Moodle's lti_initiate_login does when a user opens the activity (``locale``: the
        language the LMS shows the user, sent as launch_presentation's locale)."""
        login = OIDCLogin(request, config_for())
        login.set_lti_message_hint(user=user, role=role, link=link, deep_link=deep_link, week=week, locale=locale)
        if deep_link:
            login.set_deeplinking_launch_url()
        return login.initiate_login(user)  # type: ignore[no-any-return]

    @app.get("/course")
    def course_page(request: Request) -> HTMLResponse:
        """Moodle's activity page: the tool in an iframe, launched for this user."""
        query = request.url.query
        return HTMLResponse(f'<!doctype html><title>ML101</title><h1>ML101 (the LMS)</h1>'
                            f'<iframe id="tool" src="/start?{query}" style="width:100%;height:900px" '
                            f'allow="clipboard-write"></iframe>')

    @app.get("/auth")
    def auth(request: Request) -> Response:
        """Moodle's mod/lti/auth.php: checks the auth request, posts the signed id_token to the tool."""
        params = dict(request.query_params)
        registration = state.registrations.get(params.get("client_id", ""))
        if registration is None:
            return JSONResponse({"error": "unauthorized_client"}, status_code=400)
        if params.get("redirect_uri") not in registration.redirect_uris:  # type: ignore[attr-defined]
            return JSONResponse({"error": "invalid_request", "why": "redirect_uri"}, status_code=400)
        if (params.get("scope"), params.get("response_type"), params.get("response_mode")) != \
                ("openid", "id_token", "form_post"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        hint = json.loads(params["lti_message_hint"])
        launch = MessageLaunch(request, config_for(params["client_id"]))  # type: ignore[arg-type]
        role = INSTRUCTOR if hint["role"] == "instructor" else LEARNER
        user = hint["user"]
        launch.set_user_data(user, [role], full_name=f"User {user}", email_address=f"{user}@example.org")
        launch.set_launch_context_claim(COURSE, context_types=["CourseSection"], context_title="ML101",
                                        context_label="ML101")
        if hint.get("locale"):  # Moodle sends the user's language, as "ja" or "pt_br"
            launch.lti_claim_launch_presentation = {f"{LTI_CLAIM}/launch_presentation": {
                "document_target": "iframe", "locale": hint["locale"]}}
        if hint["deep_link"]:
            launch.set_dl(f"{state.base}/deep_link_return", title="Add an activity")
        else:
            item = next((li for li in state.lineitems.values() if li.resource_link_id == hint["link"]), None)
            launch.set_resource_link_claim(hint["link"], title=item.label if item else "Activity")
            launch.set_custom_parameters_claim({"week": item.week if item else hint["week"]})
            lineitems = f"{state.base}/{COURSE}/lineitems"
            launch.set_ags(lineitems, f"{lineitems}/{item.id}/lineitem" if item else None,
                           allow_creating_lineitems=False, scores_service_enabled=state.grant_score)
        return launch.lti_launch()  # type: ignore[no-any-return]

    @app.post("/token")
    async def token(request: Request) -> Response:
        if request.headers.get("content-type") != "application/x-www-form-urlencoded":
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        form = dict(await request.form())
        if not state.grant_score and set(str(form.get("scope", "")).split()) <= {SCORE_SCOPE}:
            # mod/lti/token.php: the scopes asked for, less those the tool type is not permitted
            state.token_refusals.append("invalid_scope")
            return JSONResponse({"error": "invalid_scope"}, status_code=400)
        try:
            unverified = json.loads(_b64(str(form.get("client_assertion", "")).split(".")[1]))
            config = config_for(unverified["sub"])
            granted = config.get_access_token(form)  # the signature, against the tool's JWKS
            _check_times(unverified, state.now())
            return JSONResponse(granted)
        except Exception as exc:  # noqa: BLE001 - Moodle answers 400 whatever is wrong
            # mod/lti/token.php: a failure in lti_verify_jwt_signature becomes 400 with the
            # exception's message as the error
            state.token_refusals.append(str(exc))
            return JSONResponse({"error": str(exc)}, status_code=400)

    @app.post("/deep_link_return")
    async def deep_link_return(request: Request) -> Response:
        """Moodle's contentitem_return.php: checks the JWT, creates the activity and its grade item."""
        form = dict(await request.form())
        try:
            items = config_for().validate_deeplinking_resp(form)
        except Exception as exc:  # noqa: BLE001 - the test reads the refusal
            return JSONResponse({"error": str(exc)}, status_code=400)
        created = []
        for item in items:
            line = item.get("lineItem") or {}
            number = len(state.lineitems) + 1
            state.lineitems[number] = LineItem(
                id=number, label=line.get("label", item.get("title", "")),
                score_maximum=float(line.get("scoreMaximum", 100)), resource_id=line.get("resourceId", ""),
                resource_link_id=f"link-{number}", week=(item.get("custom") or {}).get("week", ""))
            created.append({"lineitem": number, "resource_link_id": f"link-{number}", "title": item.get("title")})
        return JSONResponse({"created": created})

    @app.post("/{course}/lineitems/{item}/lineitem/scores")
    async def scores(course: str, item: int, request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        try:
            allowed = config_for().validate_token(auth.removeprefix("Bearer "), allowed_scopes=[SCORE_SCOPE])
        except Exception:  # noqa: BLE001 - any bad token is Moodle's 401
            allowed = False
        if not auth.startswith("Bearer ") or not allowed:
            return JSONResponse({"status": 401, "reason": "Unauthorized"}, status_code=401)
        if request.headers.get("content-type") != "application/vnd.ims.lis.v1.score+json":
            return JSONResponse({"status": 400, "reason": "No handler found"}, status_code=400)
        if course != COURSE or item not in state.lineitems:
            return JSONResponse({"status": 404, "reason": "Not found"}, status_code=404)
        body = await request.json()
        with state.lock:
            if any(k not in body for k in ("userId", "timestamp", "activityProgress", "gradingProgress")) or \
                    ("scoreGiven" in body and "scoreMaximum" not in body):
                state.refused_scores.append((400, body))
                return JSONResponse([], status_code=400)
            stamp = datetime.fromisoformat(body["timestamp"]).timestamp()
            previous = state.grades.get((item, body["userId"]))
            if previous and previous[1] >= stamp:
                state.refused_scores.append((409, body))
                return JSONResponse([], status_code=409)
            given = body.get("scoreGiven") if body["gradingProgress"] == "FullyGraded" else None
            maximum = float(body.get("scoreMaximum", 1))
            value = None if given is None else given * state.lineitems[item].score_maximum / maximum
            state.grades[(item, body["userId"])] = (value, stamp)
            state.scores.append({**body, "lineitem": item, "stored": value, "received": time.time()})
        return Response(status_code=200)

    return app


class BeforeValid(Exception):
    """php-jwt's BeforeValidException / ExpiredException."""


def _check_times(claims: dict[str, Any], now: int) -> None:
    """lib/php-jwt/src/JWT.php ``JWT::decode`` with Moodle's ``$leeway = 0``: ``nbf`` after
    now is refused; without ``nbf``, so is ``iat`` after now; ``exp`` at or before now too."""
    if "nbf" in claims and math.floor(claims["nbf"]) > now:
        raise BeforeValid(f"Cannot handle token with nbf prior to {_iso(claims['nbf'])}")
    if "nbf" not in claims and "iat" in claims and math.floor(claims["iat"]) > now:
        raise BeforeValid(f"Cannot handle token with iat prior to {_iso(claims['iat'])}")
    if "exp" in claims and now >= claims["exp"]:
        raise BeforeValid("Expired token")


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(int(moment), UTC).strftime("%Y-%m-%dT%H:%M:%S%z")


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
