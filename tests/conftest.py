"""Shared fixtures for the framework's own tests (fixtures only: a helper function two test
files share goes in ``tests/helpers.py``, which they can import)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from autograder.course import Course
from autograder.execution import Limits, Sandboxed, ZygoteSlot
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.results import SubmissionResult
from autograder.submission import Submission
from tests.helpers import PostgresServer, marks_from_fixtures, marks_its_users

ROOT = Path(__file__).resolve().parent.parent
WEEK01_MIX = ["correct_fresh_notebook", "wrong_no_bias", "untouched_stub", "cheat_allclose", "wrong_unfitted_ppn",
              "correct_loop_eta_y_x"]


@pytest.fixture(scope="session")
def course() -> Course:
    return Course.locate(ROOT)


@pytest.fixture(scope="session")
@marks_its_users(pytest.mark.sandbox)
def slot():
    """One warm, sandboxed zygote shared by the tests (starting one costs about a second),
    with this course's preloaded modules, as its grading's zygote has."""
    with ZygoteSlot(Limits(), preload=Course.locate(ROOT).grading.preload) as s:
        yield s


@pytest.fixture(scope="session")
def week01_mix() -> list[Submission]:
    """Week-1 fixtures (right, wrong, untouched, cheating) and one file that is not a notebook:
    the batch the parallel and cluster runs must grade exactly as one local run does."""
    folder = ROOT / "tests" / "fixtures" / "week01"
    # each with its own fixed seed, so every run draws the same hidden data and results compare exactly
    return [Submission(origin=f"{name}.ipynb", key=name, content=(folder / f"{name}.ipynb").read_bytes(), seed=index)
            for index, name in enumerate(WEEK01_MIX)] + [Submission(origin="broken.ipynb", key="broken",
                                                                    content=b"{not json")]


def comparable(results: list[SubmissionResult]) -> list[dict]:
    """Result documents without the one field that differs between two runs."""
    return [{k: v for k, v in to_dict(r).items() if k != "duration_s"} for r in results]


@pytest.fixture(scope="session")
def as_comparable():
    return comparable


@pytest.fixture(scope="session")
def week01_mix_local(course: Course, slot: ZygoteSlot, week01_mix: list[Submission]) -> list[dict]:
    """``week01_mix`` graded once, locally, in this process: the reference for other runs."""
    return comparable(grade(course.week("week01"), week01_mix, isolation=Sandboxed(slot=slot)))


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright, one for a test module; the test is
    skipped when either is missing (``make setup`` installs both)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("Debian's chromium is not installed: run scripts/install-system-packages (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the session (skipped, saying why, where none is installed)."""
    if shutil.which("pg_config") is None:
        pytest.skip("PostgreSQL is not installed (no pg_config): install Debian's postgresql package")
    folder = Path(tempfile.mkdtemp(prefix="autograder-pg-"))
    try:
        server = PostgresServer(folder)
    except FileNotFoundError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """The database a test's gradebook or store uses, once per engine: None for SQLite (the
    file where the code puts it by default), else a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


# --- markers `sandbox` and `slow` (README, "Development") ------------------------------------
# `make quick` runs the tests that are neither; `make test` and CI run every test. Each test file
# marks its own tests (`pytestmark` for a module, a decorator for a test); a fixture that starts
# the sandbox marks every test using it with @marks_its_users(pytest.mark.sandbox), applied here.
# `sandbox`: the test starts bubblewrap, or uses a fixture that does: it grades through
# `grade_parallel`, `run_batch`, the `grade`, `audit` or `moodle sync` command, a service with
# graders, or a zygote (the session's `slot` or one of its own).
# `slow`: not `sandbox`, and measured at two seconds or more (`--durations`) on 2 cores shared with
# other jobs (load 7 to 12).


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for mark in marks_from_fixtures(item).values():
            item.add_marker(mark)


# The guard on `sandbox`: a test `make quick` runs (neither marker) finds, first on its PATH, a
# `bwrap` that notes the test and refuses to start, so a test (or a command it runs) that would
# start the sandbox fails, saying to mark it, in `make quick` as in every run. Marked tests see
# the real one (a `slow` test may start it: `generate --check` grades in the sandbox).
_REFUSING_BWRAP = """#!/bin/sh
echo "$PYTEST_CURRENT_TEST" >> "$(dirname "$0")/started"
echo "bubblewrap refused: this test is not marked sandbox (README, Development)" >&2
exit 125
"""
_REFUSING = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    folder = Path(tempfile.mkdtemp(prefix="autograder-unmarked-"))
    (folder / "bwrap").write_text(_REFUSING_BWRAP)
    (folder / "started").touch()
    # the sandbox starts bubblewrap as its unprivileged user: it must run the script and note
    folder.chmod(0o755)
    (folder / "bwrap").chmod(0o755)
    (folder / "started").chmod(0o666)
    config.stash[_REFUSING] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(config.stash[_REFUSING], ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    if item.get_closest_marker("sandbox") is not None or item.get_closest_marker("slow") is not None:
        return (yield)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{item.config.stash[_REFUSING]}{os.pathsep}{path}"
    try:
        return (yield)
    finally:
        os.environ["PATH"] = path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                           pytest.TestReport]:
    report = yield
    started = item.config.stash[_REFUSING] / "started"
    if call.when == "teardown" and started.stat().st_size:
        started.write_bytes(b"")
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} started bubblewrap (the sandbox) without the `sandbox` marker: "
                           "mark it (@pytest.mark.sandbox, or pytestmark in its module), or mark the fixture "
                           "that starts it with @marks_its_users(pytest.mark.sandbox) (tests/helpers.py), so "
                           "that `make quick` leaves it out")
    return report
