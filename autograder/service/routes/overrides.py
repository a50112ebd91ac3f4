"""Overriding an autograded task's points on one attempt (issue 40): the page lists the
attempt's autograded tasks, each with what the checks gave, its override if any (points,
reason, who, when) and a form to set or remove one. The gradebook keeps the override
(``Gradebook.set_override``); the student's feedback page shows it with the reason and the
LMS gets the new counted score through the outbox, as after a mark (``Store.override``)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from autograder.exceptions import AutograderError, Refused
from autograder.i18n.runtime import N_
from autograder.service.attempt_queue import Attempt
from autograder.service.deps import CheckedForm, CourseDep, CurrentInstructor, HooksDep, PagesDep, PathWeek, StoreDep
from autograder.service.locales import instructor_language
from autograder.service.marking import form_ids, form_number, is_row_id, refused_change
from autograder.service.sessions import Session
from autograder.service.store import Store

router = APIRouter(prefix="/instructor/{name}/attempts/{attempt_id}/overrides")


def overrides_page(week: str, attempt_id: int) -> str:
    return f"/instructor/{week}/attempts/{attempt_id}/overrides"


def course_attempt(attempt_id: int, week: str, session: Session, store: Store) -> Attempt:
    """The path's attempt, if it is one of the course's in the path's week (404 otherwise)."""
    attempt = store.attempt(attempt_id, context=session.context) if is_row_id(attempt_id) else None
    if attempt is None or attempt.week != week:
        raise Refused(404, N_("This course has no such attempt in {week}: open it from the week's report."),
                      week=week, back=f"/instructor/{week}")
    return attempt


@router.get("")
def overrides(attempt_id: int, session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep,
              pages: PagesDep, changed: int = 0, removed: int = 0) -> HTMLResponse:
    attempt = course_attempt(attempt_id, week.name, session, store)
    result = store.result(attempt.id, context=session.context)
    return pages.render("overrides.html.j2", week=week, attempt=attempt, csrf=session.csrf,
                        student=store.user_name(session.context, attempt.user) or attempt.user,
                        tasks=[t for t in result.tasks if not t.manual] if result is not None else [],
                        given=store.gradebook.overrides(week.name, [attempt.key]).get(attempt.key, {}), changed=changed,
                        removed=removed, language=instructor_language(session, course))


@router.post("/{task}")
def override(attempt_id: int, task: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek,
             store: StoreDep, hooks: HooksDep) -> Response:
    back = overrides_page(week.name, attempt_id)
    form_ids([task], N_("Task"), back=back)
    attempt = course_attempt(attempt_id, week.name, session, store)
    points = form_number(form.get("points"), N_("Points"), back=back)
    try:
        store.override(attempt.id, context=session.context, task=task, points=points,
                       reason=str(form.get("reason", "")), by=session.name or session.user)
    except AutograderError as exc:
        raise refused_change(exc, back=back) from exc
    hooks.scores_changed()
    return RedirectResponse(f"{back}?changed={task}#task-{task}", status_code=303)


@router.post("/{task}/remove")
def remove_override(attempt_id: int, task: int, session: CurrentInstructor, form: CheckedForm, week: PathWeek,
                    store: StoreDep, hooks: HooksDep) -> Response:
    back = overrides_page(week.name, attempt_id)
    form_ids([task], N_("Task"), back=back)
    attempt = course_attempt(attempt_id, week.name, session, store)
    try:
        store.remove_override(attempt.id, context=session.context, task=task)
    except AutograderError as exc:
        raise refused_change(exc, back=back) from exc
    hooks.scores_changed()
    return RedirectResponse(f"{back}?removed={task}#task-{task}", status_code=303)
