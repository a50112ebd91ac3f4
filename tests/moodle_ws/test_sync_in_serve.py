"""The Moodle sync inside `autograder serve`: ``[[sync]]`` in service.toml, over loopback.

The whole service (web app, graders, outbox, syncs) runs under a real uvicorn with the
stand-in LMS (tests/service/lms.py) and the stand-in Moodle (conftest.py). With no command
run, a hand-in placed in "Moodle" is pulled, graded and pushed back; a second entry with a
wrong token shows its error on the instructor's page while LTI uploads go on; stopping the
service stops the syncs, a run under way included. Bad entries stop `serve` from starting.
Replicas' syncs on one database (SQLite and PostgreSQL) make each due run once, keep one
schedule and show one status, and a dead replica's run is taken over once its lease expires.
The instructor's page with the sync table filled meets WCAG 2.1 AA in chromium
(docs/ACCESSIBILITY.md).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import nbformat
import pytest

from autograder.course import Course
from autograder.database import open_database
from autograder.exceptions import PolicyError
from autograder.gradebook import FILENAME, Gradebook
from autograder.service.moodle_sync import MoodleSyncs, SyncStatus, load_syncs
from autograder.service.policy import policy_for
from autograder.service.sync_leases import SyncLeases
from tests.helpers import assert_accessible
from tests.moodle_ws.conftest import TEACHER, Site
from tests.service.lms import Lms, register_and_add_week, running_lms
from tests.service.web import wait_until

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "tests" / "artefacts"
CORRECT = (ROOT / "tests" / "fixtures" / "week01" / "correct_fresh_notebook.ipynb").read_bytes()


def slow_notebook() -> bytes:
    """The correct notebook with a last cell that sleeps 25 s (a cell may take 30)."""
    notebook = nbformat.reads(CORRECT.decode(), as_version=4)
    cell = nbformat.v4.new_code_cell("import time\ntime.sleep(25)")
    if notebook.nbformat_minor < 5:  # cell ids came with format 4.5
        del cell["id"]
    notebook.cells.append(cell)
    return nbformat.writes(notebook).encode()


def a_course(folder: Path, syncs: str) -> Course:
    """A course holding week01 whose service.toml has ``syncs``, and the token files it names."""
    shutil.copytree(ROOT / "source" / "week01", folder / "source" / "week01")
    shutil.copytree(ROOT / "assignments" / "week01", folder / "assignments" / "week01")
    (folder / "service.toml").write_text(syncs, encoding="utf-8")
    return Course.locate(folder)


def token_file(path: Path, token: str, mode: int = 0o600) -> Path:
    path.write_text(token + "\n", encoding="utf-8")
    os.chmod(path, mode)
    return path


def sync_entries(url: str, interval_s: int = 10) -> str:
    return f"""
[week01]
max_attempts = 5

[[sync]]
week = "week01"
url = "{url}"
assignment = 7
token_file = "moodle-token"
interval_s = {interval_s}

[[sync]]
week = "1"
url = "{url}"
assignment = 8
token_file = "wrong-token"
interval_s = {interval_s}
"""


def status(app: Any, number: int) -> SyncStatus:
    statuses: list[SyncStatus] = app.state.syncs.statuses()
    return next(s for s in statuses if s.entry.number == number)


def two_students() -> Site:
    """A stand-in Moodle with two enrolled students, 201 and 202, who have not handed in yet."""
    site = Site()
    site.users.update({201: "Ada Lovelace", 202: "Alan Turing"})
    site.enrolled.update({201, 202})
    return site


@contextmanager
def serving_with_syncs(server: Any, site: Site, folder: Path, *, interval_s: int = 10) -> Iterator[tuple[Course, Lms]]:
    """The whole service, registered with the stand-in LMS, for a course with ``sync_entries``
    (the second one's token wrong) against ``site``; each entry's first run starts at once."""
    server.use(site)
    course = a_course(folder / "course", sync_entries(server.url, interval_s))
    token_file(course.root / "moodle-token", server.token)
    token_file(course.root / "wrong-token", "f" * 32)
    (folder / "lms").mkdir()
    with running_lms(folder / "lms", course) as lms:
        register_and_add_week(lms)
        yield course, lms


@pytest.mark.sandbox
def test_serve_syncs_moodle_on_its_own_and_a_bad_token_harms_nothing_else(server: Any, tmp_path: Path) -> None:
    site = two_students()
    with serving_with_syncs(server, site, tmp_path) as (course, lms):
        assert policy_for(course.root, "week01").max_attempts == 5  # the week tables read as before
        app = lms.app
        first = wait_until(lambda: (s := status(app, 1)).finished and s)
        assert first.error is None and first.pulled == 0 and first.next_run is not None  # nobody handed in yet
        with server.handler.lock:
            site.hand_in(201, {"week01.ipynb": CORRECT})
        # no command: the next scheduled run pulls, grades and pushes
        pushed = wait_until(lambda: site.grades.get(201))
        assert pushed.grader == TEACHER and set(pushed.files) == {"feedback.html"}
        assert pushed.grade == -1 and pushed.comment is not None  # week01's hand-marked tasks: no grade yet
        assert "is marked by hand and not marked yet" in pushed.comment[0]
        synced = wait_until(lambda: (s := status(app, 1)).pushed and s)
        assert (synced.pulled, synced.graded, synced.pushed, synced.skipped) == (1, 1, 1, 0)

        # the instructor marks the hand-graded tasks in the sync's gradebook: the grade follows
        out = course.root / "results" / "week01-moodle-7"
        with Gradebook.open(out / FILENAME) as book:
            book.set_manual("week01", "moodle-user-201", 3, points=20)
            book.set_manual("week01", "moodle-user-201", 4, points=20)
            score = next(r for r in book.results("week01") if r.key == "moodle-user-201").score
        graded = wait_until(lambda: (g := site.grades.get(201)) and g.grade >= 0 and g)
        assert graded.grade == pytest.approx(score * site.max_grade / 100)

        # the entry with a wrong token says so on the instructor's page, and uploads go on
        bad = wait_until(lambda: (s := status(app, 2)).error and s)
        assert "does not know this token" in str(bad.error) and str(course.root / "wrong-token") in str(bad.error)
        browser, page = lms.launch("s1")
        uploaded = browser.submit(page, "upload", files={"notebook": ("week01.ipynb", CORRECT,
                                                                      "application/x-ipynb+json")})
        url = str(uploaded.url)
        assert "/attempt/" in url, uploaded.text
        assert wait_until(lambda: browser.client.get(f"{url}/state").json()["state"] in ("graded", "failed")
                          and browser.client.get(f"{url}/state").json()["state"]) == "graded"
        _, report = lms.launch("t1", role="instructor")
        assert 'id="syncs"' in report.text and 'id="sync-1"' in report.text
        row = report.text.split('id="sync-2"')[1].split("</tr>")[0]
        assert "does not know this token" in row and "Manage tokens" in row
        assert "assignment 7" not in row and "8 on " + server.url in row

        # a run under way when the service stops is ended with it (this hand-in takes 25 s to run)
        with server.handler.lock:
            mark = len(site.calls)
            site.hand_in(202, {"week01.ipynb": slow_notebook()})
        wait_until(lambda: "mod_assign_get_submissions" in site.calls[mark:] and status(app, 1).state == "running")
        time.sleep(2)  # downloaded, grading
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 30
    assert not [t for t in threading.enumerate() if t.name.startswith("autograder-sync")]
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("autograder-sync")]
    assert [s.state for s in app.state.syncs.statuses()] == ["stopped", "stopped"]
    assert "stopped with the service" in str(status(app, 1).error) and 202 not in site.grades
    calls = len(site.calls)
    time.sleep(11)  # longer than the interval: nobody asks Moodle any more
    assert len(site.calls) == calls


def grader_processes() -> set[int]:
    """The grader processes under this one, a sync's own included: the Python processes
    multiprocessing spawned below this process, but for the syncs' runs themselves."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        parents[int(stat.parent.name)] = int(text[text.rindex(")") + 2:].split()[1])
    below, found = {os.getpid()}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in below and pid not in below:
                below.add(pid)
                found = True
    spawned = set()
    for pid in below - {os.getpid()}:
        try:
            if b"spawn_main" in (Path("/proc") / str(pid) / "cmdline").read_bytes():
                spawned.add(pid)
        except OSError:
            continue
    return spawned - {p.pid for p in multiprocessing.active_children() if p.name.startswith("autograder-sync")}


@pytest.mark.sandbox
def test_a_sync_in_serve_grades_in_the_services_own_graders(server: Any, tmp_path: Path) -> None:
    """``serve --jobs 1`` never runs more than one grader, a sync's grading included: the
    grader warm from a student's upload grades the hand-ins the sync pulls from Moodle."""
    site = two_students()
    with serving_with_syncs(server, site, tmp_path) as (_, lms):
        app = lms.app
        wait_until(lambda: status(app, 1).finished)  # nobody handed in yet
        browser, page = lms.launch("s1")
        uploaded = browser.submit(page, "upload", files={"notebook": ("week01.ipynb", CORRECT,
                                                                      "application/x-ipynb+json")})
        url = str(uploaded.url)
        assert wait_until(lambda: browser.client.get(f"{url}/state").json()["state"] in ("graded", "failed")
                          and browser.client.get(f"{url}/state").json()["state"]) == "graded"
        warm = grader_processes()
        assert len(warm) == 1  # the upload's grader, kept warm

        seen: list[set[int]] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.05):
                seen.append(grader_processes())

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            with server.handler.lock:
                site.hand_in(201, {"week01.ipynb": CORRECT})
                site.hand_in(202, {"week01.ipynb": CORRECT})
            wait_until(lambda: 201 in site.grades and 202 in site.grades)
        finally:
            sampling.set()
            sampler.join()
        synced = wait_until(lambda: (s := status(app, 1)).graded and s)
        assert (synced.pulled, synced.graded, synced.pushed) == (2, 2, 2)
        assert len(seen) > 20 and max(len(pids) for pids in seen) == 1
        assert set().union(*seen) == warm  # the very grader the upload warmed


SYNC_HEADERS = ["Assignment", "Last run", "Pulled", "Graded", "Pushed", "Skipped (changed by hand in Moodle)",
                "Next run", "Last error"]


@pytest.mark.sandbox
def test_the_sync_table_meets_wcag_aa_in_chromium(server: Any, tmp_path: Path, chromium: Any) -> None:
    """After a run that graded and pushed one student and left another's hand-set grade alone,
    and a run of the wrong-token entry: on the instructor's week page, in the LMS's iframe, no
    axe violation; the table is a table whose cells have column and row headers; each row says
    in words whether its last run failed; the error is whole, inside its cell, on screen."""
    pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
    site = two_students()
    site.hand_in(201, {"week01.ipynb": CORRECT})
    site.hand_in(202, {"week01.ipynb": CORRECT})
    site.grade_by_hand(202, 7.0)  # a teacher graded Alan in Moodle: the sync leaves it
    with serving_with_syncs(server, site, tmp_path, interval_s=3600) as (_, lms):  # one run each: the table holds
        synced = wait_until(lambda: (s := status(lms.app, 1)).finished and s)
        assert (synced.pulled, synced.graded, synced.pushed, synced.skipped) == (2, 2, 1, 1)
        assert list(synced.kept) == ["Alan Turing"]
        wait_until(lambda: status(lms.app, 2).error)

        context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
        page = lms.open_activity(context, "t-sync", "instructor")
        tool = lms.tool_frame(page)
        tool.locator("#syncs").wait_for()
        tool.locator("#live-updates").uncheck()  # the table stays as it is while it is read
        tool.locator("#syncs details").first.click()  # who was left alone, shown
        assert_accessible(page, "the instructor's page with the sync table", frames=lms.tool_url)
        ARTEFACTS.mkdir(exist_ok=True)
        tool.locator("#syncs").screenshot(path=str(ARTEFACTS / "a11y-service-syncs.png"))

        table = tool.get_by_role("table").filter(has=tool.locator("#sync-1"))
        assert table.get_by_role("columnheader").all_inner_texts() == SYNC_HEADERS
        rows = [tool.locator(f"#sync-{n}") for n in (1, 2)]
        assert [row.get_by_role("rowheader").inner_text().split("\n")[0] for row in rows] == [
            f"7 on {server.url}", f"8 on {server.url}"]
        cells = [row.get_by_role("cell").all_inner_texts() for row in rows]  # the cells after the row header
        assert cells[0][1:5] == ["2", "2", "1", "1"]
        assert "Alan Turing" in tool.locator("#syncs details").first.inner_text()

        # words, not the red box alone, say which run failed and why
        error = [row.get_by_role("cell").last for row in rows]
        assert error[0].inner_text() == "none"
        said = error[1].inner_text()
        assert said.startswith("Moodle") and "does not know this token" in said, said
        assert str(lms.app.state.syncs.statuses()[1].error) in said.replace("\n", " ")
        # readable: inside its cell and the page's width, not cut off
        assert error[1].evaluate("e => e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight")
        assert tool.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        assert error[1].is_visible()
        context.close()


BAD = [
    ('[sync]\nweek = "week01"\n', "must be written [[sync]] (two brackets)"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken = "abc"\n',
     "entry 1 (week \"week01\", assignment 7): token: never put the token in service.toml"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\n', "token_file: missing: write the path of a file holding the token"),
    ('[[sync]]\nweek = "week09"\nurl = "{url}"\nassignment = 7\ntoken_file = "open-token"\n', "week: "),
    ('[[sync]]\nweek = "week01"\nurl = "http://moodle.example.edu"\nassignment = 7\ntoken_file = "token"\n',
     "url: http://moodle.example.edu is plain http"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = "seven"\ntoken_file = "token"\n',
     "assignment = \"seven\" is not allowed here: write the assignment's id, a whole number such as 31"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken_file = "token"\ninterval_s = 1\n',
     "interval_s = 1 is not allowed here: write a number of seconds of at least 10"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken_file = "open-token"\n',
     "token_file: {root}/open-token can be read by other users (mode 644): run `chmod 600 {root}/open-token`"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken_file = "token"\nallow_pending = "yes"\n',
     "allow_pending = \"yes\" is not allowed here: write true or false"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken_file = "token"\nevery = 5\n',
     "every: unknown key; the keys here are allow_pending, assignment, interval_s, out, token_file, url, week"),
    ('[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken_file = "token"\n' * 2,
     "entries 1 and 2 both sync assignment 7"),
]


@pytest.mark.parametrize(("toml", "says"), BAD)
def test_a_bad_sync_entry_is_refused_naming_it_and_the_fix(tmp_path: Path, toml: str, says: str) -> None:
    course = a_course(tmp_path, toml.format(url="https://moodle.example.edu"))
    token_file(course.root / "token", "t" * 32)
    token_file(course.root / "open-token", "t" * 32, 0o644)
    with pytest.raises(PolicyError) as caught:
        load_syncs(course)
    assert str(caught.value).startswith(f"{course.root / 'service.toml'}: ")
    assert says.format(root=course.root) in str(caught.value)


def test_no_sync_into_the_services_own_data_folder(tmp_path: Path) -> None:
    toml = ('[[sync]]\nweek = "week01"\nurl = "https://m.example.edu"\nassignment = 7\ntoken_file = "token"\n'
            'out = "service-data"\n')
    course = a_course(tmp_path, toml)
    token_file(course.root / "token", "t" * 32)
    with pytest.raises(PolicyError, match=r"entry 1 \(week \"week01\", assignment 7\): out is the service's data folder"):
        load_syncs(course, service_data=course.root / "service-data")


@pytest.mark.slow
def test_serve_does_not_start_with_a_bad_sync_entry(tmp_path: Path) -> None:
    toml = '[[sync]]\nweek = "week01"\nurl = "https://m.example.edu"\nassignment = 7\ntoken_file = "token"\n'
    course = a_course(tmp_path / "course", toml)
    token_file(course.root / "token", "t" * 32, 0o640)
    served = subprocess.run([sys.executable, "-m", "autograder", "serve", "--course", str(course.root),
                             "--public-url", "https://grader.example.edu", "--data", str(tmp_path / "data")],
                            capture_output=True, text=True, timeout=120)
    assert served.returncode != 0
    assert "[[sync]] entry 1 (week \"week01\", assignment 7): token_file:" in served.stderr
    assert "chmod 600" in served.stderr and not (tmp_path / "data").exists()  # refused before anything started


def test_no_sync_entries_no_threads(tmp_path: Path) -> None:
    course = a_course(tmp_path, "[week01]\nmax_attempts = 2\n")
    assert load_syncs(course) == []
    database = open_database(tmp_path / "service.sqlite")
    try:
        with MoodleSyncs([], course, database) as syncs:
            assert syncs.statuses() == []
            assert not [t for t in threading.enumerate() if t.name.startswith("autograder-sync")]
    finally:
        database.close()


# --- replicas on one database (issue 27): each run taken by one of them -----------------------------

TTL_S = 3.0  # the tests' lease lifetime, renewed every 1 s: a renewal may lag 2 s (a loaded CI machine, an fsync) and hold


def one_entry(url: str) -> str:
    return f'[[sync]]\nweek = "week01"\nurl = "{url}"\nassignment = 7\ntoken_file = "moodle-token"\ninterval_s = 3600\n'


def runs(site: Site) -> int:
    """The runs the stand-in Moodle saw: each run starts by reading the assignment."""
    return site.calls.count("mod_assign_get_assignments")


@contextmanager
def replica(course: Course, location: Path | str, interval_s: float | None = None) -> Iterator[MoodleSyncs]:
    """The syncs of one replica of the service on the database at ``location`` (``interval_s``:
    the entries' interval, shorter than service.toml allows, so a test waits less)."""
    entries = load_syncs(course)
    if interval_s is not None:
        entries = [replace(entry, interval_s=interval_s) for entry in entries]
    database = open_database(location)
    try:
        with MoodleSyncs(entries, course, database, claim_ttl_s=TTL_S) as syncs:
            yield syncs
    finally:
        database.close()


@pytest.mark.slow
def test_replicas_on_one_database_run_a_due_sync_once_and_show_one_status(
        server: Any, tmp_path: Path, database_url: str | None) -> None:
    """Two replicas starting together with the same schedule run the sync due at their start
    once, not once each; a third starting after that run waits for the next run the database
    recorded instead of running on its own clock; all three show the same status."""
    site = server.use(two_students())
    course = a_course(tmp_path / "course", one_entry(server.url))
    token_file(course.root / "moodle-token", server.token)
    location = database_url or tmp_path / "service.sqlite"
    with replica(course, location) as first, replica(course, location) as second:
        done = wait_until(lambda: (s := first.statuses()[0]).finished and s)
        assert done.state == "waiting" and done.error is None and done.pulled == 0
        assert done.started is not None and done.next_run == done.started + timedelta(seconds=3600)
        assert second.statuses() == [done]
        with replica(course, location) as third:
            time.sleep(3)  # its first look, at once, finds the next run an hour away
            assert third.statuses() == second.statuses() == [done]
    assert runs(site) == 1


def _replica_holds_the_lease(location: Path | str, site_url: str, interval_s: float, taken: Event) -> None:
    """A replica that took the sync's run, as ``MoodleSyncs`` takes it, and runs it until killed."""
    leases = SyncLeases(open_database(location), ttl_s=TTL_S)
    now = datetime.now(UTC)
    assert leases.take(leases.register(site_url, 7), now=now, next_run=now + timedelta(seconds=interval_s))
    taken.set()
    threading.Event().wait()


@pytest.mark.slow
def test_a_run_whose_replica_died_is_taken_over_once_its_lease_expires(
        server: Any, tmp_path: Path, database_url: str | None) -> None:
    """While the replica running the sync lives (its lease renewed), another does not run it
    and shows it running; once that replica is killed and its lease has expired, the other
    says the run never finished and runs the entry at its next turn, once."""
    site = server.use(two_students())
    course = a_course(tmp_path / "course", one_entry(server.url))
    token_file(course.root / "moodle-token", server.token)
    location = database_url or tmp_path / "service.sqlite"
    interval_s = 4 * TTL_S + 1  # the next turn comes after the killed replica's lease expired (2 TTL_S in, + TTL_S)
    fork = multiprocessing.get_context("fork")
    taken = fork.Event()
    started = time.monotonic()
    dying = fork.Process(target=_replica_holds_the_lease, args=(location, server.url, interval_s, taken))
    dying.start()
    try:
        assert taken.wait(60)
        with replica(course, location, interval_s) as other:
            time.sleep(2 * TTL_S)  # the lease is older than its lifetime, but renewed
            assert runs(site) == 0 and other.statuses()[0].state == "running"
            assert not [p for p in multiprocessing.active_children() if p.name.startswith("autograder-sync")]
            os.kill(dying.pid, signal.SIGKILL)  # as a crash would: nothing is released
            dying.join()
            orphaned = wait_until(lambda: (s := other.statuses()[0]).state == "waiting" and s, timeout=30)
            assert "never finished" in str(orphaned.error) and orphaned.finished is None
            done = wait_until(lambda: (s := other.statuses()[0]).finished and s, timeout=60)
            assert time.monotonic() - started >= interval_s  # at its next turn, not at once
            assert done.error is None and done.pulled == 0 and runs(site) == 1
    finally:
        if dying.is_alive():
            os.kill(dying.pid, signal.SIGKILL)
            dying.join()
