"""What the LMS and its administrator reach before any launch: the tool's public keys, the
values to type into a manual registration, and LTI Dynamic Registration by a one-time URL."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import HTMLResponse, JSONResponse

from autograder.course import Course
from autograder.exceptions import Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import AddressLimited, CourseDep, PagesDep, SettingsDep, ToolDep
from autograder.service.edge import token
from autograder.service.locales import accepted_language
from autograder.service.lti import register_dynamically

router = APIRouter(prefix="/lti")
AcceptLanguage = Annotated[str | None, Header()]


def admin_language(accept_language: str | None, course: Course) -> str:
    """The language of the pages an administrator reads while registering the tool: no launch
    has said which the LMS shows them, so their browser's ``Accept-Language`` among the
    course's languages (as the registration's refusals), else the course's ``instructor``
    language."""
    languages = course.languages
    return accepted_language(accept_language, languages.offered, languages.instructor)


@router.get("/jwks")
def jwks(tool: ToolDep) -> JSONResponse:
    return JSONResponse(tool.keys.jwks())


@router.get("/config")
def config(tool: ToolDep, course: CourseDep, pages: PagesDep, accept_language: AcceptLanguage = None) -> HTMLResponse:
    # the values an admin types; which platforms are registered is no one else's business
    return pages.render("config.html.j2", values=tool.urls.manual_values(), register_url=tool.urls.register,
                        language=admin_language(accept_language, course))


@router.get("/register", dependencies=[AddressLimited])
def register_without_code() -> HTMLResponse:
    raise Refused(403, N_("This registration URL lacks its one-time code: run `autograder serve --registration-url` "
                          "on the server and paste the URL it prints (…/lti/register/<code>)."))


@router.get("/register/{code}", dependencies=[AddressLimited])
def register(code: str, openid_configuration: str, tool: ToolDep, settings: SettingsDep, course: CourseDep,
             pages: PagesDep, registration_token: str | None = None,
             accept_language: AcceptLanguage = None) -> HTMLResponse:
    if not tool.states.use_registration_code(token(code, "registration code")):
        raise Refused(403, N_("This registration URL is used up, expired or was never issued here: run "
                              "`autograder serve --registration-url` on the server for a new one."))
    platform = register_dynamically(tool.client, openid_configuration=openid_configuration,
                                    registration_token=registration_token, urls=tool.urls,
                                    tool_name=settings.tool_name, platforms=tool.platforms)
    return pages.render("registered.html.j2", platform=platform, language=admin_language(accept_language, course))
