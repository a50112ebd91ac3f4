"""Splitting a week's marking among markers: the page that shows the course's markers and
each one's progress, and the form that splits the week's hand-ins among those selected.
What a split is: ``autograder.service.markers``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from autograder.exceptions import Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import CheckedForm, CourseDep, CurrentInstructor, PagesDep, PathWeek, StoreDep
from autograder.service.locales import instructor_language
from autograder.service.markers import assignments, hand_ins, progress, split

router = APIRouter(prefix="/instructor/{name}")


def markers_page(week: str) -> str:
    return f"/instructor/{week}/markers"


@router.get("/markers")
def markers(session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep, pages: PagesDep,
            split_count: int = 0) -> HTMLResponse:
    """The course's markers (whoever launched with an instructor's role), each one's share of
    the week and how much of it is marked, and the form that splits it."""
    found = hand_ins(store, session.context, week.name)
    current = assignments(store, session.context, week.name)
    known = store.users.markers(session.context)
    return pages.render("markers.html.j2", week=week, shares=progress(store, session.context, found, current, known),
                        hand_ins=len(found), unassigned=sum(1 for student in found if student not in current),
                        known=known, selected=set(current.values()),
                        split_count=split_count, csrf=session.csrf, user=session.user,
                        language=instructor_language(session, course))


@router.post("/markers")
def split_marking(session: CurrentInstructor, form: CheckedForm, week: PathWeek, store: StoreDep) -> Response:
    """Split the week's hand-ins among the markers ticked, in the order the page lists them."""
    known = store.users.markers(session.context)
    chosen = [str(value) for value in form.getlist("marker")]
    if not chosen:
        raise Refused(400, N_("Tick at least one marker to split the marking among."), back=markers_page(week.name))
    strangers = [marker for marker in chosen if marker not in known]
    if strangers:
        raise Refused(400, N_("{marker} is not a marker of this course (a marker launches the activity as an "
                              "instructor or teaching assistant first): reload the page."),
                      back=markers_page(week.name), marker=repr(strangers[0][:80]))
    plan = split(store, session.context, week.name, [marker for marker in known if marker in chosen])
    return RedirectResponse(f"{markers_page(week.name)}?split_count={len(plan)}", status_code=303)
