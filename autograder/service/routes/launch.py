"""The LTI 1.3 launch: the login initiation the LMS starts, then the launch that signs the
user's session into its cookie and sends them to their week's page (a learner) or its
report (an instructor), or to the week picker (an instructor adding an activity)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from autograder.course import Course
from autograder.exceptions import Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import AddressLimited, CookiesDep, CourseDep, StoreDep, ToolDep, week_of
from autograder.service.edge import token
from autograder.service.locales import page_language
from autograder.service.lti import DEEP_LINKING, Launch
from autograder.service.routes.deep_link import deep_link_fields
from autograder.service.sessions import STATE_COOKIE, Session, SessionCookies, set_cookie
from autograder.service.store import Store
from autograder.service.tool import Tool

router = APIRouter(prefix="/lti", dependencies=[AddressLimited])


@router.api_route("/login", methods=["GET", "POST"])
async def login(request: Request, tool: ToolDep) -> Response:
    params = dict(request.query_params)
    if request.method == "POST":
        params.update({k: str(v) for k, v in (await request.form()).items()})
    # the login's state is written to the database: off the event loop, as every blocking call
    url, state = await run_in_threadpool(tool.validator.login_redirect, params, redirect_uri=tool.urls.launch)
    response = RedirectResponse(url, status_code=302)
    set_cookie(response, STATE_COOKIE, state, 600)
    return response


@router.post("/launch")
async def launch(request: Request, tool: ToolDep, store: StoreDep, course: CourseDep, cookies: CookiesDep) -> Response:
    form = await request.form()
    # checking the launch may fetch the platform's keys (up to 10 s) and writes the database:
    # in a worker thread, so a slow LMS or a busy database holds up this launch only
    return await run_in_threadpool(launched, request, form, tool, store, course, cookies)


def launched(request: Request, form: FormData, tool: Tool, store: Store, course: Course,
             cookies: SessionCookies) -> Response:
    """The launch's session and where it goes, once its form is read."""
    launch = tool.validator.validate(str(form.get("id_token", "")), token(form.get("state"), "launch's state"),
                                     token(request.cookies.get(STATE_COOKIE), "login state cookie"))
    store.remember_user(launch.context, launch.sub, launch.name, launch.email, launch.roles)
    if launch.message_type == DEEP_LINKING:
        if not launch.is_instructor:
            raise Refused(403, N_("Only instructors add activities."))
        session = Session(issuer=launch.platform.issuer, user=launch.sub, context=launch.context,
                          name=launch.name, instructor=True, weeks=[], deep_link=deep_link_fields(launch),
                          language=launch_language(launch, course))
        return cookies.save(RedirectResponse("/deep-link", status_code=303), session)
    named = str(launch.custom.get("week") or "")
    if not named:
        raise Refused(400, N_("This activity names no week: the instructor adds it again through the tool's "
                              "activity picker, or sets the custom parameter week=weekNN."))
    week = week_of(course, named).name
    if launch.lineitem:
        store.set_lineitem(launch.context, week, launch.lineitem)
        tool.states.bind_lineitem(launch.lineitem, launch.platform, launch.ags_scopes)
    weeks = [w for w in earlier_weeks(request, launch, cookies) if w != week] + [week]
    session = Session(issuer=launch.platform.issuer, user=launch.sub, context=launch.context, name=launch.name,
                      instructor=launch.is_instructor, weeks=weeks, language=launch_language(launch, course))
    target = f"/instructor/{week}" if launch.is_instructor else f"/week/{week}"
    response = cookies.save(RedirectResponse(target, status_code=303), session)
    set_cookie(response, STATE_COOKIE, "", 0)  # spent; deleted with the same attributes it was set with
    return response


def launch_language(launch: Launch, course: Course) -> str:
    """The language this user's pages speak: the LMS's locale for them among the course's
    languages, else the course's source language (a learner) or ``instructor`` language."""
    languages = course.languages
    return page_language(launch.locale, languages.offered,
                         languages.instructor if launch.is_instructor else languages.source)


def earlier_weeks(request: Request, launch: Launch, cookies: SessionCookies) -> list[str]:
    """The weeks this browser's session was launched into before, if it is the same user in
    the same course (two activities open in two tabs both keep working)."""
    earlier = cookies.read(request)
    if earlier is None:
        return []
    same = (earlier.issuer, earlier.user, earlier.context) == (launch.platform.issuer, launch.sub, launch.context)
    return earlier.weeks if same else []
