"""What a load balancer or an orchestrator asks of one replica, without a token: ``/healthz``
(the process answers) and ``/readyz`` (it reaches its database within a short timeout and its
grading loop goes round). Neither says anything private: status words and booleans.

A proxy takes a replica whose ``/readyz`` answers 503 out of its rotation (docs/LMS.md,
"Behind a load balancer"); an orchestrator restarts one whose ``/healthz`` stops answering.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from autograder.service.health import Health

router = APIRouter()


@router.get("/healthz")
@router.head("/healthz")
def healthz() -> JSONResponse:
    return JSONResponse({"status": "alive"}, headers={"Cache-Control": "no-store"})


@router.get("/readyz")
@router.head("/readyz")
async def readyz(request: Request) -> JSONResponse:
    health: Health = request.app.state.health
    database = await run_in_threadpool(health.database_answers)
    grading = health.grading_alive() if request.app.state.grading else None  # None: no grading in this process
    ready = database and grading is not False
    return JSONResponse({"status": "ready" if ready else "not ready", "database": database, "grading": grading},
                        status_code=200 if ready else 503, headers={"Cache-Control": "no-store"})
