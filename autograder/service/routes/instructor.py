"""An instructor's week: the report of every student's counted attempt, score posts and
Moodle syncs; regrading the week, sending a refused score post again, and the results as
a zip."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Callable, Mapping

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from autograder.exceptions import Refused
from autograder.formats.result_json import encode
from autograder.formats.spreadsheet_cells import spreadsheet_cell
from autograder.i18n.languages import translations
from autograder.i18n.runtime import N_, untranslated
from autograder.publish import GRADEBOOK_CSV, Learner, attempt_page, gradebook_csv
from autograder.report.instructor import Row, report_body, report_script, report_style
from autograder.results import SubmissionResult
from autograder.service.counting import counted as counted_score
from autograder.service.deps import (
    CheckedForm,
    CourseDep,
    CurrentInstructor,
    HooksDep,
    PagesDep,
    PathWeek,
    StoreDep,
)
from autograder.service.locales import instructor_language
from autograder.service.marking import is_row_id
from autograder.service.pages import STATES
from autograder.service.store import Attempt

router = APIRouter(prefix="/instructor/{name}")
ATTEMPT_NOTE = N_("attempt {number}")  # under a student's name on the live report: the attempt shown


@router.get("")
def instructor_week(request: Request, session: CurrentInstructor, week: PathWeek, store: StoreDep, hooks: HooksDep,
                    course: CourseDep, pages: PagesDep) -> Response:
    """The live report, in the instructor's language (the LMS's locale for them, else the
    course's ``instructor`` language), its moments in service.toml's time zone: the batch
    report's body (``report.instructor.report_body``) with a row per student, then the
    score posts and Moodle syncs.

    The page asks for itself every 15 s with the ETag of the last one it got: while nothing
    changed the answer is a bodiless 304 and the page keeps its tables as they are (300
    students' page is ~400 kB, and replacing it would close what the reader opened)."""
    language = instructor_language(session, course)
    active = translations(week, language)  # the week's catalog (its title and tasks'), then the framework's
    attempts = store.week_attempts(context=session.context, week=week.name)
    results = store.results_of(attempts)  # the week's results in one read, marks applied
    theirs: dict[str, list[Attempt]] = {}  # each student's attempts, first to last
    for attempt in sorted(attempts, key=lambda a: a.number):
        theirs.setdefault(attempt.user, []).append(attempt)
    known = store.user_names(session.context, theirs)
    names = {user: known.get(user) or user for user in theirs}
    rows = [_student_row(own, results, names[user], active.gettext if active is not None else untranslated)
            for user, own in theirs.items()]
    page = pages.render("instructor.html.j2", week=week, students=len(rows),
                        report=report_body(rows, language=language, active=active, lang=language,
                                           extra_columns=(N_("Attempts"), N_("Counted")), week=week),
                        report_style=report_style(), report_script=report_script(),
                        lineitem=store.lineitem(session.context, week.name),
                        posts=store.posts(context=session.context, week=week.name), names=names,
                        syncs=[status for status in hooks.syncs() if status.entry.week == week.name],
                        csrf=session.csrf, session=session, zone=hooks.policy_for(week.name).timezone,
                        regrade=store.regrade_status(context=session.context, week=week.name),
                        language=language)
    tag = '"' + hashlib.sha256(page.body).hexdigest()[:32] + '"'
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={"ETag": tag})
    page.headers["ETag"] = tag
    return page


def _student_row(own: list[Attempt], results: Mapping[int, SubmissionResult], name: str,
                 gettext: Callable[[str], str]) -> Row:
    """A student's row of the live report: their counted attempt's result, else their latest
    with one; before any, their latest attempt's state (queued, grading, failed). The note
    under the name says which attempt it is, and the latest's state when that one has no
    result yet (a new upload being graded)."""
    score = counted_score(own)
    latest = own[-1]
    extra = (float(len(own)), None if score is None else score.score)
    shown = score.attempt if score is not None else next((a for a in reversed(own) if a.id in results), None)
    if shown is None:
        return Row(name=name, link=f"/attempt/{latest.id}",
                   note=gettext(ATTEMPT_NOTE).format(number=latest.number), state=latest.state,
                   state_name=STATES[latest.state], message=latest.message or "", extra=extra)
    note = gettext(ATTEMPT_NOTE).format(number=shown.number)
    if latest.id not in results:
        note += " · " + gettext(ATTEMPT_NOTE).format(number=latest.number) + ": " + gettext(STATES[latest.state])
    return Row(name=name, link=f"/attempt/{shown.id}", note=note, result=results[shown.id], extra=extra)


@router.get("/regrade")
def regrade_page(session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep,
                 pages: PagesDep) -> HTMLResponse:
    """What a regrade of the week does (how many attempts, scores kept until each new one
    lands) and the form that asks for it; while one runs, how far it is."""
    return pages.render("regrade.html.j2", week=week, regrade=store.regrade_status(context=session.context,
                                                                                 week=week.name),
                        csrf=session.csrf, session=session, language=instructor_language(session, course))


@router.post("/regrade")
def regrade(session: CurrentInstructor, _: CheckedForm, week: PathWeek, store: StoreDep,
            hooks: HooksDep) -> Response:
    """Queue the week's graded attempts again (``Store.regrade``) and show the regrade's progress."""
    store.regrade(context=session.context, week=week.name)
    hooks.wake()
    return RedirectResponse(f"/instructor/{week.name}/regrade", status_code=303)


@router.post("/posts/{post_id}/resend")
def resend(post_id: int, session: CurrentInstructor, _: CheckedForm, week: PathWeek, store: StoreDep,
           hooks: HooksDep) -> Response:
    """Send a failed score post again (after the instructor fixed what the LMS refused)."""
    if not (is_row_id(post_id) and store.retry_post(post_id, context=session.context)):
        raise Refused(404, N_("There is no failed score post with this number in your course: reload the page."),
                      back=f"/instructor/{week.name}")
    hooks.scores_changed()
    return RedirectResponse(f"/instructor/{week.name}", status_code=303)


@router.get("/results.zip")
def results_zip(session: CurrentInstructor, week: PathWeek, store: StoreDep, course: CourseDep) -> Response:
    """The week's attempts as a CSV, each result's JSON and feedback page rendered from the
    gradebook (marks applied), and ``gradebook.csv``: the batch's sheet (``publish.gradebook_csv``)
    with a row per student for their counted attempt (else their latest with a result),
    named as the LMS named them, the LTI ``sub`` as their LMS id. ``attempts.csv`` stays as
    it was, internal user ids and all, for scripts that read it."""
    name = week.name
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        lines = ["user,attempt,state,score,max_score,late_penalty_fraction,submitted_at"]
        attempts = store.week_attempts(context=session.context, week=name)
        results = store.results_of(attempts)
        theirs: dict[str, list[Attempt]] = {}
        for attempt in sorted(attempts, key=lambda a: a.number):
            theirs.setdefault(attempt.user, []).append(attempt)
        for attempt in attempts:
            lines.append(f"{csv_cell(attempt.user)},{attempt.number},{attempt.state},"
                         f"{'' if attempt.score is None else attempt.score},{attempt.max_score},"
                         f"{attempt.penalty},{attempt.submitted_at.isoformat()}")
            result = results.get(attempt.id)
            if result is not None:
                folder = f"{name}/{_safe(attempt.user)}/{attempt.number}/{attempt.key}"
                archive.writestr(f"{folder}.json", encode(result))
                archive.writestr(f"{folder}.html", attempt_page(course, result, week_title=attempt.title or name))
        archive.writestr(f"{name}/attempts.csv", "\n".join(lines) + "\n")
        rows = []
        known = store.user_names(session.context, theirs)
        for user, own in theirs.items():
            score = counted_score(own)
            shown = score.attempt if score is not None else next((a for a in reversed(own) if a.id in results), None)
            if shown is not None:
                rows.append((Learner(name=known.get(user) or user, lms_id=user),
                             results[shown.id]))
        archive.writestr(f"{name}/{GRADEBOOK_CSV}", gradebook_csv(rows).encode("utf-8"))
    return Response(buffer.getvalue(), media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{name}-results.zip"'})


def csv_cell(value: str) -> str:
    """A quoted CSV cell of a value the LMS chose (a user id): shown, never run as a formula."""
    return '"' + spreadsheet_cell(value).replace('"', '""') + '"'


def _safe(value: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in value)[:80]
