"""One attempt's pages: its state (the page polls it while the attempt is queued or being
graded) and its feedback, for the learner who made it and the course's instructors."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from autograder.exceptions import Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import CourseDep, CurrentLearner, OwnAttempt, PagesDep, StoreDep, week_of
from autograder.service.locales import week_title

router = APIRouter(prefix="/attempt/{attempt_id}")
# the feedback page is the grader's HTML: shown in a sandboxed frame, reaching nothing
FEEDBACK_POLICY = ("sandbox allow-scripts; default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                   "script-src 'unsafe-inline'")


@router.get("")
def attempt_page(session: CurrentLearner, attempt: OwnAttempt, store: StoreDep, course: CourseDep,
                 pages: PagesDep) -> HTMLResponse:
    position = store.queue_position(attempt.id) if attempt.state == "queued" else 0
    week = week_of(course, attempt.week)
    return pages.render("attempt.html.j2", attempt=attempt, position=position, week=week, session=session,
                        language=session.language or None, title=week_title(week, session.language))


@router.get("/state")
def attempt_state(attempt: OwnAttempt, store: StoreDep) -> JSONResponse:
    position = store.queue_position(attempt.id) if attempt.state == "queued" else 0
    return JSONResponse({"state": attempt.state, "position": position, "score": attempt.score,
                         "max_score": attempt.max_score})


@router.get("/feedback")
def feedback(attempt: OwnAttempt, store: StoreDep) -> Response:
    """The attempt's feedback page, rendered from the gradebook's result (marks applied)."""
    page = store.feedback(attempt)
    if page is None:
        raise Refused(404, N_("The feedback is not ready yet: this page updates itself when it is."))
    return HTMLResponse(page, headers={"Content-Security-Policy": FEEDBACK_POLICY})
