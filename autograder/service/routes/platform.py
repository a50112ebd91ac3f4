"""What the LMS and its administrator reach before any launch: the tool's public keys, the
values to type into a manual registration, and LTI Dynamic Registration by a one-time URL."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse

from autograder.exceptions import Refused
from autograder.service.deps import AddressLimited, CourseDep, PagesDep, SettingsDep, ToolDep
from autograder.service.edge import token
from autograder.service.lti import register_dynamically

router = APIRouter(prefix="/lti")


@router.get("/jwks")
def jwks(tool: ToolDep) -> JSONResponse:
    return JSONResponse(tool.keys.jwks())


@router.get("/config")
def config(tool: ToolDep, course: CourseDep, pages: PagesDep) -> HTMLResponse:
    # the values an admin types; which platforms are registered is no one else's business. No
    # launch has said which language the admin reads: the course's instructor language
    return pages.render("config.html.j2", values=tool.urls.manual_values(), register_url=tool.urls.register,
                        language=course.languages.instructor)


@router.get("/register", dependencies=[AddressLimited])
def register_without_code() -> HTMLResponse:
    raise Refused(403, "This registration URL lacks its one-time code: run `autograder serve --registration-url` "
                       "on the server and paste the URL it prints (…/lti/register/<code>).")


@router.get("/register/{code}", dependencies=[AddressLimited])
def register(code: str, openid_configuration: str, tool: ToolDep, settings: SettingsDep, course: CourseDep,
             pages: PagesDep, registration_token: str | None = None) -> HTMLResponse:
    if not tool.states.use_registration_code(token(code, "registration code")):
        raise Refused(403, "This registration URL is used up, expired or was never issued here: run "
                           "`autograder serve --registration-url` on the server for a new one.")
    platform = register_dynamically(tool.client, openid_configuration=openid_configuration,
                                    registration_token=registration_token, urls=tool.urls,
                                    tool_name=settings.tool_name, platforms=tool.platforms)
    return pages.render("registered.html.j2", platform=platform, language=course.languages.instructor)
