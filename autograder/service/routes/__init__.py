"""The service's routes, one router per kind of caller; ``create_app`` includes ``ROUTERS``.

- ``platform``: the LMS and its administrator, before any launch (keys, registration)
- ``launch``: the LTI login and launch, which sign a session into the browser
- ``deep_link``: an instructor adding an activity picks its week
- ``learner``: a learner's week page and upload (``CurrentLearner``, launched into the week)
- ``attempts``: an attempt's page, state and feedback (its learner, or the course's instructors)
- ``instructor``: an instructor's week report, regrading, score posts, results download
- ``marking``: marking by hand and by rubric
- ``overrides``: an instructor's override of an attempt's autograded points, with a reason
- ``markers``: the week's marking split among markers, and each one's progress
- ``metrics``: the monitoring system's scrape (a bearer token from the data folder)

Every route under ``/instructor/`` and ``/deep-link`` takes a ``CurrentInstructor``
(tests/service/test_app_e2e.py holds every such route of the app to it).

A route is a plain ``def``, which FastAPI runs in its thread pool: nearly every one reads or
writes the database (SQLAlchemy, SQLite's busy wait) or fetches from an LMS, and on the event
loop that wait would stall every learner's request. The few that must ``await`` a body (the
LTI login and launch, the upload) await only that, and hand the rest to ``run_in_threadpool``
(tests/service/test_blocking_routes.py).
"""

from fastapi import APIRouter

from autograder.service.routes import (
    attempts,
    deep_link,
    instructor,
    launch,
    learner,
    markers,
    marking,
    metrics,
    overrides,
    platform,
)

ROUTERS: tuple[APIRouter, ...] = (platform.router, launch.router, deep_link.router, learner.router,
                                  attempts.router, instructor.router, marking.router, markers.router,
                                  overrides.router, metrics.router)
