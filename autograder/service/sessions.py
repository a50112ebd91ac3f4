"""Who is at the browser: the session a launch signs into a cookie (the rate limits that
count its requests are ``rate_limit.py``'s).

The app runs inside the LMS's iframe, so its cookies are ``SameSite=None; Secure;
Partitioned`` (third-party cookies otherwise vanish) and ``__Host-`` (the browser takes
them only over https or from localhost, with Path=/ and no Domain, so a sibling subdomain
cannot plant ("toss") a session or a state of its own choosing).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

SESSION_COOKIE = "__Host-ag-session"
STATE_COOKIE = "__Host-ag-lti-state"
SESSION_LIFETIME_S = 8 * 3600


@dataclass
class Session:
    """Who is at the browser, from the last launch; signed into the session cookie."""

    issuer: str
    user: str
    context: str
    name: str
    instructor: bool
    weeks: list[str]  # the weeks (canonical names) this browser was launched into, in this context
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    deep_link: dict[str, str | None] | None = None
    language: str = ""  # the course language the pages speak (locales.page_language); "": the course's own

    @property
    def who(self) -> tuple[str, str]:
        """The user as rate limits count them: one platform's user 7 is not another's."""
        return self.issuer, self.user


class SessionCookies:
    """The session cookie, signed with the tool's secret: read from a request, saved on a response."""

    def __init__(self, secret: bytes) -> None:
        self._signer = URLSafeTimedSerializer(secret, salt="ag-session")

    def read(self, request: Request) -> Session | None:
        """The session the browser's cookie holds, if it is ours, signed and not expired."""
        try:
            return Session(**self._signer.loads(request.cookies.get(SESSION_COOKIE) or "",
                                                 max_age=SESSION_LIFETIME_S))
        except (BadSignature, TypeError):  # TypeError: signed by an older version, other fields
            return None

    def save(self, response: Response, session: Session) -> Response:
        set_cookie(response, SESSION_COOKIE, self._signer.dumps(session.__dict__), SESSION_LIFETIME_S)
        return response


def set_cookie(response: Response, name: str, value: str, max_age: int) -> None:
    # Written by hand: Starlette writes ``Partitioned`` only on Python 3.14+, and without it
    # Chrome drops the cookie inside the LMS's iframe.  Values are URL-safe tokens.
    response.headers.append("set-cookie", f"{name}={value}; Max-Age={max_age}; Path=/; HttpOnly; Secure; "
                                          "SameSite=None; Partitioned")

