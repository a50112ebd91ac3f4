"""LTI 1.3 Advantage, the tool's side: registration, OIDC login, launch, deep linking, AGS.

The JOSE work (signatures, key sets, claim checks) is joserfc's; this module decides
*what* to check, as the LTI 1.3 and IMS Security specs ask: the platform's JWKS fetched
and cached (fetched again when a token names a key we have not seen: rotation), ``iss``,
``aud``/``azp``, ``exp``/``iat``, a ``nonce`` used once, the ``state`` bound to the
browser by a cookie, and a ``deployment_id`` the platform registered.  Moodle's side of
each step is described in docs/LMS.md, with the Moodle source files it was read from.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import delete, insert, select, update

from autograder.database import Database, clock, open_database
from autograder.database.tables import lti_lineitem, lti_nonce, lti_platforms, lti_registration, lti_state
from autograder.exceptions import AutograderError, LaunchRefused, ScoreNotSent, ScorePostError
from autograder.i18n.runtime import N_
from autograder.service.keys import ALGORITHM, ToolKeys

LTI = "https://purl.imsglobal.org/spec/lti"
CLAIM = f"{LTI}/claim"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
AGS_SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
AGS_SCOPES = (AGS_SCORE_SCOPE, "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly")
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
INSTRUCTOR_ROLES = ("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
                    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
                    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
                    "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant")
RESOURCE_LINK = "LtiResourceLinkRequest"
DEEP_LINKING = "LtiDeepLinkingRequest"
LOGIN_LIFETIME_S = 600  # from login initiation to launch
LOGIN_LIFETIME = timedelta(seconds=LOGIN_LIFETIME_S)
NONCE_MEMORY = timedelta(days=1)  # how long a used nonce is refused (an id_token expires long before)
CLOCK_LEEWAY_S = 30
# Moodle checks our client assertion with php-jwt and no leeway at all (mod/lti/token.php
# -> lti_verify_jwt_signature -> lib/php-jwt/src/JWT.php, ``$leeway = 0``): an ``iat`` or
# ``nbf`` one second ahead of its clock is refused.  Ours are dated this far back.
ASSERTION_BACKDATE_S = 60
ASSERTION_LIFETIME_S = 300
JWKS_MAX_AGE_S = 3600
REGISTRATION_LIFETIME_S = 24 * 3600  # a one-time registration URL is good for a day

# What the person in the browser reads first when a login, launch or registration is refused,
# in their language (the error page translates it), above the English detail for the LMS's
# administrator. LaunchRefused's own advice (open it again, else show the details) is the rest's.
ASK_ADMIN = N_("This tool cannot take launches from this LMS as it is set up now: show the details below to the "
               "LMS's administrator.")
COOKIES = N_("Your browser did not keep this tool's login: open the activity again from the course page in the "
             "LMS. If it fails again, allow this site's cookies in your browser (the LMS shows the tool inside its "
             "page).")
EXPIRED = N_("This login has already been used or has expired: open the activity again from the course page in "
             "the LMS.")
FROM_THE_LMS = N_("This address is for the LMS: open the activity from the course page in the LMS.")
ANONYMOUS = N_("The LMS did not say who you are: log in to the LMS and open the activity from the course page.")
NOT_AN_ACTIVITY_PLACE = N_("This place in the LMS does not take the tool's activities: add the tool as an external "
                           "tool activity instead.")
REGISTRATION = N_("The registration did not go through: the details below say why and what to do.")






@dataclass(frozen=True)
class Platform:
    """One platform registration: what we need to trust its launches and call its services."""

    issuer: str
    client_id: str
    auth_login_url: str
    token_url: str
    jwks_url: str
    deployment_ids: tuple[str, ...] = ()
    name: str = ""


class Platforms:
    """The registered platforms, in the database beside the login states (``lti_platforms``),
    where every replica reads them and adds to them in one transaction."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def all(self) -> list[Platform]:
        """Every registration, in the order they were made."""
        with self.database.read() as db:
            rows = db.execute(select(lti_platforms).order_by(lti_platforms.c.id)).all()
        return [Platform(issuer=row.issuer, client_id=row.client_id, auth_login_url=row.auth_login_url,
                         token_url=row.token_url, jwks_url=row.jwks_url, deployment_ids=tuple(row.deployment_ids),
                         name=row.name) for row in rows]

    def find(self, issuer: str, client_id: str | None = None) -> Platform | None:
        matches = [p for p in self.all() if p.issuer == issuer and client_id in (None, p.client_id)]
        return matches[0] if len(matches) == 1 or (matches and client_id) else None

    def add(self, platform: Platform, *, merge: bool = True) -> None:
        """Add ``platform``, or merge its deployments into the registration with the same client id.

        ``merge=False`` (dynamic registration) refuses a client id this issuer already has: a
        registration made from a URL can add a platform, never rewrite one an admin relies on.
        The check and the write are one transaction under a lock named after the registration,
        so two replicas registering at once lose neither's."""
        key = (lti_platforms.c.issuer == platform.issuer, lti_platforms.c.client_id == platform.client_id)
        with self.database.write() as db:
            self.database.lock(db, "lti platform", platform.issuer, platform.client_id)
            known = db.execute(select(lti_platforms.c.deployment_ids).where(*key)).first()
            if known is None:
                db.execute(insert(lti_platforms).values(**{**asdict(platform),
                                                           "deployment_ids": list(platform.deployment_ids)}))
                return
            if not merge:
                raise LaunchRefused(f"{platform.issuer} already has a registration with client id "
                                    f"{platform.client_id!r}: it is kept as it is. To change it, use "
                                    "`autograder lti-platform`", REGISTRATION)
            ids = list(dict.fromkeys([*known.deployment_ids, *platform.deployment_ids]))
            db.execute(update(lti_platforms).where(*key).values(**{**asdict(platform), "deployment_ids": ids}))

    def import_file(self, path: Path) -> int:
        """Import the registrations a data folder kept in ``path`` (``platforms.json``, as the
        service kept them before they moved into the database), merged into those already
        here, then rename the file to ``platforms.json.imported`` (kept, not deleted, for the
        administrator who reads or restores it); the number imported. A replica that finds
        the file gone by the time it renames it leaves it to the one that did."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 0
        try:
            rows = json.loads(text)
            found = [Platform(**{**row, "deployment_ids": tuple(row["deployment_ids"])}) for row in rows]
        except (ValueError, TypeError, KeyError) as exc:
            raise AutograderError(f"the platform registrations in {path} cannot be read ({exc}); fix the JSON by "
                                  "hand, or move the file away and register the platforms again") from exc
        for platform in found:
            self.add(platform)
        target = path.with_name(f"{path.name}.imported")
        for n in itertools.count(2):
            if not target.exists():
                break
            target = path.with_name(f"{path.name}.imported-{n}")
        try:
            path.rename(target)
        except FileNotFoundError:  # another replica imported it meanwhile
            pass
        return len(found)


class LoginStates:
    """Server-side memory of the OIDC round trip: each state (with its nonce) and each used nonce.

    In a database (``autograder.database``: a file path for SQLite, or a URL) so that a
    restart between login and launch loses nothing, and so that two server processes
    agree on a replayed nonce: each check-and-spend is one statement in one transaction.
    """

    def __init__(self, location: Path | str) -> None:
        self._database = open_database(location)

    @property
    def database(self) -> Database:
        """The database they are kept in, which the platform registrations share."""
        return self._database

    def close(self) -> None:
        self._database.close()

    def new_registration_code(self, lifetime_s: float = REGISTRATION_LIFETIME_S) -> str:
        """A code for one dynamic registration within ``lifetime_s``: only its SHA-256 is kept."""
        code = secrets.token_urlsafe(24)
        with self._database.write() as db:
            db.execute(insert(lti_registration).values(digest=_digest(code),
                                                      expires=clock.now() + timedelta(seconds=lifetime_s)))
        return code

    def use_registration_code(self, code: str) -> bool:
        """True once for a code made here and not expired; it is spent by asking."""
        with self._database.write() as db:
            db.execute(delete(lti_registration).where(lti_registration.c.expires < clock.now()))
            spent = db.execute(delete(lti_registration).where(lti_registration.c.digest == _digest(code))
                               .returning(lti_registration.c.expires)).first()
        return spent is not None

    def begin(self, issuer: str, client_id: str) -> tuple[str, str]:
        """A fresh (state, nonce) for one login; old unfinished logins are forgotten."""
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = clock.now()
        with self._database.write() as db:
            db.execute(delete(lti_state).where(lti_state.c.created < now - LOGIN_LIFETIME))
            db.execute(insert(lti_state).values(state=state, nonce=nonce, issuer=issuer, client_id=client_id,
                                                created=now))
        return state, nonce

    def take(self, state: str) -> tuple[str, str, str] | None:
        """(nonce, issuer, client_id) of a login still waiting for its launch, once only."""
        with self._database.write() as db:
            row = db.execute(delete(lti_state).where(lti_state.c.state == state,
                                                     lti_state.c.created >= clock.now() - LOGIN_LIFETIME)
                             .returning(lti_state.c.nonce, lti_state.c.issuer, lti_state.c.client_id)).first()
        return None if row is None else (row[0], row[1], row[2])

    def use_nonce(self, issuer: str, nonce: str) -> bool:
        """True the first time (issuer, nonce) is seen, False on every replay."""
        now = clock.now()
        with self._database.write() as db:
            db.execute(delete(lti_nonce).where(lti_nonce.c.used < now - NONCE_MEMORY))
            first = db.execute(self._database.upsert(lti_nonce, {"issuer": issuer, "nonce": nonce, "used": now},
                                                     keys=("issuer", "nonce"), update=())
                               .returning(lti_nonce.c.used)).first()
        return first is not None

    def bind_lineitem(self, lineitem: str, platform: Platform, scopes: tuple[str, ...] = ()) -> None:
        """Remember which registration's token a line item's scores need, and the AGS
        ``scopes`` the launch that named it granted (the latest launch's grant stands)."""
        with self._database.write() as db:
            db.execute(self._database.upsert(lti_lineitem, {"lineitem": lineitem, "issuer": platform.issuer,
                                                            "client_id": platform.client_id,
                                                            "scopes": " ".join(scopes)}, keys=("lineitem",)))

    def lineitem_owner(self, lineitem: str) -> tuple[str, str] | None:
        with self._database.read() as db:
            row = db.execute(select(lti_lineitem.c.issuer, lti_lineitem.c.client_id)
                             .where(lti_lineitem.c.lineitem == lineitem)).first()
        return None if row is None else (row[0], row[1])

    def granted_scopes(self, lineitem: str) -> tuple[str, ...] | None:
        """The AGS scopes the last launch naming ``lineitem`` granted; None if none was recorded
        (no launch named it, or it was bound before the tool kept them)."""
        with self._database.read() as db:
            scopes = db.execute(select(lti_lineitem.c.scopes).where(lti_lineitem.c.lineitem == lineitem)).scalar()
        return None if scopes is None else tuple(scopes.split())


class JwksCache:
    """Each platform's public keys, fetched once an hour, or at once when a token names a new key."""

    def __init__(self, client: httpx.Client, max_age_s: float = JWKS_MAX_AGE_S) -> None:
        self._client = client
        self._max_age_s = max_age_s
        self._cache: dict[str, tuple[float, KeySet, set[str]]] = {}
        self._lock = threading.Lock()

    def keys_for(self, url: str, kid: str | None) -> KeySet:
        with self._lock:
            cached = self._cache.get(url)
        if cached and time.monotonic() - cached[0] < self._max_age_s and (kid is None or kid in cached[2]):
            return cached[1]
        try:
            response = self._client.get(url, timeout=10)
            response.raise_for_status()
            data = response.json()
            keys = KeySet.import_key_set(data)
        except (httpx.HTTPError, ValueError, JoseError) as exc:
            raise LaunchRefused(f"the platform's public keys could not be fetched from {url} ({exc}); check the "
                                "JWKS URL of the registration", ASK_ADMIN) from exc
        kids = {str(k.get("kid")) for k in data.get("keys", [])}
        with self._lock:
            self._cache[url] = (time.monotonic(), keys, kids)
        return keys


@dataclass(frozen=True)
class Launch:
    """A validated launch: who, in which course, from which link, with which services."""

    message_type: str
    platform: Platform
    deployment_id: str
    sub: str
    name: str
    email: str | None
    roles: tuple[str, ...]
    context_id: str
    context_title: str
    resource_link_id: str | None
    custom: dict[str, Any] = field(default_factory=dict)
    lineitem: str | None = None
    lineitems: str | None = None
    ags_scopes: tuple[str, ...] = ()
    deep_link_return_url: str | None = None
    deep_link_data: str | None = None
    locale: str | None = None  # launch_presentation's locale: the language the LMS shows this user

    @property
    def context(self) -> str:
        """The store's opaque course key: one course of one deployment of one platform."""
        return f"{self.platform.issuer}|{self.deployment_id}|{self.context_id}"

    @property
    def is_instructor(self) -> bool:
        return any(role in INSTRUCTOR_ROLES for role in self.roles)


class LaunchValidator:
    """Checks an id_token posted to the launch URL against everything we know."""

    def __init__(self, platforms: Platforms, states: LoginStates, jwks: JwksCache) -> None:
        self.platforms = platforms
        self.states = states
        self.jwks = jwks

    def login_redirect(self, params: dict[str, str], *, redirect_uri: str) -> tuple[str, str]:
        """The platform's authorization URL for an OIDC login initiation, and the state to set as a cookie."""
        issuer, hint = params.get("iss", ""), params.get("login_hint", "")
        if not issuer or not hint:
            raise LaunchRefused("the login initiation lacks iss or login_hint: start the activity from the LMS",
                                FROM_THE_LMS)
        platform = self.platforms.find(issuer, params.get("client_id") or None)
        if platform is None:
            raise LaunchRefused(f"no platform with issuer {issuer!r} (client id {params.get('client_id')!r}) is "
                                "registered here: an administrator registers it first (see the /lti/config page)",
                                ASK_ADMIN)
        deployment = params.get("lti_deployment_id")
        if deployment and deployment not in platform.deployment_ids:
            raise LaunchRefused(f"deployment {deployment!r} of {issuer} is not registered here", ASK_ADMIN)
        state, nonce = self.states.begin(platform.issuer, platform.client_id)
        query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
                 "client_id": platform.client_id, "redirect_uri": redirect_uri, "login_hint": hint,
                 "state": state, "nonce": nonce}
        if "lti_message_hint" in params:
            query["lti_message_hint"] = params["lti_message_hint"]
        sep = "&" if urlsplit(platform.auth_login_url).query else "?"
        return platform.auth_login_url + sep + urlencode(query), state

    def validate(self, id_token: str, state: str, state_cookie: str | None) -> Launch:
        """The launch an id_token carries, or LaunchRefused saying what is wrong."""
        if not state or not secrets.compare_digest(state, state_cookie or ""):
            raise LaunchRefused("the launch's state does not match this browser's login (the state cookie is "
                                "missing or different): start the activity again from the LMS; if it keeps "
                                "failing, the browser blocks the tool's cookies inside the LMS frame", COOKIES)
        pending = self.states.take(state)
        if pending is None:
            raise LaunchRefused("this login has already been used or has expired: start the activity again", EXPIRED)
        expected_nonce, issuer, client_id = pending
        try:
            unverified = extract_compact(id_token.encode())
            header = unverified.headers()
        except (JoseError, ValueError) as exc:
            raise LaunchRefused(f"the id_token is not a JWT ({exc})") from exc
        platform = self.platforms.find(issuer, client_id)
        if platform is None:
            raise LaunchRefused(f"the platform {issuer} is no longer registered here", ASK_ADMIN)
        keys = self.jwks.keys_for(platform.jwks_url, header.get("kid"))
        try:
            token = jwt.decode(id_token, keys, algorithms=[ALGORITHM])
        except (JoseError, ValueError) as exc:
            raise LaunchRefused(f"the id_token's signature does not verify with {issuer}'s published keys ({exc}): "
                                "it was not signed by the registered platform") from exc
        claims = token.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=CLOCK_LEEWAY_S, iss={"essential": True, "value": platform.issuer},
            aud={"essential": True, "value": platform.client_id}, exp={"essential": True},
            iat={"essential": True}, nonce={"essential": True}, sub={"essential": False})
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise LaunchRefused(f"the id_token is not for this tool or not valid now ({exc}): start the activity "
                                "again from the LMS") from exc
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != platform.client_id:
            raise LaunchRefused("the id_token's azp is not this tool's client id")
        if claims["iat"] > time.time() + CLOCK_LEEWAY_S:
            raise LaunchRefused("the id_token was issued in the future: check the platform's clock", ASK_ADMIN)
        if not secrets.compare_digest(str(claims["nonce"]), expected_nonce):
            raise LaunchRefused("the id_token's nonce is not the one this login asked for")
        if not self.states.use_nonce(platform.issuer, str(claims["nonce"])):
            raise LaunchRefused("this id_token has already been used (replayed nonce): start the activity again",
                                EXPIRED)
        return _launch_from(claims, platform)


class _Claim(BaseModel):
    """What the tool reads of one claim; anything else in it is the platform's business."""

    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True, populate_by_name=True)


class ContextClaim(_Claim):
    id: str | None = None
    title: str | None = None


class ResourceLinkClaim(_Claim):
    id: str | None = None


class AgsEndpointClaim(_Claim):
    lineitem: str | None = None
    lineitems: str | None = None
    scope: tuple[str, ...] | None = None


class DeepLinkingSettingsClaim(_Claim):
    deep_link_return_url: str | None = None
    accept_types: tuple[str, ...] = ("ltiResourceLink",)  # none said: the links the tool makes
    data: str | None = None


class LaunchPresentationClaim(_Claim):
    locale: str | None = None


class LaunchClaims(_Claim):
    """The claims of a launch's id_token that the tool reads, each with the type LTI 1.3 gives
    it, checked once here instead of at every use. A claim left out is None (or empty); what
    a present claim must hold for the launch to go on is ``_launch_from``'s to say, in the
    words it refuses with. The JOSE claims (iss, aud, exp, iat, nonce) are joserfc's."""

    deployment_id: str = Field("", alias="https://purl.imsglobal.org/spec/lti/claim/deployment_id")
    version: str | None = Field(None, alias="https://purl.imsglobal.org/spec/lti/claim/version")
    message_type: str | None = Field(None, alias="https://purl.imsglobal.org/spec/lti/claim/message_type")
    sub: str | None = None
    name: str | None = None
    given_name: str | None = None
    family_name: str | None = None
    email: str | None = None
    roles: tuple[str, ...] | None = Field(None, alias="https://purl.imsglobal.org/spec/lti/claim/roles")
    context: ContextClaim | None = Field(None, alias="https://purl.imsglobal.org/spec/lti/claim/context")
    resource_link: ResourceLinkClaim | None = Field(
        None, alias="https://purl.imsglobal.org/spec/lti/claim/resource_link")
    custom: dict[str, Any] | None = Field(None, alias="https://purl.imsglobal.org/spec/lti/claim/custom")
    ags: AgsEndpointClaim | None = Field(None, alias="https://purl.imsglobal.org/spec/lti-ags/claim/endpoint")
    deep_linking_settings: DeepLinkingSettingsClaim | None = Field(
        None, alias="https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings")
    launch_presentation: LaunchPresentationClaim | None = Field(
        None, alias="https://purl.imsglobal.org/spec/lti/claim/launch_presentation")

    @classmethod
    def parse(cls, claims: dict[str, Any]) -> LaunchClaims:
        """The claims read, or LaunchRefused naming the first that is not as LTI 1.3 has it."""
        try:
            return cls.model_validate(claims)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "/".join(str(part) for part in first["loc"])
            raise LaunchRefused(f"the id_token's claim {where} is not as LTI 1.3 defines it: {first['msg']} (got "
                                f"{first.get('input')!r:.200})", ASK_ADMIN) from exc


def _launch_from(token_claims: dict[str, Any], platform: Platform) -> Launch:
    claims = LaunchClaims.parse(token_claims)
    deployment = claims.deployment_id
    if deployment not in platform.deployment_ids:
        raise LaunchRefused(f"deployment {deployment!r} of {platform.issuer} is not registered here: the "
                            "administrator registers the tool again, or adds the deployment id by hand", ASK_ADMIN)
    if claims.version != "1.3.0":
        raise LaunchRefused(f"LTI version {claims.version!r} is not supported (1.3.0 is)", ASK_ADMIN)
    message_type = claims.message_type
    if message_type not in (RESOURCE_LINK, DEEP_LINKING):
        raise LaunchRefused(f"message type {message_type!r} is not supported", ASK_ADMIN)
    sub = claims.sub or ""
    if not sub:
        raise LaunchRefused("the launch carries no user (sub): anonymous launches are not supported", ANONYMOUS)
    context = claims.context or ContextClaim()
    link = claims.resource_link or ResourceLinkClaim()
    if message_type == RESOURCE_LINK and not link.id:
        raise LaunchRefused("a resource link launch without a resource_link id", ASK_ADMIN)
    ags = claims.ags or AgsEndpointClaim()
    settings = claims.deep_linking_settings or DeepLinkingSettingsClaim()
    if message_type == DEEP_LINKING and not settings.deep_link_return_url:
        raise LaunchRefused("a deep linking request without deep_link_return_url", ASK_ADMIN)
    if message_type == DEEP_LINKING and "ltiResourceLink" not in settings.accept_types:
        raise LaunchRefused("this place in the LMS does not accept LTI links (accept_types lacks ltiResourceLink): "
                            "add the tool as an external tool activity", NOT_AN_ACTIVITY_PLACE)
    name = claims.name or " ".join(filter(None, (claims.given_name, claims.family_name))) or sub
    return Launch(
        message_type=message_type, platform=platform, deployment_id=deployment, sub=sub, name=name,
        email=claims.email, roles=claims.roles or (), context_id=context.id or link.id or "",
        context_title=context.title or "", resource_link_id=link.id, custom=dict(claims.custom or {}),
        lineitem=ags.lineitem, lineitems=ags.lineitems, ags_scopes=ags.scope or (),
        deep_link_return_url=settings.deep_link_return_url, deep_link_data=settings.data,
        locale=(claims.launch_presentation or LaunchPresentationClaim()).locale)


@dataclass(frozen=True)
class ToolUrls:
    """Where the tool answers, as the platform sees it (the public https URL behind the proxy)."""

    base: str

    def _at(self, path: str) -> str:
        return self.base.rstrip("/") + path

    @property
    def login(self) -> str:
        return self._at("/lti/login")

    @property
    def launch(self) -> str:
        return self._at("/lti/launch")

    @property
    def jwks(self) -> str:
        return self._at("/lti/jwks")

    @property
    def register(self) -> str:
        return self._at("/lti/register")

    @property
    def domain(self) -> str:
        return urlsplit(self.base).netloc

    def manual_values(self) -> dict[str, str]:
        """Every value an administrator types when registering the tool by hand."""
        return {"Tool URL / target link URI": self.launch, "Initiate login URL": self.login,
                "Redirection URI(s)": self.launch, "Public keyset URL (JWKS)": self.jwks,
                "Deep linking (content selection) URL": self.launch,
                "Domain": self.domain}


def register_dynamically(client: httpx.Client, *, openid_configuration: str, registration_token: str | None,
                         urls: ToolUrls, tool_name: str, platforms: Platforms) -> Platform:
    """LTI Dynamic Registration: read the platform's configuration, send ours, keep what it answers."""
    try:
        config = client.get(openid_configuration, timeout=10).raise_for_status().json()
    except (httpx.HTTPError, ValueError) as exc:
        raise LaunchRefused(f"the platform's configuration could not be read from {openid_configuration} ({exc})",
                            REGISTRATION) from exc
    issuer = str(config.get("issuer") or "")
    if not _issued_by(openid_configuration, issuer):
        raise LaunchRefused(f"the platform's configuration at {openid_configuration} names the issuer {issuer!r}, "
                            "which is not the configuration's own site (scheme, host and port, no user name, the "
                            "issuer's path above it): refusing to register", REGISTRATION)
    for key in ("registration_endpoint", "authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not config.get(key):
            raise LaunchRefused(f"the platform's configuration lacks {key}", REGISTRATION)
    request = {
        "application_type": "web", "response_types": ["id_token"], "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls.login, "redirect_uris": [urls.launch], "client_name": tool_name,
        "jwks_uri": urls.jwks, "token_endpoint_auth_method": "private_key_jwt", "scope": " ".join(AGS_SCOPES),
        TOOL_CONFIGURATION: {
            "domain": urls.domain, "target_link_uri": urls.launch, "claims": ["iss", "sub", "name", "email"],
            "messages": [{"type": DEEP_LINKING, "target_link_uri": urls.launch, "label": tool_name},
                         {"type": RESOURCE_LINK, "target_link_uri": urls.launch}],
            "description": "Upload a notebook, read its feedback seconds later; the score goes to the gradebook."}}
    headers = {"Accept": "application/json"}
    if registration_token:
        headers["Authorization"] = f"Bearer {registration_token}"
    try:
        reply = client.post(config["registration_endpoint"], json=request, headers=headers, timeout=10)
        reply.raise_for_status()
        answer = reply.json()
    except httpx.HTTPStatusError as exc:
        raise LaunchRefused(f"the platform refused the registration ({exc.response.status_code}: "
                            f"{exc.response.text[:300]})", REGISTRATION) from exc
    except (httpx.HTTPError, ValueError) as exc:
        raise LaunchRefused(f"the registration could not be sent ({exc})", REGISTRATION) from exc
    tool_config = answer.get(TOOL_CONFIGURATION) or {}
    if not answer.get("client_id") or not tool_config.get("deployment_id"):
        raise LaunchRefused("the platform's registration answer lacks client_id or deployment_id", REGISTRATION)
    platform = Platform(issuer=issuer, client_id=str(answer["client_id"]),
                        auth_login_url=config["authorization_endpoint"], token_url=config["token_endpoint"],
                        jwks_url=config["jwks_uri"], deployment_ids=(str(tool_config["deployment_id"]),),
                        name=str((config.get(PLATFORM_CONFIGURATION) or {}).get("product_family_code", "")))
    platforms.add(platform, merge=False)
    return platform


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL without user info; None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or not port:
        return None
    return parts.scheme, parts.hostname, port


def _issued_by(configuration_url: str, issuer: str) -> bool:
    """Whether the configuration at ``configuration_url`` may speak for ``issuer``: the same
    origin, parsed (so ``http://<issuer>@attacker/`` is the attacker's), and a path under the
    issuer's path, segment by segment (Moodle's issuer is its wwwroot, which may have one)."""
    origin = _origin(configuration_url)
    if origin is None or origin != _origin(issuer):
        return False
    base = urlsplit(issuer).path.rstrip("/")
    path = urlsplit(configuration_url).path
    return path == base or path.startswith(base + "/")


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def deep_linking_response(launch: Launch, keys: ToolKeys, *, title: str, week: str, points: float,
                          launch_url: str) -> str:
    """The signed JWT that creates one activity for ``week`` with a line item worth ``points``."""
    now = int(time.time())
    claims: dict[str, Any] = {  # dated back: Moodle's contentitem_return.php checks iat with no leeway either
        "iss": launch.platform.client_id, "aud": launch.platform.issuer, "iat": now - ASSERTION_BACKDATE_S,
        "exp": now + ASSERTION_LIFETIME_S,
        "nonce": secrets.token_urlsafe(16), f"{CLAIM}/deployment_id": launch.deployment_id,
        f"{CLAIM}/message_type": "LtiDeepLinkingResponse", f"{CLAIM}/version": "1.3.0",
        f"{DL_CLAIM}/content_items": [{
            "type": "ltiResourceLink", "title": title, "url": launch_url, "custom": {"week": week},
            "lineItem": {"scoreMaximum": points, "label": title, "resourceId": week, "tag": "autograder"}}]}
    if launch.deep_link_data is not None:
        claims[f"{DL_CLAIM}/data"] = launch.deep_link_data
    return keys.sign(claims)


def client_assertion_claims(platform: Platform, now: int) -> dict[str, Any]:
    """The claims of the JWT we sign for a platform's token endpoint (IMS Security Framework),
    issued ``ASSERTION_BACKDATE_S`` in the past so that a platform clock a little behind ours
    still finds it valid: Moodle allows no clock leeway."""
    issued = now - ASSERTION_BACKDATE_S
    return {"iss": platform.client_id, "sub": platform.client_id, "aud": platform.token_url,
            "iat": issued, "nbf": issued, "exp": now + ASSERTION_LIFETIME_S, "jti": str(uuid.uuid4())}


NO_SCORE_SCOPE = "the LMS did not grant the score scope: "
GRANT_SCORE_SCOPE = ("In Moodle, the tool's IMS LTI Assignment and Grade Services must be 'Use this service for grade "
                     "sync only' (or 'and column management'); once it is, open the activity from the LMS and press "
                     "Send again.")


def _error_code(response: httpx.Response) -> str | None:
    """The OAuth 2 ``error`` of a token endpoint's refusal (RFC 6749, 5.2), if it sent one."""
    try:
        body = response.json()
    except ValueError:
        return None
    return str(body.get("error")) if isinstance(body, dict) else None


def scores_url(lineitem: str) -> str:
    """A line item's scores endpoint: ``/scores`` added to its path, before the query."""
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


class AgsScoreSender:
    """Posts scores to a platform's AGS endpoint (implements the outbox's ScoreSender).

    The bearer token comes from the platform's token endpoint by the OAuth2 client
    credentials grant with a JWT client assertion signed by our key (IMS Security
    Framework); it is reused until a minute before it expires, and dropped on a 401.
    """

    def __init__(self, platforms: Platforms, states: LoginStates, keys: ToolKeys, client: httpx.Client) -> None:
        self.platforms = platforms
        self.states = states
        self.keys = keys
        self.client = client
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def _check_granted(self, lineitem: str, platform: Platform) -> None:
        """Refuse, for good, a post the launch's grant does not cover: without the score scope
        the platform would refuse the token every time, and the post would be retried for ever."""
        scopes = self.states.granted_scopes(lineitem)
        if scopes is not None and AGS_SCORE_SCOPE not in scopes:
            granted = ", ".join(scopes) or "no AGS scope"
            raise ScorePostError(None, False, f"{NO_SCORE_SCOPE}its launches into this activity grant {granted}, not "
                               f"{AGS_SCORE_SCOPE}. {GRANT_SCORE_SCOPE}")

    def _platform_for(self, lineitem: str) -> Platform:
        owner = self.states.lineitem_owner(lineitem)
        platform = self.platforms.find(*owner) if owner else None
        if platform is None:
            candidates = self.platforms.all()
            platform = candidates[0] if len(candidates) == 1 else None
        if platform is None:
            raise ScoreNotSent(f"no registered platform owns the line item {lineitem}")
        return platform

    def access_token(self, platform: Platform) -> str:
        key = (platform.issuer, platform.client_id)
        with self._lock:
            cached = self._tokens.get(key)
        if cached and cached[1] > time.monotonic():
            return cached[0]
        assertion = self.keys.sign(client_assertion_claims(platform, int(time.time())))
        reply = self.client.post(platform.token_url, timeout=15, data={
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion, "scope": AGS_SCORE_SCOPE})
        reply.raise_for_status()
        body = reply.json()
        token, lifetime = str(body["access_token"]), float(body.get("expires_in", 3600))
        with self._lock:
            self._tokens[key] = (token, time.monotonic() + max(lifetime - 60, 0))
        return token

    def post_score(self, lineitem: str, payload: dict[str, Any]) -> None:
        try:
            platform = self._platform_for(lineitem)
            self._check_granted(lineitem, platform)
            token = self.access_token(platform)
            reply = self.client.post(scores_url(lineitem), timeout=15, content=json.dumps(payload), headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/vnd.ims.lis.v1.score+json"})
        except ScoreNotSent as exc:
            raise ScorePostError(None, False, str(exc)) from exc
        except httpx.HTTPStatusError as exc:  # from the token endpoint
            status = exc.response.status_code
            if _error_code(exc.response) == "invalid_scope":  # RFC 6749 5.2: asking again gets the same answer
                raise ScorePostError(status, False, f"{NO_SCORE_SCOPE}its token endpoint refused the scope "
                                     f"({exc.response.text[:200]}). {GRANT_SCORE_SCOPE}") from exc
            # Moodle answers 400 for every failure checking our assertion, a clock ahead of
            # its own included (mod/lti/token.php): worth trying again later, never final.
            raise ScorePostError(status, True, f"the platform's token endpoint answered {status}: "
                                 f"{exc.response.text[:200]} (tried again later; check the platform's clock "
                                 "and the tool's registration there if it persists)") from exc
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            raise ScorePostError(None, True, f"the platform could not be reached ({exc})") from exc
        if reply.status_code == 401:
            with self._lock:
                self._tokens.pop((platform.issuer, platform.client_id), None)
        if reply.status_code >= 300:
            retryable = reply.status_code in (401, 408, 429) or reply.status_code >= 500
            raise ScorePostError(reply.status_code, retryable,
                                 f"the platform answered {reply.status_code}: {reply.text[:200]}")
