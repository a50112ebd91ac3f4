"""The grading service's web side: LTI endpoints, the students' pages, the instructors' pages.

Everything a browser sees comes from here; grading, the queue and the outbox are the
store's and the runner's (store.py, runner.py, outbox.py).  The app runs behind a TLS
reverse proxy inside the LMS's iframe, so its session cookie is ``SameSite=None; Secure;
Partitioned`` (third-party cookies otherwise vanish), every form carries a CSRF token,
learner and instructor routes check the role the launch carried, a session uploads only
to the weeks it was launched into, and each user's requests are rate-limited. What a
connection, a body and a client's value may be is decided before any route, in edge.py.
"""

from __future__ import annotations

import hmac
import io
import re
import secrets
import threading
import time
import zipfile
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.datastructures import UploadFile

from autograder.course import Course, Week
from autograder.exceptions import AutograderError, CourseError, LaunchRefused, Refused, SubmissionError
from autograder.formats.cells import spreadsheet_cell
from autograder.i18n.languages import framework_translations
from autograder.i18n.runtime import untranslated
from autograder.notebook import read_notebook
from autograder.service.edge import BodyLimit, EdgeLimits, raise_open_files_limit, token, uvicorn_config
from autograder.service.keys import ToolKeys, _write_private
from autograder.service.lti import (
    DEEP_LINKING,
    AgsScoreSender,
    JwksCache,
    Launch,
    LaunchValidator,
    LoginStates,
    Platforms,
    ToolUrls,
    deep_linking_response,
    register_dynamically,
)
from autograder.service.marking import answers_to_mark, form_ids, form_number, rubric_view

if TYPE_CHECKING:
    from autograder.service.moodle_sync import SyncStatus
    from autograder.service.policy import WeekPolicy
    from autograder.service.store import Attempt, Store

# ``__Host-``: the browser takes these only over https (or from localhost), with Path=/ and no
# Domain, so a sibling subdomain cannot plant ("toss") a session or a state of its own choosing
SESSION_COOKIE = "__Host-ag-session"
STATE_COOKIE = "__Host-ag-lti-state"
SESSION_LIFETIME_S = 8 * 3600
UPLOAD_FORM_OVERHEAD = 64 * 1024  # the multipart envelope around the notebook and the CSRF field
MARK_FIELD = re.compile(r"points-(\d{1,18})-(\d{1,6})")


@dataclass(frozen=True)
class Settings:
    """How the service is reached and what it accepts; ``autograder serve`` fills it in."""

    public_url: str                      # the https URL the LMS and browsers use (the proxy's)
    data: Path                           # keys, registrations, login states
    tool_name: str = "ML autograder"
    upload_limit_bytes: int = 5 * 1024 * 1024
    requests_per_minute: int = 120       # per (issuer, user), every route
    uploads_per_minute: int = 6          # per (issuer, user), on top of the course's own minimum interval
    launches_per_minute: int = 1200      # per address (a campus NAT is one address for a whole class)
    edge: EdgeLimits = field(default_factory=EdgeLimits)  # connections, timeouts, body sizes


class Tool:
    """The LTI side of the service: keys, registrations, login states, the launch checker."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        self.settings = settings
        self.urls = ToolUrls(settings.public_url)
        self.client = client or httpx.Client(follow_redirects=False)
        self.keys = ToolKeys(settings.data / "keys")
        self.platforms = Platforms(settings.data / "platforms.json")
        self.states = LoginStates(settings.data / "lti.sqlite")
        self.validator = LaunchValidator(self.platforms, self.states, JwksCache(self.client))
        self.sender = AgsScoreSender(self.platforms, self.states, self.keys, self.client)
        self.session_secret = _secret(settings.data / "keys" / "session.secret")

    def new_registration_url(self) -> str:
        """The one URL a Moodle admin pastes: good for one registration within a day.

        Only who holds one may register a platform (otherwise anyone could point the tool at
        their own "LMS" and have it fetch URLs and grade for them). The code is in the path,
        not a query string, and spent by its first use, so a copy left in a log or a browser
        history registers nothing."""
        return f"{self.urls.register}/{self.states.new_registration_code()}"


def _secret(path: Path) -> bytes:
    """A random secret made once and kept beside the signing keys (0600)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(path, secrets.token_bytes(32))
    return path.read_bytes()


@dataclass
class Session:
    """Who is at the browser, from the last launch; signed into the session cookie."""

    issuer: str
    user: str
    context: str
    name: str
    instructor: bool
    weeks: list[str]  # the weeks (canonical names) this browser was launched into, in this context
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    deep_link: dict[str, str | None] | None = None

    @property
    def who(self) -> tuple[str, str]:
        """The user as rate limits count them: one platform's user 7 is not another's."""
        return self.issuer, self.user


class RateLimiter:
    """A token bucket per key: ``rate`` requests a minute, bursts up to ``rate``."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._buckets: dict[Hashable, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: Hashable) -> float:
        """0 when the request may go on, else the seconds to wait."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.rate), now))
            tokens = min(float(self.rate), tokens + (now - last) * self.rate / 60)
            if tokens < 1:
                self._buckets[key] = (tokens, now)
                return (1 - tokens) * 60 / self.rate
            self._buckets[key] = (tokens - 1, now)
            return 0.0




def _templates() -> Environment:
    env = Environment(loader=PackageLoader("autograder.service", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["points"] = lambda value: "–" if value is None else f"{round(value, 2):g}"
    env.filters["when"] = lambda moment: moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "–"
    return env


def create_app(settings: Settings, *, course: Course, store: Store, tool: Tool,
               policy_for: Callable[[str], WeekPolicy], wake: Callable[[], None],
               scores_changed: Callable[[], None] = lambda: None,
               warm: Callable[[str], None] = lambda week: None,
               syncs: Callable[[], list[SyncStatus]] = list) -> FastAPI:
    """The ASGI app; ``wake`` tells the grading service an attempt is queued,
    ``scores_changed`` tells the outbox a mark queued a score post, ``warm`` has a week's
    grader started when a student opens its upload page (the upload then skips the cold start),
    ``syncs`` gives the state of the Moodle Assignment syncs for the instructors' pages."""
    app = FastAPI(title=settings.tool_name, docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limit_for=_body_limits(settings), idle_timeout_s=settings.edge.body_idle_timeout_s,
                       total_timeout_s=settings.edge.body_timeout_s)
    templates = _templates()
    signer = URLSafeTimedSerializer(tool.session_secret, salt="ag-session")
    per_user = RateLimiter(settings.requests_per_minute)
    per_address = RateLimiter(settings.launches_per_minute)  # the LTI routes, before anyone is known
    uploads = RateLimiter(settings.uploads_per_minute)

    def page(name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(templates.get_template(name).render(tool_name=settings.tool_name, **values),
                            status_code=status)

    def set_cookie(response: Response, name: str, value: str, max_age: int) -> None:
        # Written by hand: Starlette writes ``Partitioned`` only on Python 3.14+, and without it
        # Chrome drops the cookie inside the LMS's iframe.  Values are URL-safe tokens.
        response.headers.append("set-cookie", f"{name}={value}; Max-Age={max_age}; Path=/; HttpOnly; Secure; "
                                              "SameSite=None; Partitioned")

    def cookie_session(request: Request) -> Session | None:
        """The session the browser's cookie holds, if it is ours, signed and not expired."""
        try:
            return Session(**signer.loads(request.cookies.get(SESSION_COOKIE) or "", max_age=SESSION_LIFETIME_S))
        except (BadSignature, TypeError):  # TypeError: signed by an older version, other fields
            return None

    def session_of(request: Request) -> Session:
        if not request.cookies.get(SESSION_COOKIE):
            raise Refused(401, "There is no session: open this activity from the course page in the LMS.")
        session = cookie_session(request)
        if session is None:
            raise Refused(401, "The session has expired or is not valid: open the activity again from the LMS.")
        wait = per_user.allow(session.who)
        if wait:
            raise Refused(429, f"Too many requests: wait {wait:.0f} s and try again.")
        return session

    def save(response: Response, session: Session) -> Response:
        set_cookie(response, SESSION_COOKIE, signer.dumps(session.__dict__), SESSION_LIFETIME_S)
        return response

    def instructor_of(request: Request) -> Session:
        session = session_of(request)
        if not session.instructor:
            raise Refused(403, "This page is for the course's instructors (the Instructor role in the LMS).")
        return session

    async def checked_form(request: Request, session: Session) -> dict[str, Any]:
        form = await request.form()
        if not hmac.compare_digest(token(form.get("csrf"), "form's CSRF token"), session.csrf):
            raise Refused(403, "The form is stale or was not sent from this page (CSRF check): reload and retry.")
        return dict(form)

    def week_of(name: str) -> Week:
        """The week a path or a launch names, by its canonical name (``1``, ``week1``, ``WEEK01``
        are week01): every route goes on with ``week.name`` only, so an alias is never stored."""
        try:
            return course.week(name)
        except CourseError as exc:
            raise Refused(404, str(exc)) from exc

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        headers = {"Retry-After": "60"} if exc.status == 429 else None
        response = page("error.html.j2", status=exc.status, message=exc.message, back=exc.back)
        if headers:
            response.headers.update(headers)
        return response

    @app.exception_handler(LaunchRefused)
    async def launch_refused(request: Request, exc: LaunchRefused) -> Response:
        return page("error.html.j2", status=401, message=str(exc), back=None)

    # ---- LTI ---------------------------------------------------------------------------

    def limit_address(request: Request) -> None:
        wait = per_address.allow(request.client.host if request.client else "unknown")
        if wait:
            raise Refused(429, f"Too many requests: wait {wait:.0f} s and try again.")

    @app.get("/lti/jwks")
    def jwks() -> JSONResponse:
        return JSONResponse(tool.keys.jwks())

    @app.get("/lti/config")
    def config() -> HTMLResponse:
        # the values an admin types; which platforms are registered is no one else's business
        return page("config.html.j2", values=tool.urls.manual_values(), register_url=tool.urls.register)

    @app.get("/lti/register")
    def register_without_code(request: Request) -> HTMLResponse:
        limit_address(request)
        raise Refused(403, "This registration URL lacks its one-time code: run `autograder serve --registration-url` "
                           "on the server and paste the URL it prints (…/lti/register/<code>).")

    @app.get("/lti/register/{code}")
    def register(request: Request, code: str, openid_configuration: str,
                 registration_token: str | None = None) -> HTMLResponse:
        limit_address(request)
        if not tool.states.use_registration_code(token(code, "registration code")):
            raise Refused(403, "This registration URL is used up, expired or was never issued here: run "
                               "`autograder serve --registration-url` on the server for a new one.")
        platform = register_dynamically(tool.client, openid_configuration=openid_configuration,
                                        registration_token=registration_token, urls=tool.urls,
                                        tool_name=settings.tool_name, platforms=tool.platforms)
        return page("registered.html.j2", platform=platform)

    @app.api_route("/lti/login", methods=["GET", "POST"])
    async def login(request: Request) -> Response:
        limit_address(request)
        params = dict(request.query_params)
        if request.method == "POST":
            params.update({k: str(v) for k, v in (await request.form()).items()})
        url, state = tool.validator.login_redirect(params, redirect_uri=tool.urls.launch)
        response = RedirectResponse(url, status_code=302)
        set_cookie(response, STATE_COOKIE, state, 600)
        return response

    def earlier_weeks(request: Request, launch: Launch) -> list[str]:
        """The weeks this browser's session was launched into before, if it is the same user in
        the same course (two activities open in two tabs both keep working)."""
        earlier = cookie_session(request)
        if earlier is None:
            return []
        same = (earlier.issuer, earlier.user, earlier.context) == (launch.platform.issuer, launch.sub, launch.context)
        return earlier.weeks if same else []

    @app.post("/lti/launch")
    async def launch(request: Request) -> Response:
        limit_address(request)
        form = await request.form()
        launch = tool.validator.validate(str(form.get("id_token", "")), token(form.get("state"), "launch's state"),
                                         token(request.cookies.get(STATE_COOKIE), "login state cookie"))
        store.remember_user(launch.context, launch.sub, launch.name, launch.email)
        if launch.message_type == DEEP_LINKING:
            if not launch.is_instructor:
                raise Refused(403, "Only instructors add activities.")
            session = Session(issuer=launch.platform.issuer, user=launch.sub, context=launch.context,
                              name=launch.name, instructor=True, weeks=[], deep_link=_deep_link_fields(launch))
            return save(RedirectResponse("/deep-link", status_code=303), session)
        named = str(launch.custom.get("week") or "")
        if not named:
            raise Refused(400, "This activity names no week: the instructor adds it again through the "
                               "tool's activity picker, or sets the custom parameter week=weekNN.")
        week = week_of(named).name
        if launch.lineitem:
            store.set_lineitem(launch.context, week, launch.lineitem)
            tool.states.bind_lineitem(launch.lineitem, launch.platform)
        weeks = [w for w in earlier_weeks(request, launch) if w != week] + [week]
        session = Session(issuer=launch.platform.issuer, user=launch.sub, context=launch.context, name=launch.name,
                          instructor=launch.is_instructor, weeks=weeks)
        target = f"/instructor/{week}" if launch.is_instructor else f"/week/{week}"
        response = save(RedirectResponse(target, status_code=303), session)
        set_cookie(response, STATE_COOKIE, "", 0)  # spent; deleted with the same attributes it was set with
        return response

    @app.get("/deep-link")
    def deep_link_pick(request: Request) -> HTMLResponse:
        session = instructor_of(request)
        if not session.deep_link:
            raise Refused(400, "No activity is being added: start from 'Add an activity' in the LMS.")
        weeks = [course.week(name) for name in course.week_names()]
        return page("deep_link.html.j2", weeks=weeks, csrf=session.csrf)

    @app.post("/deep-link")
    async def deep_link_send(request: Request) -> HTMLResponse:
        session = instructor_of(request)
        form = await checked_form(request, session)
        if not session.deep_link:
            raise Refused(400, "No activity is being added: start from 'Add an activity' in the LMS.")
        week = week_of(str(form.get("week", "")))
        launch = _launch_for_response(session.deep_link, tool.platforms)
        token = deep_linking_response(launch, tool.keys, title=week.title, week=week.name,
                                      points=week.max_score, launch_url=tool.urls.launch)
        return page("autosubmit.html.j2", action=session.deep_link["return_url"], fields={"JWT": token})

    # ---- students ------------------------------------------------------------------------

    def own_week(request: Request, name: str) -> tuple[Session, Week]:
        """The session and the week, if this session was launched into that week: a learner
        launched from week 1's activity cannot upload to (and be graded in) week 4's."""
        session = session_of(request)
        week = week_of(name)
        if week.name not in session.weeks:
            raise Refused(403, f"This page was not opened from {week.name}'s activity: open {week.name} from the "
                               "course page in the LMS.")
        return session, week

    @app.get("/week/{name}")
    def student_week(name: str, request: Request) -> HTMLResponse:
        session, week = own_week(request, name)
        warm(week.name)
        attempts = store.attempts(context=session.context, user=session.user, week=week.name)
        return page("week.html.j2", week=week, attempts=list(reversed(attempts)), csrf=session.csrf,
                    counted=store.counted_score(context=session.context, user=session.user, week=week.name),
                    policy=policy_for(week.name), limit_mib=settings.upload_limit_bytes / 2**20,
                    session=session)

    @app.post("/week/{name}/upload")
    async def upload(name: str, request: Request) -> Response:
        session, week = own_week(request, name)
        try:
            return await _upload(week.name, request, session)
        except Refused as exc:
            exc.back = f"/week/{week.name}"
            raise

    async def _upload(name: str, request: Request, session: Session) -> Response:
        form = await checked_form(request, session)  # its size: BodyLimit, while it streams in
        wait = uploads.allow(session.who)
        if wait:
            raise Refused(429, f"Too many uploads: wait {wait:.0f} s and try again.")
        file = form.get("notebook")
        if not isinstance(file, UploadFile) or not file.filename:
            raise Refused(400, "Choose the notebook file (.ipynb) to upload.")
        content = await file.read(settings.upload_limit_bytes + 1)
        if len(content) > settings.upload_limit_bytes:
            raise Refused(413, f"The notebook is over the {settings.upload_limit_bytes / 2**20:.0f} MiB limit: "
                               "clear its outputs (Kernel > Restart & Clear Output) and upload it again.")
        if not file.filename.lower().endswith(".ipynb"):
            raise Refused(415, f"{file.filename!r} is not a notebook: upload the week's .ipynb file "
                               "(in Jupyter: File > Download as > Notebook).")
        try:
            read_notebook(content)
        except SubmissionError as exc:
            raise Refused(415, f"{file.filename!r} is not a readable Jupyter notebook ({exc}).") from exc
        try:
            attempt = store.submit(context=session.context, user=session.user, week=name, content=content,
                                   policy=policy_for(name), now=_utcnow())
        except AutograderError as exc:  # AttemptRefused: the course's policy says no, and why
            raise Refused(409, str(exc)) from exc
        wake()
        return RedirectResponse(f"/attempt/{attempt.id}", status_code=303)

    def own_attempt(request: Request, attempt_id: int) -> tuple[Session, Attempt]:
        session = session_of(request)
        attempt = store.attempt(attempt_id, context=session.context,
                                user=None if session.instructor else session.user) if _is_row_id(attempt_id) else None
        if attempt is None:
            raise Refused(403, "This attempt is not yours: you see only your own attempts.")
        return session, attempt

    @app.get("/attempt/{attempt_id}")
    def attempt_page(attempt_id: int, request: Request) -> HTMLResponse:
        session, attempt = own_attempt(request, attempt_id)
        position = store.queue_position(attempt.id) if attempt.state == "queued" else 0
        return page("attempt.html.j2", attempt=attempt, position=position, week=week_of(attempt.week),
                    session=session)

    @app.get("/attempt/{attempt_id}/state")
    def attempt_state(attempt_id: int, request: Request) -> JSONResponse:
        _, attempt = own_attempt(request, attempt_id)
        position = store.queue_position(attempt.id) if attempt.state == "queued" else 0
        return JSONResponse({"state": attempt.state, "position": position, "score": attempt.score,
                             "max_score": attempt.max_score})

    @app.get("/attempt/{attempt_id}/feedback")
    def feedback(attempt_id: int, request: Request) -> Response:
        _, attempt = own_attempt(request, attempt_id)
        if attempt.feedback_path is None or not Path(attempt.feedback_path).exists():
            raise Refused(404, "The feedback is not ready yet: this page updates itself when it is.")
        return HTMLResponse(Path(attempt.feedback_path).read_text(encoding="utf-8"),
                            headers={"Content-Security-Policy": "sandbox allow-scripts; default-src 'none'; "
                                     "style-src 'unsafe-inline'; img-src data:; script-src 'unsafe-inline'"})

    # ---- instructors ---------------------------------------------------------------------

    @app.get("/instructor/{name}")
    def instructor_week(name: str, request: Request) -> HTMLResponse:
        session = instructor_of(request)
        week = week_of(name)
        attempts = store.week_attempts(context=session.context, week=week.name)
        latest: dict[str, Attempt] = {}
        for attempt in attempts:
            if attempt.user not in latest or attempt.number > latest[attempt.user].number:
                latest[attempt.user] = attempt
        counts = {user: sum(a.user == user for a in attempts) for user in latest}
        counted = {user: store.counted_score(context=session.context, user=user, week=week.name) for user in latest}
        return page("instructor.html.j2", week=week, latest=sorted(latest.values(), key=lambda a: a.user),
                    lineitem=store.lineitem(session.context, week.name),
                    counts=counts, counted=counted, posts=store.posts(context=session.context, week=week.name),
                    names={user: store.user_name(session.context, user) or user for user in latest},
                    syncs=[status for status in syncs() if status.entry.week == week.name],
                    csrf=session.csrf, session=session)

    @app.post("/instructor/{name}/regrade")
    async def regrade(name: str, request: Request) -> Response:
        session = instructor_of(request)
        await checked_form(request, session)
        week = week_of(name)
        store.regrade(context=session.context, week=week.name)
        wake()
        return RedirectResponse(f"/instructor/{week.name}", status_code=303)

    @app.post("/instructor/{name}/posts/{post_id}/resend")
    async def resend(name: str, post_id: int, request: Request) -> Response:
        """Send a failed score post again (after the instructor fixed what the LMS refused)."""
        session = instructor_of(request)
        await checked_form(request, session)
        week = week_of(name)
        if not (_is_row_id(post_id) and store.retry_post(post_id, context=session.context)):
            raise Refused(404, "There is no failed score post with this number in your course: reload the page.",
                          back=f"/instructor/{week.name}")
        scores_changed()
        return RedirectResponse(f"/instructor/{week.name}", status_code=303)

    def to_mark(session: Session, name: str) -> list[tuple[Attempt, str, list[tuple[Any, str | None]]]]:
        return answers_to_mark(store, session.context, name)

    @app.get("/instructor/{name}/marking")
    def marking(name: str, request: Request) -> HTMLResponse:
        session = instructor_of(request)
        week = week_of(name)
        return page("marking.html.j2", week=week, rows=to_mark(session, week.name), csrf=session.csrf,
                    problems=[])

    @app.post("/instructor/{name}/marking")
    async def save_marks(name: str, request: Request) -> Response:
        session = instructor_of(request)
        form = await checked_form(request, session)
        week = week_of(name)
        problems = []
        for key, value in form.items():
            field_name = MARK_FIELD.fullmatch(key)  # the form's own fields; any other key is not ours
            if field_name is None or not str(value).strip():
                continue
            attempt_id, task = field_name.groups()
            try:
                points = float(str(value))
            except ValueError:
                problems.append(f"attempt {attempt_id}, task {task}: {value!r} is not a number of points")
                continue
            try:
                store.mark(int(attempt_id), context=session.context, task=int(task), points=points,
                           comment=str(form.get(f"comment-{attempt_id}-{task}", "")))
            except AutograderError as exc:
                problems.append(f"attempt {attempt_id}, task {task}: {exc}")
        scores_changed()
        if problems:
            return page("marking.html.j2", status=400, week=week, rows=to_mark(session, week.name),
                        csrf=session.csrf, problems=problems)
        return RedirectResponse(f"/instructor/{week.name}/marking", status_code=303)

    # ---- rubric marking (autograder.rubric; the page's data: autograder.service.marking) ----

    def rubric_page(week: str) -> str:
        return f"/instructor/{week}/rubric"

    @app.get("/instructor/{name}/rubric")
    def rubric(name: str, request: Request, changed: str = "", count: int = 0, task: int = 0) -> HTMLResponse:
        session = instructor_of(request)
        week = week_of(name)
        language = course.languages.instructor
        translations = framework_translations(language)
        return page("rubric.html.j2", week=week, tasks=rubric_view(store, session.context, week.name),
                    csrf=session.csrf, language=language, changed=changed, count=count, changed_task=task,
                    _=translations.gettext if translations is not None else untranslated)

    async def rubric_form(request: Request, name: str, *numbers: int) -> tuple[Session, str, Any]:
        """The instructor, the week's own name and the checked form of a rubric route (whose
        path ``numbers``, task and item, are checked as row numbers)."""
        session = instructor_of(request)
        await checked_form(request, session)
        week = week_of(name).name
        form_ids(numbers, "The page's address", back=rubric_page(week))
        return session, week, await request.form()  # Starlette keeps the form read; getlist needs the original

    def rubric_done(week: str, changed: str, count: int, task: int) -> Response:
        return RedirectResponse(f"{rubric_page(week)}?changed={changed}&count={count}&task={task}#task-{task}",
                                status_code=303)

    @app.post("/instructor/{name}/rubric/{task}/items")
    async def add_rubric_item(name: str, task: int, request: Request) -> Response:
        _, week, form = await rubric_form(request, name, task)
        points = form_number(form.get("points"), "Points", back=rubric_page(week))
        try:
            store.gradebook.add_rubric_item(week, task, points=points, comment=str(form.get("comment", "")))
        except AutograderError as exc:
            raise Refused(400, str(exc), back=rubric_page(week)) from exc
        return rubric_done(week, "added", 1, task)

    @app.post("/instructor/{name}/rubric/{task}/items/{number}")
    async def edit_rubric_item(name: str, task: int, number: int, request: Request) -> Response:
        _, week, form = await rubric_form(request, name, task, number)
        points = form_number(form.get("points"), "Points", back=rubric_page(week))
        try:
            changed = store.edit_rubric_item(week, task, number, points=points, comment=str(form.get("comment", "")))
        except AutograderError as exc:
            raise Refused(400, str(exc), back=rubric_page(week)) from exc
        scores_changed()
        return rubric_done(week, "edited", len(changed), task)

    @app.post("/instructor/{name}/rubric/{task}/mark")
    async def rubric_mark(name: str, task: int, request: Request) -> Response:
        session, week, form = await rubric_form(request, name, task)
        attempts = form_ids(form.getlist("attempt"), "Answer", back=rubric_page(week))
        items = form_ids(form.getlist("item"), "Rubric item", back=rubric_page(week))
        if not attempts:
            raise Refused(400, "Select at least one answer to mark.", back=rubric_page(week))
        adjustment = form_number(form.get("adjustment"), "Adjustment", back=rubric_page(week), empty=0.0)
        note = str(form.get("comment", "")).strip()
        if not items and not adjustment and not note:
            raise Refused(400, "Choose the rubric items (or an adjustment or a comment) the selected answers get.",
                          back=rubric_page(week))
        try:
            marked = store.rubric_mark(attempts, context=session.context, task=task, items=items,
                                       adjustment=adjustment, note=note)
        except AutograderError as exc:
            raise Refused(400, str(exc), back=rubric_page(week)) from exc
        scores_changed()
        return rubric_done(week, "marked", len(marked), task)

    @app.get("/instructor/{name}/results.zip")
    def results_zip(name: str, request: Request) -> Response:
        session = instructor_of(request)
        name = week_of(name).name
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            lines = ["user,attempt,state,score,max_score,late_penalty_fraction,submitted_at"]
            for attempt in store.week_attempts(context=session.context, week=name):
                lines.append(f"{_csv(attempt.user)},{attempt.number},{attempt.state},"
                             f"{'' if attempt.score is None else attempt.score},{attempt.max_score},"
                             f"{attempt.penalty},{attempt.submitted_at.isoformat()}")
                for path in (attempt.result_path, attempt.feedback_path):
                    if path is not None and Path(path).exists():
                        archive.write(path, f"{name}/{_safe(attempt.user)}/{attempt.number}/{Path(path).name}")
            archive.writestr(f"{name}/attempts.csv", "\n".join(lines) + "\n")
        return Response(buffer.getvalue(), media_type="application/zip",
                        headers={"Content-Disposition": f'attachment; filename="{name}-results.zip"'})

    return app


def _body_limits(settings: Settings) -> Callable[[str], tuple[int, str]]:
    """Each route's largest body, and what to do when it is passed: a notebook upload gets the
    upload limit (and its form's envelope), everything else ``edge.form_limit_bytes``."""
    upload_mib = settings.upload_limit_bytes / 2**20
    upload = (settings.upload_limit_bytes + UPLOAD_FORM_OVERHEAD,
              f"The upload is over the {upload_mib:.0f} MiB limit: clear the notebook's outputs (Kernel > Restart "
              "& Clear Output) and upload it again.")
    other = (settings.edge.form_limit_bytes,
             f"The request is over the {settings.edge.form_limit_bytes / 2**20:.0f} MiB this page accepts.")

    def limit_for(path: str) -> tuple[int, str]:
        return upload if path.startswith("/week/") and path.endswith("/upload") else other

    return limit_for


def _deep_link_fields(launch: Launch) -> dict[str, str | None]:
    return {"issuer": launch.platform.issuer, "client_id": launch.platform.client_id,
            "deployment_id": launch.deployment_id, "return_url": launch.deep_link_return_url,
            "data": launch.deep_link_data}


def _launch_for_response(fields: dict[str, str | None], platforms: Platforms) -> Launch:
    """The parts of the deep-linking launch the response needs, back from the session."""
    platform = platforms.find(str(fields["issuer"]), str(fields["client_id"]))
    if platform is None:
        raise Refused(400, "The platform that asked for this activity is no longer registered.")
    return Launch(message_type=DEEP_LINKING, platform=platform, deployment_id=str(fields["deployment_id"]),
                  sub="", name="", email=None, roles=(), context_id="", context_title="", resource_link_id=None,
                  deep_link_return_url=fields["return_url"], deep_link_data=fields["data"])


def _is_row_id(number: int) -> bool:
    """Whether a number from a URL can be a database row id (SQLite's are signed 64-bit):
    a larger one is nobody's, answered as such rather than as an overflow."""
    return 0 < number < 2**63


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _csv(value: str) -> str:
    """A quoted CSV cell of a value the LMS chose (a user id): shown, never run as a formula."""
    return '"' + spreadsheet_cell(value).replace('"', '""') + '"'


def _safe(value: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in value)[:80]


@contextmanager
def service_app(settings: Settings, course: Course, *, jobs: int = 1, scheduler: str | None = None,
                client: httpx.Client | None = None) -> Iterator[FastAPI]:
    """The whole service, running: the web app, the grading threads, the outbox posting scores,
    and the Moodle Assignment syncs of service.toml's ``[[sync]]`` (a bad entry: PolicyError,
    before anything starts).

    ``app.state.store``, ``app.state.tool`` and ``app.state.syncs`` are there for ``autograder
    serve`` and tests."""
    from autograder.service.moodle_sync import MoodleSyncs, load_syncs
    from autograder.service.outbox import Outbox
    from autograder.service.policy import policy_for
    from autograder.service.runner import GradingService
    from autograder.service.store import Store

    entries = load_syncs(course, service_data=settings.data)
    store = Store(settings.data, course)
    tool = Tool(settings, client)
    with Outbox(store, tool.sender) as outbox, \
            GradingService(course, store, jobs=jobs, scheduler=scheduler,
                           on_graded=lambda _: outbox.wake()) as service, \
            MoodleSyncs(entries, course, pool=service.pool, scheduler=scheduler) as syncs:
        app = create_app(settings, course=course, store=store, tool=tool,
                         policy_for=lambda week: policy_for(course.root, week), wake=service.wake,
                         scores_changed=outbox.wake, warm=service.warm, syncs=syncs.statuses)
        app.state.store, app.state.tool, app.state.syncs = store, tool, syncs
        yield app


def run_service(settings: Settings, course: Course, *, host: str, port: int, jobs: int,
                scheduler: str | None, tls: tuple[Path, Path] | None = None,
                announce: Callable[[Tool], None] = lambda _: None) -> None:
    """Serve until stopped, behind a TLS proxy on this machine (its X-Forwarded-* headers are trusted).

    ``announce`` is shown the tool once it is ready (the CLI prints the registration URL)."""
    import uvicorn

    raise_open_files_limit()
    with service_app(settings, course, jobs=jobs, scheduler=scheduler) as app:
        announce(app.state.tool)
        try:
            uvicorn.Server(uvicorn_config(app, host=host, port=port, limits=settings.edge, tls=tls)).run()
        except KeyboardInterrupt:  # SIGINT, re-raised by uvicorn once it has shut down: a clean stop
            pass
