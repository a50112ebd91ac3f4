"""A learner's week: the upload page with their attempts and the week's rules, and the
upload itself, which queues an attempt for grading and sends them to its page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from autograder.course import Week
from autograder.database import clock
from autograder.exceptions import AutograderError, Refused, SubmissionError
from autograder.i18n.languages import framework_translations
from autograder.i18n.runtime import N_, speaking
from autograder.notebook import read_notebook
from autograder.service.deps import (
    CurrentLearner,
    Hooks,
    HooksDep,
    LaunchedWeek,
    LimitsDep,
    PagesDep,
    RateLimits,
    SettingsDep,
    StoreDep,
    checked_form,
    too_many,
)
from autograder.service.events import attempt_fields, event
from autograder.service.locales import week_title
from autograder.service.sessions import Session
from autograder.service.settings import Settings
from autograder.service.store import Attempt, Store
from autograder.testing.budgets import week_budgets

router = APIRouter()


@router.get("/week/{name}")
def student_week(session: CurrentLearner, week: LaunchedWeek, store: StoreDep, hooks: HooksDep,
                 settings: SettingsDep, pages: PagesDep) -> HTMLResponse:
    hooks.warm(week.name)
    attempts = store.attempts(context=session.context, user=session.user, week=week.name)
    policy = hooks.policy_for(week.name)
    # the rules that decide the score, the CPU budgets among them (the service grades with the
    # default Limits; a hidden test's call_timeout marker changes its calls' budget), stated in
    # the learner's language before they upload, as the notebook's "Time limits" cell states them
    return pages.render("week.html.j2", week=week, attempts=list(reversed(attempts)), csrf=session.csrf,
                        counted=store.counted_score(context=session.context, user=session.user, week=week.name),
                        policy=policy, limit_mib=settings.upload_limit_bytes / 2**20, session=session,
                        budgets=week_budgets(week), language=session.language or None, zone=policy.timezone,
                        title=week_title(week, session.language))


@router.post("/week/{name}/upload")
async def upload(request: Request, session: CurrentLearner, week: LaunchedWeek, store: StoreDep, hooks: HooksDep,
                 settings: SettingsDep, limits: LimitsDep) -> Response:
    """Every refusal from here on leads back to the week's upload page."""
    try:
        form = await checked_form(request, session)  # its size: BodyLimit, while it streams in
        # the rate limit and the attempt are written to the database, the notebook parsed: in a
        # worker thread, so a busy database holds up this upload only, not every learner's page
        attempt = await run_in_threadpool(_queue, form, session, week, store, hooks, settings, limits)
    except Refused as exc:
        exc.back = f"/week/{week.name}"
        raise
    event("queued", **attempt_fields(attempt))
    hooks.wake()
    return RedirectResponse(f"/attempt/{attempt.id}", status_code=303)


def _queue(form: FormData, session: Session, week: Week, store: Store, hooks: Hooks, settings: Settings,
           limits: RateLimits) -> Attempt:
    """The upload's attempt, queued, if the rate limit, the file and the course's policy allow
    it; a refusal in the learner's language (the course policy's words are ``_``'s, said here;
    the others are catalog messages the error page translates)."""
    with speaking(framework_translations(session.language) if session.language else None):
        return _queue_checked(form, session, week, store, hooks, settings, limits)


def _queue_checked(form: FormData, session: Session, week: Week, store: Store, hooks: Hooks, settings: Settings,
                   limits: RateLimits) -> Attempt:
    wait = limits.uploads.allow(*session.who)
    if wait:
        raise too_many(wait, "uploads")
    content = _notebook(form.get("notebook"), settings.upload_limit_bytes)
    try:
        return store.submit(context=session.context, user=session.user, week=week.name, content=content,
                            policy=hooks.policy_for(week.name), now=clock.now())
    except AutograderError as exc:  # AttemptRefused: the course's policy says no, and why
        raise Refused(409, str(exc)) from exc


def _notebook(file: object, limit_bytes: int) -> bytes:
    """The uploaded notebook's bytes, if it is a readable notebook within the limit."""
    if not isinstance(file, UploadFile) or not file.filename:
        raise Refused(400, N_("Choose the notebook file (.ipynb) to upload."))
    content = file.file.read(limit_bytes + 1)
    if len(content) > limit_bytes:
        raise Refused(413, N_("The notebook is over the {size} MiB limit: clear its outputs (Kernel > Restart & "
                              "Clear Output) and upload it again."), size=f"{limit_bytes / 2**20:.0f}")
    if not file.filename.lower().endswith(".ipynb"):
        raise Refused(415, N_("{file} is not a notebook: upload the week's .ipynb file (in Jupyter: File > "
                              "Download as > Notebook)."), file=repr(file.filename))
    try:
        read_notebook(content)
    except SubmissionError as exc:
        raise Refused(415, N_("{file} is not a readable Jupyter notebook ({problem})."), file=repr(file.filename),
                      problem=str(exc)) from exc
    return content
