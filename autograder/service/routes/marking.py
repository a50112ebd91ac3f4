"""Marking by hand: the week's marking page (each hand-graded task's progress and
statistics) and a page per task that shows one answer at a time, in groups of similar
ones, beside the task's rubric items; the rubric items are defined and edited there too.
What the pages show and how their numbers are read: ``autograder.service.marking``."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from autograder.exceptions import AutograderError, Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import CheckedForm, CourseDep, CurrentInstructor, HooksDep, PagesDep, PathWeek, StoreDep
from autograder.service.locales import instructor_language
from autograder.service.marking import (
    FILTER_FIELDS,
    Filters,
    form_ids,
    form_number,
    refused_change,
    task_page,
    week_stats,
)

router = APIRouter(prefix="/instructor/{name}")


def marking_page(week: str, task: int | None = None, **query: str | int) -> str:
    """The address of the week's marking page, or of one task's with ``query``."""
    path = f"/instructor/{week}/marking" + (f"/{task}" if task is not None else "")
    return path + (f"?{urlencode(query)}" if query else "")


@router.get("/marking")
def marking(session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep,
            pages: PagesDep, marker: str = "") -> HTMLResponse:
    """The week's hand-graded tasks, their progress and statistics; of one ``marker``'s
    share when asked (the markers page links each marker's queue here)."""
    tasks = week_stats(store, session.context, week.name, marker)
    name = (store.users.markers(session.context).get(marker) or marker) if marker else ""
    return pages.render("marking.html.j2", week=week, tasks=tasks, marked=sum(t.marked for t in tasks),
                        answers=sum(t.answers for t in tasks), marker=marker, marker_name=name,
                        language=instructor_language(session, course))


@router.get("/rubric")
def rubric(week: PathWeek) -> Response:
    """Where the rubric page was: its items and groups are on each task's marking page now."""
    return RedirectResponse(marking_page(week.name), status_code=303)


@router.get("/marking/{task}")
def marking_task(task: int, session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep,
                 pages: PagesDep, at: str = "", after: str = "", unmarked: str = "", with_item: str = "",
                 names: str = "", marker: str = "", keys: str = "", changed: str = "", count: str = "") -> HTMLResponse:
    """One hand-graded task's answers, one in view (``at``, else the first after ``after``),
    among those the filters leave; every number of the address checked as a row number."""
    back = marking_page(week.name)
    form_ids([task], N_("The page's address"), back=back)
    address = {key: form_ids([value], N_("The page's address"), back=back)[0]
               for key, value in (("at", at), ("after", after), ("item", with_item)) if value}
    filters = Filters(unmarked=bool(unmarked), item=address.get("item"), names=bool(names), marker=marker,
                      keys_off=keys == "off")
    page = task_page(store, session.context, week.name, task, filters, at=address.get("at"),
                     after=address.get("after"))
    if page is None:
        raise Refused(404, N_("No graded attempt has task {task} to mark: choose a task on the marking page."),
                      back=back, task=task)
    return pages.render("marking_task.html.j2", week=week, task=task, page=page, filters=filters,
                        query=filters.query(), csrf=session.csrf, changed=changed, me=session.user,
                        markers=store.users.markers(session.context),
                        count=int(count) if count.isdigit() else 0, language=instructor_language(session, course))


@router.post("/marking/{task}")
def mark(task: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek, store: StoreDep,
         hooks: HooksDep) -> Response:
    """One decision (rubric items, an adjustment and a comment, or points given directly)
    for the answer in view, the answers the marker selected, or the whole group."""
    query = {key: str(form.get(key, "")) for key in FILTER_FIELDS if form.get(key)}  # back to the same filters
    back = marking_page(week.name, task, **query)
    form_ids([task], N_("The page's address"), back=back)
    scope = str(form.get("scope", "answer"))
    field = {"answer": "at", "selected": "attempt", "group": "group"}.get(scope)
    if field is None:
        raise Refused(400, N_("{what}: {value} is not one of this page's numbers: reload the page."), back=back,
                      terms={"what": N_("Answer")}, value=repr(scope[:40]))
    attempts = form_ids(form.getlist(field), N_("Answer"), back=back)
    if not attempts:
        raise Refused(400, N_("Select at least one answer to mark."), back=back)
    items = form_ids(form.getlist("item"), N_("Rubric item"), back=back)
    adjustment = form_number(form.get("adjustment"), N_("Adjustment"), back=back, empty=0.0)
    note = str(form.get("comment", "")).strip()
    given = str(form.get("points", "")).strip()
    try:
        if given:
            if items or adjustment:
                raise Refused(400, N_("Give points or rubric items (with an adjustment), not both."), back=back)
            points = form_number(given, N_("Points"), back=back)
            marked = [store.mark(attempt, context=session.context, task=task, points=points, comment=note,
                                 marker=session.user) for attempt in attempts]
        elif not items and not adjustment and not note:
            raise Refused(400, N_("Choose the rubric items (or an adjustment or a comment) the selected answers get."),
                          back=back)
        else:
            marked = store.rubric_mark(attempts, context=session.context, task=task, items=items,
                                       adjustment=adjustment, note=note, marker=session.user)
    except AutograderError as exc:
        raise refused_change(exc, back=back) from exc
    hooks.scores_changed()
    return RedirectResponse(marking_page(week.name, task, after=attempts[-1], changed="marked", count=len(marked),
                                         **query), status_code=303)


# ---- the rubric's items (autograder.rubric) ---------------------------------------------------

def item_done(week: str, task: int, changed: str, count: int, form: CheckedForm) -> Response:
    """Back to the task's page, at the answer that was in view with the same filters, saying what changed."""
    at = str(form.get("at", ""))
    query: dict[str, str | int] = {"changed": changed, "count": count, **({"at": at} if at.isdigit() else {}),
                                   **{key: str(form.get(key)) for key in FILTER_FIELDS if form.get(key)}}
    return RedirectResponse(marking_page(week, task, **query) + "#rubric", status_code=303)


@router.post("/rubric/{task}/items")
def add_rubric_item(task: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek,
                    store: StoreDep) -> Response:
    back = marking_page(week.name, task)
    form_ids([task], N_("The page's address"), back=back)
    points = form_number(form.get("points"), N_("Points"), back=back)
    try:
        store.gradebook.add_rubric_item(week.name, task, points=points, comment=str(form.get("comment", "")))
    except AutograderError as exc:
        raise refused_change(exc, back=back) from exc
    return item_done(week.name, task, "added", 1, form)


@router.post("/rubric/{task}/items/{number}")
def edit_rubric_item(task: int, number: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek,
                     store: StoreDep, hooks: HooksDep) -> Response:
    back = marking_page(week.name, task)
    form_ids([task, number], N_("The page's address"), back=back)
    points = form_number(form.get("points"), N_("Points"), back=back)
    try:
        changed = store.edit_rubric_item(week.name, task, number, points=points,
                                         comment=str(form.get("comment", "")))
    except AutograderError as exc:
        raise refused_change(exc, back=back) from exc
    hooks.scores_changed()
    return item_done(week.name, task, "edited", len(changed), form)
