"""The grading service's web side, assembled: LTI endpoints, the students' pages, the instructors' pages.

Everything a browser sees comes from the routers in ``routes/`` (one per kind of caller);
who may call a route is in its signature (``deps.CurrentLearner``, ``deps.CurrentInstructor``).
Grading, the queue and the outbox are the store's and the runner's (store.py, runner.py,
outbox.py).  The app runs behind a TLS reverse proxy inside the LMS's iframe, so its cookies
are made for it (sessions.py), every form carries a CSRF token, a session uploads only to the
weeks it was launched into, and each user's requests are rate-limited. What a connection, a
body and a client's value may be is decided before any route, in edge.py.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import Response

from autograder.course import Course
from autograder.exceptions import LaunchRefused, Refused
from autograder.service.deps import Hooks, Services, services
from autograder.service.edge import BodyLimit, raise_open_files_limit, uvicorn_config
from autograder.service.routes import ROUTERS
from autograder.service.settings import Settings
from autograder.service.tool import Tool

if TYPE_CHECKING:
    from autograder.service.moodle_sync import SyncStatus
    from autograder.service.policy import WeekPolicy
    from autograder.service.store import Store

UPLOAD_FORM_OVERHEAD = 64 * 1024  # the multipart envelope around the notebook and the CSRF field


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
    app.state.services = Services.build(settings, course, store, tool,
                                        Hooks(policy_for=policy_for, wake=wake, scores_changed=scores_changed,
                                              warm=warm, syncs=syncs))
    app.add_middleware(BodyLimit, limit_for=_body_limits(settings), idle_timeout_s=settings.edge.body_idle_timeout_s,
                       total_timeout_s=settings.edge.body_timeout_s)
    app.exception_handler(Refused)(_refused)
    app.exception_handler(LaunchRefused)(_launch_refused)
    for router in ROUTERS:
        app.include_router(router)
    return app


async def _refused(request: Request, exc: Refused) -> Response:
    """Every refusal, as a page saying what to do (and the way back, when there is one)."""
    response = services(request).pages.render("error.html.j2", status=exc.status, message=exc.message, back=exc.back)
    if exc.status == 429:
        response.headers.update({"Retry-After": "60"})
    return response


async def _launch_refused(request: Request, exc: LaunchRefused) -> Response:
    return services(request).pages.render("error.html.j2", status=401, message=str(exc), back=None)


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
    store = Store(settings.data, course, database=settings.database, claim_ttl_s=settings.claim_ttl_s)
    tool = Tool(settings, client)
    with Outbox(store, tool.sender) as outbox, \
            GradingService(course, store, jobs=jobs, scheduler=scheduler,
                           on_graded=lambda _: outbox.wake()) as service, \
            MoodleSyncs(entries, course, store.database, claim_ttl_s=settings.claim_ttl_s, pool=service.pool,
                        scheduler=scheduler) as syncs:
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
    # SIGTERM (systemd, a container stopping) stops as Ctrl-C does: uvicorn re-raises the signal
    # once it has shut down, which would otherwise end the process before the graders and the
    # outbox below are closed
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with service_app(settings, course, jobs=jobs, scheduler=scheduler) as app:
        announce(app.state.tool)
        try:
            uvicorn.Server(uvicorn_config(app, host=host, port=port, limits=settings.edge, tls=tls)).run()
        except KeyboardInterrupt:  # SIGINT or SIGTERM, re-raised by uvicorn once it has shut down: a clean stop
            pass
