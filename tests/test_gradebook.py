"""The gradebook: reuse of unchanged results, regrading, manual marks, and surviving
killed and concurrent writers (real subprocesses on a real file), on SQLite and on a real
PostgreSQL server (the ``database_url`` fixture); adopting files older versions wrote."""

from __future__ import annotations

import multiprocessing
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from autograder.database import open_database
from autograder.database.migrate import LAST_USER_VERSION, SQLITE_USER_VERSION, head
from autograder.database.tables import results
from autograder.exceptions import GradebookError
from autograder.formats import result_json
from autograder.gradebook import Gradebook
from autograder.results import Participant, Status, SubmissionResult

WEEK = "week01"
TESTS_SHA = "t" * 64
VERSION = "0.1.0"

# Child processes build results the same way; kept as source so a subprocess can run it.
MAKE_RESULT = textwrap.dedent(
    """
    from autograder.results import Status, SubmissionResult, TaskResult, TestResult

    def make_result(key, score=7.0, sha=None, tests_sha="t" * 64, version="0.1.0"):
        return SubmissionResult(
            submission=f"export.zip!{key}/week01.ipynb",
            key=key,
            status=Status.GRADED,
            week="week01",
            tasks=[
                TaskResult(task=1, score=score, max_score=10.0, title="Perceptron"),
                TaskResult(task=2, score=0.0, max_score=5.0, manual=True, title="Discussion"),
            ],
            tests=[TestResult(name="test_fit", task=1, score=score, max_score=10.0, output="fit converges")],
            submission_sha256=sha or ("s" + key).ljust(64, "0")[:64],
            tests_sha256=tests_sha,
            grader_version=version,
            duration_s=0.5,
        )
    """
)
namespace: dict = {}
exec(MAKE_RESULT, namespace)  # noqa: S102 - the same source the child processes run
make_result = namespace["make_result"]


def run_child(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", MAKE_RESULT + textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def check_integrity(path: Path, database_url: str | None = None) -> None:
    if database_url is not None:  # PostgreSQL keeps its own files whole
        return
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.fixture
def book(tmp_path: Path, database_url: str | None):
    with Gradebook.open(database_url or tmp_path / "results" / WEEK / "gradebook.sqlite") as opened:
        yield opened


def test_result_round_trips_through_the_gradebook(book: Gradebook) -> None:
    result = make_result("Jane Doe_101")
    result.participant = Participant(participant_id="101", full_name="Jane Doe ジェーン")
    result.messages = ["cell 3 raised ValueError"]
    book.record(result)
    (stored,) = book.results(WEEK)
    assert result_json.to_dict(stored) == result_json.to_dict(result)


def test_file_is_wal_and_versioned(tmp_path: Path) -> None:
    Gradebook.open(tmp_path / "gradebook.sqlite").close()
    with sqlite3.connect(tmp_path / "gradebook.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # past the last hand-rolled version, so an older autograder refuses the file
        assert db.execute("PRAGMA user_version").fetchone()[0] == SQLITE_USER_VERSION > LAST_USER_VERSION
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(head(),)]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {LAST_USER_VERSION + 1}")  # a newer version's, without Alembic
    with pytest.raises(GradebookError, match="newer"):
        Gradebook.open(path)


def test_a_migration_this_version_does_not_know_is_refused(tmp_path: Path, database_url: str | None) -> None:
    location = database_url or tmp_path / "gradebook.sqlite"
    with Gradebook.open(location) as book, book.database.write() as db:
        db.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    with pytest.raises(GradebookError, match="9999_from_the_future is newer"):
        Gradebook.open(location)


OPENERS = 6


def _open_at_once(location: str, start: Any, said: Any) -> None:
    """One replica's first start: open the database the moment every other one does."""
    start.wait(60)
    try:
        open_database(location).close()
        said.put("opened")
    except Exception as exc:  # noqa: BLE001 - what the test reports
        said.put(f"{type(exc).__name__}: {exc}")


def test_replicas_opening_a_new_database_at_once_migrate_it_once(tmp_path: Path, database_url: str | None) -> None:
    """Six processes open one empty database at the same moment, as replicas starting
    together do: each comes up (none fails on a table another just made, or on Alembic's
    version row), and the database is at the newest revision once. On PostgreSQL that is the
    advisory lock ``migrate.py`` takes; on SQLite, the write transaction's lock on the file."""
    location = database_url or str(tmp_path / "service.sqlite")
    fork = multiprocessing.get_context("fork")
    start, said = fork.Barrier(OPENERS), fork.Queue()
    openers = [fork.Process(target=_open_at_once, args=(location, start, said)) for _ in range(OPENERS)]
    for opener in openers:
        opener.start()
    outcomes = [said.get(timeout=120) for _ in openers]
    for opener in openers:
        opener.join(30)
    assert outcomes == ["opened"] * OPENERS, outcomes
    database = open_database(location)
    try:
        with database.read() as db:
            assert db.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all() == [head()]
    finally:
        database.close()


def test_a_file_that_is_not_a_gradebook_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(GradebookError, match="cannot open"):
        Gradebook.open(path)


@pytest.mark.parametrize(("location", "says"), [
    ("sqlite://", "must be a file"),
    ("mysql+nosuchdriver://u@host/db", "no driver for this database"),
    ("postgresql+psycopg://nobody@/db?host=/nonexistent", "cannot open the gradebook"),
])
def test_a_database_that_cannot_be_used_is_refused_saying_why(location: str, says: str) -> None:
    with pytest.raises(GradebookError, match=says):
        Gradebook.open(location)


def test_a_folder_name_that_looks_like_a_url_query_is_still_a_folder(tmp_path: Path) -> None:
    path = tmp_path / "week01?copy #2" / "gradebook.sqlite"
    with Gradebook.open(path) as book:
        book.record(make_result("a"))
    assert path.is_file()


def test_unchanged_submission_is_reused_and_any_change_regrades(book: Gradebook) -> None:
    result = make_result("a")
    book.record(result)
    same = dict(submission_sha256=result.submission_sha256, tests_sha256=TESTS_SHA, grader_version=VERSION)
    cached = book.lookup(WEEK, "a", **same)
    assert cached is not None and result_json.to_dict(cached) == result_json.to_dict(result)
    for change in (
        {"submission_sha256": "x" * 64},
        {"tests_sha256": "u" * 64},
        {"grader_version": "0.2.0"},
    ):
        assert book.lookup(WEEK, "a", **{**same, **change}) is None, change
    assert book.lookup("week02", "a", **same) is None
    assert book.lookup(WEEK, "b", **same) is None


def test_submission_without_content_is_never_reused(book: Gradebook) -> None:
    empty = SubmissionResult(submission="x", key="nobody", status=Status.NOT_SUBMITTED, week=WEEK)
    book.record(empty)
    assert book.lookup(WEEK, "nobody", submission_sha256=None, tests_sha256=None, grader_version="") is None


def test_regrade_replaces_the_result_without_duplicating_it(book: Gradebook) -> None:
    book.record(make_result("a", score=3.0))
    book.record(make_result("a", score=9.0, tests_sha="u" * 64))
    (stored,) = book.results(WEEK)
    assert stored.score == 9.0 and stored.tests_sha256 == "u" * 64


def test_result_without_week_is_refused(book: Gradebook) -> None:
    with pytest.raises(GradebookError, match="week"):
        book.record(SubmissionResult(submission="x", key="k", status=Status.ERROR))


def test_manual_marks_apply_to_totals_and_survive_regrading(book: Gradebook) -> None:
    book.record(make_result("a", score=7.0))
    book.record(make_result("b", score=4.0))
    book.set_manual(WEEK, "a", 2, points=4.5, comment="Good <b>argument</b>")

    marks = book.manual_marks(WEEK)
    assert set(marks) == {"a"} and marks["a"][2].points == 4.5
    by_key = {r.key: r for r in book.results(WEEK)}
    assert by_key["a"].score == 11.5 and by_key["a"].task(2).comment == "Good <b>argument</b>"
    assert by_key["b"].score == 4.0

    book.record(make_result("a", score=10.0, tests_sha="u" * 64))  # a regrade
    (regraded,) = [r for r in book.results(WEEK) if r.key == "a"]
    assert regraded.score == 14.5 and regraded.task(2).score == 4.5
    cached = book.lookup(WEEK, "a", submission_sha256=regraded.submission_sha256, tests_sha256="u" * 64, grader_version=VERSION)
    assert cached is not None and cached.score == 14.5

    book.set_manual(WEEK, "a", 2, points=2.0)  # a second marking replaces the first
    assert book.manual_marks(WEEK)["a"][2].points == 2.0


def test_a_mark_for_an_answer_that_changed_is_stale_until_given_again(book: Gradebook) -> None:
    first = make_result("a", score=7.0)
    first.task(2).answer_sha256 = "1" * 64
    book.record(first)
    assert book.results(WEEK)[0].task(2).pending  # not marked yet: pending, not a final 0
    book.set_manual(WEEK, "a", 2, points=4.5, comment="ok", answer_sha256="1" * 64)
    (marked,) = book.results(WEEK)
    assert marked.score == 11.5 and not marked.task(2).pending and not marked.task(2).stale

    upload = make_result("a", score=7.0, sha="n" * 64)  # a new upload: another answer
    upload.task(2).answer_sha256 = "2" * 64
    book.record(upload)
    (regraded,) = book.results(WEEK)
    assert regraded.task(2).stale and regraded.task(2).pending and regraded.score == 7.0
    assert regraded.task(2).comment == "ok" and book.manual_marks(WEEK)["a"][2].points == 4.5  # kept, not counted

    book.set_manual(WEEK, "a", 2, points=3.0, answer_sha256="2" * 64)  # confirmed for the new answer
    (confirmed,) = book.results(WEEK)
    assert confirmed.score == 10.0 and not confirmed.task(2).stale


def test_a_mark_carries_to_a_later_hand_in_with_the_same_answer_when_it_is_recorded(book: Gradebook) -> None:
    """``record(carry_from=...)``: the latest earlier mark given to the very same answer,
    a rubric mark as its items; never over the hand-in's own mark, never to another answer."""
    def hand_in(key: str, answer: str) -> SubmissionResult:
        result = make_result(key, sha=key.ljust(64, "0"))
        result.task(2).answer_sha256 = answer * 64
        return result

    book.record(hand_in("a1", "1"))
    book.record(hand_in("a2", "2"))
    book.set_manual(WEEK, "a1", 2, points=2.0, comment="first", answer_sha256="1" * 64)
    book.set_manual(WEEK, "a2", 2, points=3.0, comment="second", answer_sha256="2" * 64)
    book.record(hand_in("a3", "1"), carry_from=["a1", "a2"])  # back to the first answer
    book.record(hand_in("a4", "9"), carry_from=["a1", "a2", "a3"])  # a new answer waits for the marker
    marks = book.manual_marks(WEEK)
    assert (marks["a3"][2].points, marks["a3"][2].comment, marks["a3"][2].answer_sha256) == (2.0, "first", "1" * 64)
    assert "a4" not in marks
    assert book.result(WEEK, "a3").score == 9.0 and book.result(WEEK, "a4").task(2).pending  # type: ignore[union-attr]

    book.add_rubric_item(WEEK, 2, points=4, comment="Names the margin")
    book.set_rubric_mark(WEEK, "a2", 2, items=[1], note="Good.", answer_sha256="2" * 64)
    book.record(hand_in("a5", "2"), carry_from=["a1", "a2", "a3", "a4"])
    assert book.manual_marks(WEEK)["a5"][2].items == (1,)  # still made of its items ...
    assert book.edit_rubric_item(WEEK, 2, 1, points=5, comment="Names the margin") == ["a2", "a5"]
    assert book.result(WEEK, "a5").task(2).score == 5.0  # type: ignore[union-attr]  # ... so an edit reaches it

    book.set_manual(WEEK, "a5", 2, points=0.5, comment="own", answer_sha256="2" * 64)
    book.record(hand_in("a5", "2"), carry_from=["a1", "a2"])  # regraded: its own mark stands
    assert book.manual_marks(WEEK)["a5"][2].comment == "own"


def test_a_version_1_gradebook_is_migrated_keeping_its_marks(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE manual_marks (week TEXT NOT NULL, key TEXT NOT NULL, task INTEGER NOT NULL, "
                   "points REAL NOT NULL, comment TEXT NOT NULL, marked TEXT NOT NULL, PRIMARY KEY (week, key, task))")
        db.execute("INSERT INTO manual_marks VALUES ('week01', 'a', 2, 4.0, 'old', '2026-01-01')")
        db.execute("PRAGMA user_version = 1")
    with Gradebook.open(path) as book:
        assert book.manual_marks(WEEK)["a"][2].points == 4.0 and book.manual_marks(WEEK)["a"][2].answer_sha256 is None


@pytest.mark.parametrize(
    ("key", "task", "points", "message"),
    [
        ("a", 1, 5.0, "autograded"),
        ("a", 2, 6.0, "outside"),
        ("a", 2, -1.0, "outside"),
        ("a", 9, 1.0, "no task 9"),
        ("ghost", 2, 1.0, "no result"),
    ],
)
def test_bad_manual_marks_are_refused(book: Gradebook, key: str, task: int, points: float, message: str) -> None:
    book.record(make_result("a"))
    with pytest.raises(GradebookError, match=message):
        book.set_manual(WEEK, key, task, points=points)
    assert book.manual_marks(WEEK) == {}


def test_runs_count_what_they_recorded(book: Gradebook) -> None:
    first = book.begin_run(WEEK, grader_version=VERSION)
    book.record(make_result("a"), run_id=first)
    book.record(SubmissionResult(submission="x", key="b", status=Status.ERROR, week=WEEK), run_id=first)
    finished = book.finish_run(first, reused=0)
    assert finished.finished is not None
    assert finished.counts == {"graded": 1, "error": 1, "reused": 0}
    killed = book.begin_run(WEEK, grader_version=VERSION)
    assert [(r.id, r.finished is None) for r in book.runs()] == [(first, False), (killed, True)]


@pytest.mark.slow
def test_run_killed_mid_batch_resumes_without_loss_or_duplicates(tmp_path: Path, database_url: str | None) -> None:
    path = tmp_path / "gradebook.sqlite"
    location = database_url or str(path)
    keys = [f"student{i}" for i in range(6)]
    child = run_child(
        """
        import os, sys
        from autograder.gradebook import Gradebook
        book = Gradebook.open(sys.argv[1])
        run = book.begin_run("week01", grader_version="0.1.0")
        for i in range(3):
            book.record(make_result(f"student{i}"), run_id=run)
        os._exit(1)  # killed halfway: no finish_run, no close
        """,
        location,
    )
    assert child.wait(timeout=30) == 1, child.stderr.read()

    with Gradebook.open(location) as book:
        run = book.begin_run(WEEK, grader_version=VERSION)
        reused = 0
        for key in keys:
            fresh = make_result(key)
            if book.lookup(WEEK, key, submission_sha256=fresh.submission_sha256, tests_sha256=TESTS_SHA, grader_version=VERSION):
                reused += 1
                continue
            book.record(fresh, run_id=run)
        summary = book.finish_run(run, reused=reused)
        assert reused == 3 and summary.counts == {"graded": 3, "reused": 3}
        assert [r.key for r in book.results(WEEK)] == keys
        assert [r.finished is None for r in book.runs()] == [True, False]
    check_integrity(path, database_url)


@pytest.mark.slow
def test_sigkill_during_writes_loses_no_committed_result(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    child = run_child(
        """
        import sys
        from autograder.gradebook import Gradebook
        book = Gradebook.open(sys.argv[1])
        for i in range(100000):
            book.record(make_result(f"k{i:06d}"))
            print(i, flush=True)
        """,
        str(path),
    )
    assert child.stdout is not None
    for _ in range(30):
        last = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    committed = last + 1 + len(child.stdout.read().split())  # lines reported before the kill

    check_integrity(path)
    with Gradebook.open(path) as book:
        stored = book.results(WEEK)
    # every reported result is there; at most the one in flight beyond them
    assert committed <= len(stored) <= committed + 1
    assert [r.key for r in stored] == [f"k{i:06d}" for i in range(len(stored))]


@pytest.mark.slow
def test_two_processes_writing_at_once_do_not_corrupt(tmp_path: Path, database_url: str | None) -> None:
    path = tmp_path / "gradebook.sqlite"
    location = database_url or str(path)
    go = tmp_path / "go"
    script = """
        import sys, time
        from pathlib import Path
        from autograder.gradebook import Gradebook
        path, prefix, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
        with Gradebook.open(path) as book:
            while not go.exists():
                time.sleep(0.001)
            for i in range(60):
                book.record(make_result(f"{prefix}{i:03d}"))
                book.record(make_result(f"shared{i % 5}", score=float(i % 10)))
        """
    children = [run_child(script, location, prefix, str(go)) for prefix in ("a", "b")]
    go.touch()
    for child in children:
        assert child.wait(timeout=60) == 0, child.stderr.read()

    check_integrity(path, database_url)
    with Gradebook.open(location) as book:
        keys = [r.key for r in book.results(WEEK)]
        with book.database.read() as db:
            rows = db.execute(select(results.c.key, results.c.document)).all()
    assert len(keys) == len(set(keys)) == 60 + 60 + 5
    assert all(doc["key"] == key for key, doc in rows)
