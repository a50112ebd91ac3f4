"""A data folder written by the autograder of revision 0006 (``tests/fixtures/data_folder_0006``,
made by its ``make.py`` with that commit's code) opened by this one: its moments and
documents converted to typed columns, and the platform registrations of its
``platforms.json`` imported into the database, the file renamed beside them rather than
deleted. On SQLite as the folder has it, and on PostgreSQL (``database_url``) with the
folder's rows loaded into a database at revision 0006 first."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import MetaData, insert, inspect, select

from autograder.database import Database, clock, open_database
from autograder.database.migrate import MIGRATIONS
from autograder.database.tables import (
    attempts,
    lti_nonce,
    lti_registration,
    lti_state,
    manual_marks,
    moodle_sync,
    posts,
    results,
    runs,
    service_scores,
    service_syncs,
)
from autograder.exceptions import AutograderError
from autograder.gradebook import Gradebook
from autograder.moodle_ws.sync_state import SyncState
from autograder.service.lti import LoginStates, Platform, Platforms
from autograder.service.settings import Settings
from autograder.service.store import Store
from autograder.service.tool import Tool

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "data_folder_0006"
MOODLE = Platform(issuer="https://moodle.example", client_id="client-1",
                  auth_login_url="https://moodle.example/mod/lti/auth.php",
                  token_url="https://moodle.example/mod/lti/token.php",
                  jwks_url="https://moodle.example/mod/lti/certs.php", deployment_ids=("3", "4"), name="moodle")
CANVAS = Platform(issuer="https://canvas.example", client_id="10000000000001",
                  auth_login_url="https://canvas.example/api/lti/authorize_redirect",
                  token_url="https://canvas.example/login/oauth2/token",
                  jwks_url="https://canvas.example/api/lti/security/jwks", deployment_ids=("1:abc",))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "fixture")
    return tmp_path / "fixture"


def _rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table of a SQLite file, as the fixture's code stored it."""
    with closing(sqlite3.connect(path)) as db:
        db.row_factory = sqlite3.Row
        names = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                                                "LIKE 'sqlite_%' AND name != 'alembic_version'")]
        return {name: [dict(row) for row in db.execute(f'SELECT * FROM "{name}" ORDER BY rowid')] for name in names}


def _at_0006(url: str, rows: dict[str, list[dict[str, Any]]]) -> None:
    """A PostgreSQL database at revision 0006 holding ``rows`` as that revision's code wrote them."""
    database = Database.connect(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with database.write() as db:
            config.attributes["connection"] = db
            command.upgrade(config, "0006")
            schema = MetaData()
            schema.reflect(db)
            for table in schema.sorted_tables:
                if rows.get(table.name):
                    db.execute(insert(table), rows[table.name])
    finally:
        database.close()


def _fixture_rows(path: Path, database_url: str | None) -> dict[str, list[dict[str, Any]]]:
    """The rows of the fixture's SQLite file ``path``; with a PostgreSQL ``database_url``, also
    loaded there at revision 0006, so the test's open migrates the same rows on either engine."""
    rows = _rows(path)
    if database_url is not None:
        _at_0006(database_url, rows)
    return rows


def test_the_attempts_the_outbox_and_the_syncs_moments_and_documents_become_typed(folder: Path, database_url: str | None) -> None:
    path = folder / "service-data" / "gradebook.sqlite"
    before = _fixture_rows(path, database_url)
    database = open_database(database_url or path)
    try:
        with database.read() as db:
            after = {table.name: [row._asdict() for row in db.execute(select(table))]
                     for table in (attempts, posts, service_scores, service_syncs)}
    finally:
        database.close()
    moments = {"attempts": ("submitted_at", "graded_at", "claimed_at"),
               "posts": ("next_try_at", "posted_at", "created_at", "sending_since"),
               "service_scores": ("last_timestamp",),
               "service_syncs": ("claimed_at", "started", "finished", "next_run", "succeeded")}
    documents = {"posts": "payload", "service_syncs": "report"}
    key = {"attempts": ("id",), "posts": ("id",), "service_scores": ("context", "user", "week"), "service_syncs": ("id",)}
    seen = 0
    for table, columns in moments.items():
        converted = {tuple(row[k] for k in key[table]): row for row in after[table]}
        assert len(converted) == len(before[table]) > 0, table
        for old in before[table]:
            new = converted[tuple(old[k] for k in key[table])]
            for column in columns:
                if old[column] is None:
                    assert new[column] is None, (table, column)
                    continue
                assert new[column] == datetime.fromisoformat(old[column]) and new[column].tzinfo == UTC, (table, column)
                seen += 1
            if table in documents:
                text = old[documents[table]]
                assert new[documents[table]] == (None if text is None else json.loads(text)), table
    assert seen >= 16  # attempts graded and queued; posts sent, failed and superseded; a finished sync; two scores
    if database_url is None:  # stored in the one text form, which sorts as the moments do
        stored = _rows(path)
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", row[c])
                   for table, columns in moments.items() for row in stored[table] for c in columns if row[c])


def test_the_logins_epoch_seconds_become_moments_and_still_count(
        folder: Path, database_url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    path = folder / "service-data" / "lti.sqlite"
    before = _fixture_rows(path, database_url)
    database = open_database(database_url or path)
    try:
        with database.read() as db:
            after = {table.name: [row._asdict() for row in db.execute(select(table))]
                     for table in (lti_state, lti_nonce, lti_registration)}
    finally:
        database.close()
    for table, column, key in (("lti_state", "created", "state"), ("lti_nonce", "used", "nonce"),
                               ("lti_registration", "expires", "digest")):
        [old], [new] = before[table], after[table]  # a login under way, a used nonce, a registration code
        assert new[key] == old[key] and new[column].tzinfo == UTC, table
        assert abs(new[column] - datetime.fromtimestamp(old[column], UTC)) <= timedelta(microseconds=1), table
    [login], [used] = before["lti_state"], before["lti_nonce"]
    monkeypatch.setattr(clock, "now", lambda: datetime.fromtimestamp(login["created"] + 60, UTC))
    states = LoginStates(database_url or path)
    try:
        assert states.take(login["state"]) == (login["nonce"], login["issuer"], login["client_id"])
        assert not states.use_nonce(used["issuer"], used["nonce"])  # used a minute ago: a replay
    finally:
        states.close()


@pytest.mark.parametrize("gradebook", ["batch/gradebook.sqlite", "service-data/gradebook.sqlite"])
def test_the_gradebooks_moments_run_counts_and_documents_become_typed(folder: Path, database_url: str | None,
                                                                     gradebook: str) -> None:
    """Moments written to the second (``2026-11-29T11:15:06+00:00``), unlike the service's
    stamps; result documents and a Moodle sync's file lists written as JSON text (0013)."""
    path = folder / gradebook
    before = _fixture_rows(path, database_url)
    book = Gradebook.open(database_url or path)
    try:
        with book.database.read() as db:
            after = {table.name: [row._asdict() for row in db.execute(select(table))]
                     for table in (runs, results, manual_marks, moodle_sync)}
        run_records = book.runs()
    finally:
        book.close()
    key = {"runs": ("id",), "results": ("week", "key"), "manual_marks": ("week", "key", "task")}
    moments = {"runs": ("started", "finished"), "results": ("recorded",), "manual_marks": ("marked",)}
    for table, columns in moments.items():
        converted = {tuple(row[k] for k in key[table]): row for row in after[table]}
        assert len(converted) == len(before[table]) and (before[table] or table == "runs"), table  # the service runs none
        for old in before[table]:
            new = converted[tuple(old[k] for k in key[table])]
            for column in columns:
                expected = None if old[column] is None else datetime.fromisoformat(old[column])
                assert new[column] == expected and (expected is None or new[column].tzinfo == UTC), (table, column)
    assert [run.counts for run in run_records] == [json.loads(row["counts"]) for row in before["runs"]]
    documents = {(row["week"], row["key"]): row["document"] for row in after["results"]}
    assert documents == {(row["week"], row["key"]): json.loads(row["document"]) for row in before["results"]}
    assert [row["files"] for row in after["moodle_sync"]] == [json.loads(row["files"]) for row in before["moodle_sync"]]
    if gradebook.startswith("service"):  # a sync's user: its files read as a list, another noted as one
        assert before["moodle_sync"]
        [ann] = before["moodle_sync"]
        with SyncState(database_url or path, site=ann["site"], assignment=ann["assignment"], week=ann["week"]) as state:
            assert state.users()[ann["userid"]].files == json.loads(ann["files"])
            state.listed(202, attemptnumber=0, modified=1700000200, files=["bea.ipynb", "data/notes.txt"])
            assert state.users()[202].files == ["bea.ipynb", "data/notes.txt"]


def test_the_attempts_scores_are_read_from_the_gradebook_as_their_dropped_columns_held_them(
        folder: Path, database_url: str | None) -> None:
    """Revision 0008 drops an attempt's own copy of its score and result files: the
    gradebook's result, marks applied, gives what the columns held."""
    data = folder / "service-data"
    before = _fixture_rows(data / "gradebook.sqlite", database_url)
    with Store(data, database=database_url) as store:
        columns = {column["name"] for column in inspect(store.database.engine).get_columns("attempts")}
        read = {row["id"]: store.attempt(row["id"]) for row in before["attempts"]}
    assert not columns & {"score", "max_score", "pending", "result_path", "feedback_path"}
    assert {row["state"] for row in before["attempts"]} == {"graded", "queued"}
    for row in before["attempts"]:
        attempt = read[row["id"]]
        assert attempt is not None and attempt.state == row["state"], row["id"]
        assert (attempt.score, attempt.max_score, attempt.pending) == (row["score"], row["max_score"],
                                                                       row["pending"]), row["id"]


def test_the_service_imports_the_folders_platform_registrations_and_keeps_the_file(
        folder: Path, database_url: str | None) -> None:
    data = folder / "service-data"
    original = (data / "platforms.json").read_bytes()
    settings = Settings(public_url="https://grader.example", data=data, database=database_url)
    with httpx.Client() as client:
        tool = Tool(settings, client)
        try:
            assert tool.platforms.all() == [MOODLE, CANVAS]  # merged by hand before: deployments 3 and 4
            assert tool.platforms.find("https://canvas.example") == CANVAS
        finally:
            tool.states.close()
        assert not (data / "platforms.json").exists()
        assert (data / "platforms.json.imported").read_bytes() == original
        (data / "platforms.json").write_bytes(original)  # restored by hand: imported again, nothing doubled
        tool = Tool(settings, client)
        try:
            assert tool.platforms.all() == [MOODLE, CANVAS]
        finally:
            tool.states.close()
    assert (data / "platforms.json.imported-2").read_bytes() == original


def test_a_registrations_file_that_cannot_be_read_is_refused_and_left_in_place(tmp_path: Path) -> None:
    broken = tmp_path / "platforms.json"
    broken.write_text(json.dumps([{"issuer": "https://moodle.example"}]))
    states = LoginStates(tmp_path / "lti.sqlite")
    try:
        with pytest.raises(AutograderError, match=r"platforms\.json cannot be read .*fix the JSON by hand"):
            Platforms(states.database).import_file(broken)
        assert broken.exists() and Platforms(states.database).all() == []
    finally:
        states.close()
