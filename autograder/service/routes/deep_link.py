"""LTI Deep Linking: an instructor adding the tool in the LMS picks the week the new
activity grades, and the tool answers the LMS with a signed link to that week."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from autograder.exceptions import Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import CheckedForm, CourseDep, CurrentInstructor, PagesDep, ToolDep, week_of
from autograder.service.lti import DEEP_LINKING, Launch, Platforms, deep_linking_response

router = APIRouter()
NOTHING_BEING_ADDED = N_("No activity is being added: start from 'Add an activity' in the LMS.")


@router.get("/deep-link")
def deep_link_pick(session: CurrentInstructor, course: CourseDep, pages: PagesDep) -> HTMLResponse:
    if not session.deep_link:
        raise Refused(400, NOTHING_BEING_ADDED)
    weeks = [course.week(name) for name in course.week_names()]
    return pages.render("deep_link.html.j2", weeks=weeks, csrf=session.csrf, language=session.language or None)


@router.post("/deep-link")
def deep_link_send(session: CurrentInstructor, form: CheckedForm, course: CourseDep, tool: ToolDep,
                   pages: PagesDep) -> HTMLResponse:
    if not session.deep_link:
        raise Refused(400, NOTHING_BEING_ADDED)
    week = week_of(course, str(form.get("week", "")))
    launch = _launch_for_response(session.deep_link, tool.platforms)
    jwt = deep_linking_response(launch, tool.keys, title=week.title, week=week.name,
                                points=week.max_score, launch_url=tool.urls.launch)
    return pages.render("autosubmit.html.j2", action=session.deep_link["return_url"], fields={"JWT": jwt},
                        language=session.language or None)


def deep_link_fields(launch: Launch) -> dict[str, str | None]:
    """What the response to a deep-linking launch will need, kept in the instructor's session
    while they pick the week."""
    return {"issuer": launch.platform.issuer, "client_id": launch.platform.client_id,
            "deployment_id": launch.deployment_id, "return_url": launch.deep_link_return_url,
            "data": launch.deep_link_data}


def _launch_for_response(fields: dict[str, str | None], platforms: Platforms) -> Launch:
    """The parts of the deep-linking launch the response needs, back from the session."""
    platform = platforms.find(str(fields["issuer"]), str(fields["client_id"]))
    if platform is None:
        raise Refused(400, N_("The platform that asked for this activity is no longer registered."))
    return Launch(message_type=DEEP_LINKING, platform=platform, deployment_id=str(fields["deployment_id"]),
                  sub="", name="", email=None, roles=(), context_id="", context_title="", resource_link_id=None,
                  deep_link_return_url=fields["return_url"], deep_link_data=fields["data"])
