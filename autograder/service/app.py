"""The grading service's web side, assembled: LTI endpoints, the students' pages, the instructors' pages.

Everything a browser sees comes from the routers in ``routes/`` (one per kind of caller);
who may call a route is in its signature (``deps.CurrentLearner``, ``deps.CurrentInstructor``).
Grading, the queue and the outbox are the store's and the runner's (store.py, runner.py,
outbox.py).  The app runs behind a TLS reverse proxy inside the LMS's iframe, so its cookies
are made for it (sessions.py), every form carries a CSRF token, a session uploads only to the
weeks it was launched into, and each user's requests are rate-limited. What a connection, a
body and a client's value may be is decided before any route, in edge.py.

While the database is away (a restart, a failover), a request that needs it gets a 503 page
with ``Retry-After`` saying whether an upload was taken (``_database_away``), and the log
gets one line per kind of error per minute, not a traceback per request. ``/healthz`` and
``/readyz`` (routes/health.py) tell a load balancer whether this replica can work.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import Response
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from autograder.course import Course
from autograder.exceptions import GradebookError, LaunchRefused, Refused
from autograder.i18n.runtime import N_
from autograder.service.deps import Hooks, Services, services
from autograder.service.edge import BodyCap, BodyLimit, raise_open_files_limit, uvicorn_config
from autograder.service.events import event
from autograder.service.health import Health, LogLimit, database_away, describe
from autograder.service.locales import accepted_language
from autograder.service.routes import ROUTERS
from autograder.service.routes.health import router as health_router
from autograder.service.settings import Settings
from autograder.service.tool import Tool

if TYPE_CHECKING:
    from autograder.service.moodle_sync import SyncStatus
    from autograder.service.policy import WeekPolicy
    from autograder.service.store import Store

log = logging.getLogger(__name__)

UPLOAD_FORM_OVERHEAD = 64 * 1024  # the multipart envelope around the notebook and the CSRF field
RETRY_AFTER_S = 30  # what a 503 asks a browser to wait while the database is away


def create_app(settings: Settings, *, course: Course, store: Store, tool: Tool,
               policy_for: Callable[[str], WeekPolicy], wake: Callable[[], None],
               scores_changed: Callable[[], None] = lambda: None,
               warm: Callable[[str], None] = lambda week: None,
               syncs: Callable[[], list[SyncStatus]] = list, health: Health | None = None) -> FastAPI:
    """The ASGI app; ``wake`` tells the grading service an attempt is queued,
    ``scores_changed`` tells the outbox a mark queued a score post, ``warm`` has a week's
    grader started when a student opens its upload page (the upload then skips the cold start),
    ``syncs`` gives the state of the Moodle Assignment syncs for the instructors' pages,
    ``health`` is the grading loop's (None: no grading in this process, ``/readyz`` checks the
    database only)."""
    app = FastAPI(title=settings.tool_name, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = Services.build(settings, course, store, tool,
                                        Hooks(policy_for=policy_for, wake=wake, scores_changed=scores_changed,
                                              warm=warm, syncs=syncs))
    app.add_middleware(BodyLimit, limit_for=_body_limits(settings), idle_timeout_s=settings.edge.body_idle_timeout_s,
                       total_timeout_s=settings.edge.body_timeout_s)
    app.exception_handler(Refused)(_refused)
    app.exception_handler(LaunchRefused)(_launch_refused)
    app.state.health, app.state.grading = health or Health(store.database), health is not None
    app.state.database_log = LogLimit()
    app.exception_handler(DBAPIError)(_database_away)
    app.exception_handler(PoolTimeout)(_database_away)
    for router in (*ROUTERS, health_router):
        app.include_router(router)
    return app


async def _database_away(request: Request, exc: Exception) -> Response:
    """The database could not be reached: a 503 page saying whether the upload was taken (an
    upload is stored in the transaction that failed, so it was not: send it again; anything
    else leaves the uploads already taken as they are), and one log line per kind a minute.
    An error in a query (not the database away) stays a 500 with its traceback: a bug."""
    if not database_away(exc):
        raise exc
    kind = describe(exc)
    held = request.app.state.database_log.allow(kind)
    if held is not None:
        log.warning("requests answered 503: the database is unreachable (%s)%s", kind,
                    f" ({held} more since the last such line)" if held else "")
    upload = request.method == "POST" and request.url.path.endswith("/upload")
    response = services(request).pages.render("unavailable.html.j2", status=503, upload=upload,
                                              retry_after=RETRY_AFTER_S, language=request_language(request))
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


async def _refused(request: Request, exc: Refused) -> Response:
    """Every refusal, as a page saying what to do (and the way back, when there is one)."""
    response = services(request).pages.render("error.html.j2", status=exc.status, refusal=exc, back=exc.back,
                                              language=request_language(request))
    if exc.status == 429:  # deps.too_many's: the seconds until the limit lets the next request through
        response.headers["Retry-After"] = str(exc.values["seconds"])
    return response


def request_language(request: Request) -> str:
    """The language of a page shown outside a route (a refusal, the 503 page): the session's,
    when the browser has one; before any launch (a refused login or launch) the browser's
    ``Accept-Language`` among the course's languages; else the course's source language."""
    parts = services(request)
    session = parts.cookies.read(request)
    if session is not None and session.language:
        return session.language
    languages = parts.course.languages
    return accepted_language(request.headers.get("accept-language"), languages.offered, languages.source)


async def _launch_refused(request: Request, exc: LaunchRefused) -> Response:
    """A refused login, launch or registration: what to do in the page's language, why in English below."""
    return services(request).pages.render("error.html.j2", status=401, refusal=exc, back=None,
                                          language=request_language(request))


def _body_limits(settings: Settings) -> Callable[[str], BodyCap]:
    """Each route's largest body, and what to do when it is passed: a notebook upload gets the
    upload limit (and its form's envelope), everything else ``edge.form_limit_bytes``."""
    upload_mib = settings.upload_limit_bytes / 2**20
    upload = BodyCap(settings.upload_limit_bytes + UPLOAD_FORM_OVERHEAD,
                     N_("The notebook is over the {size} MiB limit: clear its outputs (Kernel > Restart & Clear "
                        "Output) and upload it again."), upload_mib)
    other = BodyCap(settings.edge.form_limit_bytes, N_("The request is over the {size} MiB this page accepts."),
                    settings.edge.form_limit_bytes / 2**20)

    def limit_for(path: str) -> BodyCap:
        return upload if path.startswith("/week/") and path.endswith("/upload") else other

    return limit_for


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
    if settings.database is not None:
        check_database_role(settings.database)
    store = Store(settings.data, course, database=settings.database, claim_ttl_s=settings.claim_ttl_s)
    tool = Tool(settings, client)
    with Outbox(store, tool.sender) as outbox, \
            GradingService(course, store, jobs=jobs, scheduler=scheduler,
                           on_graded=lambda _: outbox.wake()) as service, \
            MoodleSyncs(entries, course, store.database, claim_ttl_s=settings.claim_ttl_s, pool=service.pool,
                        scheduler=scheduler) as syncs:
        app = create_app(settings, course=course, store=store, tool=tool,
                         policy_for=lambda week: policy_for(course.root, week), wake=service.wake,
                         scores_changed=outbox.wake, warm=service.warm, syncs=syncs.statuses,
                         health=service.health)
        app.state.store, app.state.tool, app.state.syncs = store, tool, syncs
        yield app


def check_database_role(url: str) -> None:
    """Refuse, saying what to grant, a PostgreSQL role that cannot create tables where the service
    keeps them (its schema, ``public``): the service creates and migrates its tables itself, and
    PostgreSQL 15 gives ``CREATE`` on ``public`` only to the database's owner. Without this the
    first start fails inside a migration, on an SQL statement the operator did not write."""
    from autograder.database import Database

    database = Database.connect(url)
    try:
        if database.dialect != "postgresql":
            return
        with database.read() as db:
            role, name, schema, allowed = db.execute(text(
                "SELECT current_user, current_database(), current_schema(), "
                "COALESCE(has_schema_privilege(current_schema(), 'CREATE'), false)")).one()
    except DBAPIError as exc:
        raise GradebookError(f"{database.where}: cannot open the database: {describe(exc)}") from exc
    finally:
        database.close()
    if not allowed:
        where = f"schema {schema}" if schema else "any schema (none on its search_path exists)"
        raise GradebookError(
            f"{database.where}: the role {role} cannot create tables in {where} of database {name}, and the service "
            f"creates and migrates its own: make the role the database's owner (ALTER DATABASE {name} OWNER TO "
            f"{role}) or, as the owner, GRANT CREATE ON SCHEMA {schema or 'public'} TO {role} (docs/LMS.md, \"The "
            "database role\")")


def run_service(settings: Settings, course: Course, *, host: str, port: int, jobs: int,
                scheduler: str | None, tls: tuple[Path, Path] | None = None) -> None:
    """Serve until stopped, behind a TLS proxy on this machine (its X-Forwarded-* headers are trusted).
    The log says where it listens, which database it uses, and when it stops (``events``)."""
    import uvicorn

    raise_open_files_limit()
    # SIGTERM (systemd, a container stopping) stops as Ctrl-C does: uvicorn re-raises the signal
    # once it has shut down, which would otherwise end the process before the graders and the
    # outbox below are closed
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with service_app(settings, course, jobs=jobs, scheduler=scheduler) as app:
        store: Store = app.state.store
        event("database", url=store.database.where, dialect=store.database.dialect)
        event("listening", host=host, port=port, public_url=settings.public_url, tls=tls is not None, jobs=jobs,
              manual_registration=f"{settings.public_url.rstrip('/')}/lti/config")
        try:
            uvicorn.Server(uvicorn_config(app, host=host, port=port, limits=settings.edge, tls=tls)).run()
        except KeyboardInterrupt:  # SIGINT or SIGTERM, re-raised by uvicorn once it has shut down: a clean stop
            pass
    event("shutdown", reason="stopped by SIGINT or SIGTERM; the graders, the outbox and the syncs are closed")
