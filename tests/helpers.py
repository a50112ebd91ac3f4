"""Helpers shared by several test files: the one home for them.

``conftest.py`` holds fixtures only. pytest loads it itself, and under
``--import-mode=importlib`` (pyproject.toml) it is not a module other files can import
(``from conftest import ...`` fails). A plain function two test files need lives here and
is imported as ``from tests.helpers import NAME`` (the repository root is on the path of
every pytest run, as for ``tests.service``).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import nbformat
import psutil
import psycopg
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.course import Course

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "AUTHORING.md"
MARKS_ITS_USERS = "marks_its_users"  # the attribute marks_its_users sets on a fixture function
Fixture = TypeVar("Fixture", bound=Callable[..., Any])
_BLOCK = re.compile(r"^```(\w+) (cell|file=\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def marks_its_users(*marks: pytest.MarkDecorator) -> Callable[[Fixture], Fixture]:
    """Give ``marks`` to every test that uses the fixture below, directly or through another
    fixture: ``sandbox`` on one that starts bubblewrap (a zygote, a graded batch, a service with
    graders), so a new test using it is marked without anyone listing it. pytest refuses marks
    on a fixture itself; tests/conftest.py applies these at collection, before ``-m`` selects.
    Goes under ``@pytest.fixture``."""
    def mark(fixture: Fixture) -> Fixture:
        setattr(fixture, MARKS_ITS_USERS, marks)
        return fixture
    return mark


def marks_from_fixtures(item: pytest.Item) -> dict[str, pytest.MarkDecorator]:
    """The marks, by name, that the fixtures ``item`` uses (its fixture closure) give it."""
    # pytest has no public way to reach an item's fixture definitions; _fixtureinfo is the one
    # its own fixture-closure code (and pytest-xdist's loadscope) relies on
    definitions = getattr(item, "_fixtureinfo", None)
    if definitions is None:  # not a Python test function (a doctest, say): it uses no fixtures
        return {}
    return {mark.name: mark for fixturedefs in definitions.name2fixturedefs.values() for fixturedef in fixturedefs
            for mark in getattr(fixturedef.func, MARKS_ITS_USERS, ())}


def throwaway_course(root: Path, week: str, cells: list[tuple[str, str]], test_file: str, tests: str) -> Course:
    """A course of one week under ``root``, for a test that needs a small week of its own:
    the source notebook from ``(kind, source)`` cells ("markdown" or "code") and one hidden
    test file. Grading imports hidden test modules into this process once per name: give
    each suite of the session its own ``test_file`` name."""
    folder = root / "source" / week
    (folder / "tests").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) if kind == "markdown" else nbformat.v4.new_code_cell(s)
                for kind, s in cells]
    nbformat.write(nb, folder / f"{week}.ipynb")
    (folder / "tests" / test_file).write_text(tests)
    return Course(root)


def notebook_bytes(*cells: str) -> bytes:
    """A notebook of code cells, as a student's file would hold it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()


def numbered_notebook(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A notebook of ``cells`` with the ids ``c0``, ``c1``...: reproducible output."""
    nb = new_notebook(cells=list(cells))
    for index, cell in enumerate(nb.cells):
        cell.id = f"c{index}"
    return nb


# the source notebook of generate's tests (tests/generate/, tests/authoring/): its student and
# solution notebooks are the files beside it, byte for byte
GENERATE_SOURCE = ROOT / "tests" / "fixtures" / "generate" / "week99.ipynb"
# it calls the student's code: `autograder generate` refuses a test that passes without an answer
WEEK99_HIDDEN = ("import numpy as np\nimport pytest\n\n\n@pytest.mark.task(1)\n@pytest.mark.points(10)\n"
                 "def test_hidden(student):\n    model = student.Mean().fit(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]))\n"
                 "    assert list(model.predict(np.zeros((2, 1)))) == [2.0, 2.0]\n")


def week99_course(root: Path) -> Course:
    """A tiny course under ``root`` for generate's tests: ``GENERATE_SOURCE`` as source/week99,
    two data files, its hidden tests, and a Jupyter checkpoint generate must leave behind."""
    week = root / "source" / "week99"
    (week / "tests").mkdir(parents=True)
    (week / "data").mkdir()
    shutil.copy(GENERATE_SOURCE, week / "week99.ipynb")
    (week / "data" / "points.csv").write_text("x,y\n1,2\n")
    (week / "data" / "notes.txt").write_text("small data\n")
    (week / "tests" / "test_week99.py").write_text(WEEK99_HIDDEN)
    (week / ".ipynb_checkpoints").mkdir()
    (week / ".ipynb_checkpoints" / "week99-checkpoint.ipynb").write_text("{}")
    return Course(root)


def edit_week99(course: Course, change: Callable[[nbformat.NotebookNode], object]) -> None:
    """Apply ``change`` to the source notebook of ``week99_course``'s week, as an author's edit."""
    week = course.week("week99")
    nb = nbformat.read(week.source_notebook, as_version=nbformat.NO_CONVERT)
    change(nb)
    nbformat.write(nb, week.source_notebook)


def write_week_from_the_docs(root: Path) -> Path:
    """The week-7 example of docs/AUTHORING.md, written under ``root`` from its blocks (a
    ``markdown cell``/``python cell`` block is one notebook cell, a ``file=`` block a
    file); returns the notebook's path."""
    cells = []
    for language, kind, body in _BLOCK.findall(DOCS.read_text(encoding="utf-8")):
        if kind == "cell":
            make = new_markdown_cell if language == "markdown" else new_code_cell
            cells.append(make(body.rstrip("\n")))
        else:
            path = root / kind.removeprefix("file=")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
    path = root / "source" / "week07" / "week07.ipynb"
    nbformat.write(numbered_notebook(*cells), path)
    return path


# ---- accessibility (the browser tests of tests/test_accessibility.py and tests/service/) ----
# axe-core comes from the PyPI package axe-playwright-python, which ships it. Only WCAG 2.0/2.1
# level A and AA rules run (best-practice rules are left out: the bar is WCAG 2.1 AA).
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_violations(page: Any, *, skip: Sequence[str] = ()) -> list[str]:
    """Every WCAG A/AA violation axe-core finds in a Playwright ``page`` and in each of its
    frames, one line each (frame, rule, element, axe's summary): [] when there is none.
    Frames are checked one by one: the feedback inside the service's iframe is sandboxed, an
    opaque origin axe cannot reach from its parent. ``skip``: rules not to run, for a page
    whose check by that rule another test does (color-contrast takes ~10 s on a page of 300 rows)."""
    from axe_playwright_python.sync_playwright import Axe

    axe, found = Axe(), []
    for frame in page.frames:
        results = axe.run(frame, options={"runOnly": {"type": "tag", "values": WCAG_AA}, "iframes": False,
                                          "resultTypes": ["violations"],
                                          "rules": {rule: {"enabled": False} for rule in skip}})
        for rule in results.response["violations"]:
            for node in rule["nodes"]:
                found.append(f"{frame.url[:70]} {rule['id']}: {node['target']} {node['failureSummary']!r}")
    return found


def focus_outline(page: Any) -> str:
    """The outline drawn around the element with the keyboard focus in ``page`` (a Playwright
    page or frame): '' when there is none, so a test can say focus is visible."""
    return str(page.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement);"
        " return s.outlineStyle === 'none' || parseFloat(s.outlineWidth) === 0 ? ''"
        " : s.outlineStyle + ' ' + s.outlineWidth; })()"))


def assert_accessible(page: Any, where: str, *, frames: str = "", skip: Sequence[str] = ()) -> None:
    """No axe violation in ``page``'s frames whose address starts with ``frames`` (in the
    service's tests, the tool's frames: the stand-in LMS around them is not ours); ``skip``
    as ``axe_violations`` takes it."""
    found = [v for v in axe_violations(page, skip=skip) if v.startswith(frames[:70])]
    assert found == [], f"{where}:\n" + "\n".join(found)


class PostgresServer:
    """A throwaway PostgreSQL cluster of Debian's binaries (``pg_config --bindir``): initdb
    into ``folder``, ``postgres`` listening on a Unix socket there only (no TCP), run as an
    unprivileged user (PostgreSQL refuses root). ``new_database()`` gives each test its own."""

    USER = "autograder"

    def __init__(self, folder: Path) -> None:
        bindir = Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                                     check=True).stdout.strip())
        if not (bindir / "initdb").is_file():
            raise FileNotFoundError(f"{bindir}/initdb is missing: install Debian's postgresql package")
        self.folder = folder
        owner = pwd.getpwnam("postgres" if _exists_user("postgres") else "nobody") if os.geteuid() == 0 else None
        if owner is not None:
            shutil.chown(folder, owner.pw_uid, owner.pw_gid)
        run_as: dict[str, Any] = {"user": owner.pw_uid, "group": owner.pw_gid} if owner is not None else {}
        subprocess.run([bindir / "initdb", "-D", folder / "data", "-U", self.USER, "--auth=trust", "-E", "UTF8",
                        "--no-sync", "--no-instructions"], check=True, capture_output=True, **run_as)
        self._process = subprocess.Popen(
            [bindir / "postgres", "-D", folder / "data", "-k", folder, "-c", "listen_addresses=", "-c", "fsync=off",
             "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=subprocess.DEVNULL, stderr=(folder / "log").open("wb"), **run_as)
        self._count = 0
        self._wait_ready()

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.USER}@/{database}?host={self.folder}"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(host=str(self.folder), user=self.USER, dbname="postgres").close()
                return
            except psycopg.OperationalError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not start: {(self.folder / 'log').read_text()}") from None
                time.sleep(0.1)

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        self._count += 1
        name = f"test_{self._count}"
        with psycopg.connect(host=str(self.folder), user=self.USER, dbname="postgres", autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        self._process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown: clients still connected are cut off
        self._process.wait(30)


def _exists_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


class RoundRobinProxy:
    """A load balancer on loopback that keeps no sessions: each new TCP connection goes to
    the next of ``backends`` (ports on 127.0.0.1) in turn, bytes passed through untouched
    (TLS ends at the backend). ``served`` counts the connections each backend took."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self.served = [0] * len(backends)
        self._turn = 0
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0))
        self.port: int = self._server.sockets[0].getsockname()[1]
        self._thread = threading.Thread(target=self._loop.run_forever, name="round-robin-proxy", daemon=True)
        self._thread.start()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        index = self._turn % len(self.backends)
        self._turn += 1
        self.served[index] += 1
        try:
            backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", self.backends[index])
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(self._pipe(client_reader, backend_writer), self._pipe(backend_reader, client_writer))

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            await self._server.wait_closed()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def kill_alone(process: subprocess.Popen[Any], *, grace_s: float = 5.0) -> int:
    """SIGKILL ``process`` alone, as a crash or the OOM killer would; how many of its
    descendants (a service's graders) were still alive ``grace_s`` later. Those are killed
    then, so they do not load the machine; a service whose graders outlive it leaks them."""
    children = psutil.Process(process.pid).children(recursive=True)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    time.sleep(grace_s)
    orphans = []
    for child in children:
        try:
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                orphans.append(child)
                child.kill()
        except psutil.NoSuchProcess:
            pass
    return len(orphans)


@contextmanager
def cpu_hogs() -> Iterator[None]:
    """Two processes spinning per core for as long as the block runs: a deadline rush's
    load, beside which a grader with a core to itself gets about a third of it (issue 37).
    Each hog has a session of its own, as each sandbox has: where the kernel shares CPU time
    between sessions first (autogroup, on by default), hogs in the test's session would share
    one session's part and hardly slow a sandboxed worker."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(2 * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
