"""Marking by hand: the marking page (points and a comment per hand-graded answer) and the
rubric page (rubric items per task, applied to groups of similar answers). What the pages
show and how their numbers are read: ``autograder.service.marking``."""

from __future__ import annotations

import re

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from autograder.exceptions import AutograderError, Refused
from autograder.i18n.languages import framework_translations
from autograder.i18n.runtime import N_, _, speaking
from autograder.service.deps import CheckedForm, CourseDep, CurrentInstructor, HooksDep, PagesDep, PathWeek, StoreDep
from autograder.service.locales import instructor_language
from autograder.service.marking import answers_to_mark, form_ids, form_number, rubric_view

router = APIRouter(prefix="/instructor/{name}")
MARK_FIELD = re.compile(r"points-(\d{1,18})-(\d{1,6})")


@router.get("/marking")
def marking(session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep,
            pages: PagesDep) -> HTMLResponse:
    return pages.render("marking.html.j2", week=week, rows=answers_to_mark(store, session.context, week.name),
                        csrf=session.csrf, problems=[], language=instructor_language(session, course))


@router.post("/marking")
def save_marks(session: CurrentInstructor, form: CheckedForm, week: PathWeek, store: StoreDep, course: CourseDep,
               hooks: HooksDep, pages: PagesDep) -> Response:
    language = instructor_language(session, course)
    problems = []
    with speaking(framework_translations(language)):  # the problems in the page's language
        for key, value in form.items():
            field_name = MARK_FIELD.fullmatch(key)  # the form's own fields; any other key is not ours
            if field_name is None or not str(value).strip():
                continue
            attempt_id, task = field_name.groups()
            where = _("attempt {attempt}, task {task}").format(attempt=attempt_id, task=task)
            try:
                points = float(str(value))
            except ValueError:
                problems.append(_("{where}: {value} is not a number of points").format(where=where, value=repr(value)))
                continue
            try:
                store.mark(int(attempt_id), context=session.context, task=int(task), points=points,
                           comment=str(form.get(f"comment-{attempt_id}-{task}", "")))
            except AutograderError as exc:
                problems.append(f"{where}: {exc}")
    hooks.scores_changed()
    if problems:
        return pages.render("marking.html.j2", status=400, week=week,
                            rows=answers_to_mark(store, session.context, week.name), csrf=session.csrf,
                            problems=problems, language=language)
    return RedirectResponse(f"/instructor/{week.name}/marking", status_code=303)


# ---- rubric marking (autograder.rubric) ----------------------------------------------------

def rubric_page(week: str) -> str:
    return f"/instructor/{week}/rubric"


@router.get("/rubric")
def rubric(session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep, pages: PagesDep,
           changed: str = "", count: int = 0, task: int = 0) -> HTMLResponse:
    return pages.render("rubric.html.j2", week=week, tasks=rubric_view(store, session.context, week.name),
                        csrf=session.csrf, changed=changed, count=count, changed_task=task,
                        language=instructor_language(session, course))


def rubric_numbers(week: str, *numbers: int) -> None:
    """A rubric route's path numbers (task, item) checked as row numbers."""
    form_ids(numbers, N_("The page's address"), back=rubric_page(week))


def rubric_done(week: str, changed: str, count: int, task: int) -> Response:
    return RedirectResponse(f"{rubric_page(week)}?changed={changed}&count={count}&task={task}#task-{task}",
                            status_code=303)


@router.post("/rubric/{task}/items")
def add_rubric_item(task: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek,
                    store: StoreDep) -> Response:
    rubric_numbers(week.name, task)
    points = form_number(form.get("points"), N_("Points"), back=rubric_page(week.name))
    try:
        store.gradebook.add_rubric_item(week.name, task, points=points, comment=str(form.get("comment", "")))
    except AutograderError as exc:
        raise Refused(400, str(exc), back=rubric_page(week.name)) from exc
    return rubric_done(week.name, "added", 1, task)


@router.post("/rubric/{task}/items/{number}")
def edit_rubric_item(task: int, number: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek,
                     store: StoreDep, hooks: HooksDep) -> Response:
    rubric_numbers(week.name, task, number)
    points = form_number(form.get("points"), N_("Points"), back=rubric_page(week.name))
    try:
        changed = store.edit_rubric_item(week.name, task, number, points=points,
                                         comment=str(form.get("comment", "")))
    except AutograderError as exc:
        raise Refused(400, str(exc), back=rubric_page(week.name)) from exc
    hooks.scores_changed()
    return rubric_done(week.name, "edited", len(changed), task)


@router.post("/rubric/{task}/mark")
def rubric_mark(task: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek, store: StoreDep,
                hooks: HooksDep) -> Response:
    rubric_numbers(week.name, task)
    back = rubric_page(week.name)
    attempts = form_ids(form.getlist("attempt"), N_("Answer"), back=back)
    items = form_ids(form.getlist("item"), N_("Rubric item"), back=back)
    if not attempts:
        raise Refused(400, N_("Select at least one answer to mark."), back=back)
    adjustment = form_number(form.get("adjustment"), N_("Adjustment"), back=back, empty=0.0)
    note = str(form.get("comment", "")).strip()
    if not items and not adjustment and not note:
        raise Refused(400, N_("Choose the rubric items (or an adjustment or a comment) the selected answers get."),
                      back=back)
    try:
        marked = store.rubric_mark(attempts, context=session.context, task=task, items=items,
                                   adjustment=adjustment, note=note)
    except AutograderError as exc:
        raise Refused(400, str(exc), back=back) from exc
    hooks.scores_changed()
    return rubric_done(week.name, "marked", len(marked), task)
