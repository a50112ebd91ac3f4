"""What a route may ask for in its signature: the app's parts (``StoreDep``, ``CourseDep``,
``SettingsDep``...) and who may call it (``CurrentLearner``, ``CurrentInstructor``), as
``Annotated`` FastAPI dependencies, the way the FastAPI full-stack template's ``deps.py``
does.  A route declares who may call it by the type of its ``session`` parameter; its body
never checks a role.

The checks run in the order a route lists its parameters, and FastAPI runs each once a
request however many parameters ask for it: the session is read, rate-limited and checked
first (401, 429, then 403 for the role), the CSRF token of a form next, the week the path
names last (404). FastAPI checks a route's own parameters (a number in the address that is
not one: 422) after these, so a caller without the right session learns nothing of them.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from fastapi import Depends, Request
from starlette.datastructures import FormData

from autograder.course import Course, Week
from autograder.exceptions import CourseError, Refused
from autograder.i18n.runtime import N_
from autograder.service.edge import token
from autograder.service.marking import is_row_id
from autograder.service.pages import Pages
from autograder.service.rate_limit import RateLimiter
from autograder.service.sessions import SESSION_COOKIE, Session, SessionCookies
from autograder.service.settings import Settings
from autograder.service.store import Attempt, Store
from autograder.service.tool import Tool

if TYPE_CHECKING:
    from autograder.service.moodle_sync import SyncStatus
    from autograder.service.policy import WeekPolicy


@dataclass(frozen=True)
class Hooks:
    """What the web side asks of the rest of the service and tells it: ``policy_for`` a week's
    rules, ``wake`` the graders (an attempt is queued), ``scores_changed`` (the outbox has a
    score post), ``warm`` a week's grader (a student opened its upload page), ``syncs`` (the
    Moodle Assignment syncs' state, for the instructors' pages)."""

    policy_for: Callable[[str], WeekPolicy]
    wake: Callable[[], None]
    scores_changed: Callable[[], None]
    warm: Callable[[str], None]
    syncs: Callable[[], list[SyncStatus]]


@dataclass(frozen=True)
class RateLimits:
    """The service's own rate limits (``Settings``): per user, per address, uploads per user,
    counted in the service's database (``rate_limit.py``), so the replicas share them."""

    per_user: RateLimiter     # every route a session calls
    per_address: RateLimiter  # the LTI routes, before anyone is known
    uploads: RateLimiter

    @classmethod
    def of(cls, settings: Settings, store: Store) -> RateLimits:
        return cls(RateLimiter(store.database, "user", settings.requests_per_minute),
                   RateLimiter(store.database, "address", settings.launches_per_minute),
                   RateLimiter(store.database, "upload", settings.uploads_per_minute))


@dataclass(frozen=True)
class Services:
    """One app's parts, kept in ``app.state.services`` by ``create_app``."""

    settings: Settings
    course: Course
    store: Store
    tool: Tool
    hooks: Hooks
    pages: Pages
    cookies: SessionCookies
    limits: RateLimits

    @classmethod
    def build(cls, settings: Settings, course: Course, store: Store, tool: Tool, hooks: Hooks) -> Services:
        return cls(settings, course, store, tool, hooks, pages=Pages(settings.tool_name),
                   cookies=SessionCookies(tool.session_secret), limits=RateLimits.of(settings, store))


def services(request: Request) -> Services:
    return cast(Services, request.app.state.services)


ServicesDep = Annotated[Services, Depends(services)]


def _part(name: str) -> Callable[[Services], Any]:
    """A dependency giving one of the app's parts (the ``Annotated`` type below says which type)."""
    def part(app: ServicesDep) -> Any:
        return getattr(app, name)
    return part


SettingsDep = Annotated[Settings, Depends(_part("settings"))]
CourseDep = Annotated[Course, Depends(_part("course"))]
StoreDep = Annotated[Store, Depends(_part("store"))]
ToolDep = Annotated[Tool, Depends(_part("tool"))]
HooksDep = Annotated[Hooks, Depends(_part("hooks"))]
PagesDep = Annotated[Pages, Depends(_part("pages"))]
CookiesDep = Annotated[SessionCookies, Depends(_part("cookies"))]
LimitsDep = Annotated[RateLimits, Depends(_part("limits"))]


TOO_MANY = {"requests": N_("Too many requests: wait {seconds} s and try again."),
            "uploads": N_("Too many uploads: wait {seconds} s and try again.")}


def too_many(wait: int, what: Literal["requests", "uploads"] = "requests") -> Refused:
    """A 429 saying how long to wait (translated on the error page, in its language): ``wait``
    is the limiter's whole seconds, which the page's ``Retry-After`` repeats."""
    return Refused(429, TOO_MANY[what], seconds=wait)


def limit_address(request: Request, limits: LimitsDep) -> None:
    """The LTI routes' rate limit, per address: no one is known before a launch."""
    wait = limits.per_address.allow(request.client.host if request.client else "unknown")
    if wait:
        raise too_many(wait)


AddressLimited = Depends(limit_address)


def current_session(request: Request, cookies: CookiesDep, limits: LimitsDep) -> Session:
    """Whoever the LMS launched into this browser (401 without a valid session), within the
    per-user rate limit (429)."""
    if not request.cookies.get(SESSION_COOKIE):
        raise Refused(401, N_("There is no session: open this activity from the course page in the LMS."))
    session = cookies.read(request)
    if session is None:
        raise Refused(401, N_("The session has expired or is not valid: open the activity again from the LMS."))
    wait = limits.per_user.allow(*session.who)
    if wait:
        raise too_many(wait)
    return session


# Whoever the LMS launched, in any role: an instructor may do what a learner does.
CurrentLearner = Annotated[Session, Depends(current_session)]


def current_instructor(session: CurrentLearner) -> Session:
    """The session, if its launch carried the Instructor role (403 otherwise)."""
    if not session.instructor:
        raise Refused(403, N_("This page is for the course's instructors (the Instructor role in the LMS)."))
    return session


CurrentInstructor = Annotated[Session, Depends(current_instructor)]


async def checked_form(request: Request, session: CurrentLearner) -> FormData:
    """The request's form, if it carries the session's CSRF token (403 otherwise)."""
    form = await request.form()
    if not hmac.compare_digest(token(form.get("csrf"), "form's CSRF token"), session.csrf):
        raise Refused(403, N_("The form is stale or was not sent from this page (CSRF check): reload and retry."))
    return form


CheckedForm = Annotated[FormData, Depends(checked_form)]


def week_of(course: Course, name: str) -> Week:
    """The week a path, a form or a launch names, by its canonical name (``1``, ``week1``,
    ``WEEK01`` are week01; 404 for none): every route goes on with ``week.name`` only, so an
    alias is never stored."""
    try:
        return course.week(name)
    except CourseError as exc:  # its message names the server's folders: for the logs, not the page
        raise Refused(404, N_("This course has no week {week}: open the week's activity from the course page in "
                              "the LMS."), week=repr(name[:40])) from exc


def path_week(name: str, course: CourseDep) -> Week:
    return week_of(course, name)


PathWeek = Annotated[Week, Depends(path_week)]


def launched_week(session: CurrentLearner, week: PathWeek) -> Week:
    """The path's week, if this session was launched into it: a learner launched from week
    1's activity cannot upload to (and be graded in) week 4's."""
    if week.name not in session.weeks:
        raise Refused(403, N_("This page was not opened from {week}'s activity: open {week} from the course page "
                              "in the LMS."), week=week.name)
    return week


LaunchedWeek = Annotated[Week, Depends(launched_week)]


def own_attempt(attempt_id: int, session: CurrentLearner, store: StoreDep) -> Attempt:
    """The path's attempt, if the session may see it: a learner their own, an instructor any
    of the course's (403 otherwise)."""
    attempt = store.attempt(attempt_id, context=session.context,
                            user=None if session.instructor else session.user) if is_row_id(attempt_id) else None
    if attempt is None:
        raise Refused(403, N_("This attempt is not yours: you see only your own attempts."))
    return attempt


OwnAttempt = Annotated[Attempt, Depends(own_attempt)]
