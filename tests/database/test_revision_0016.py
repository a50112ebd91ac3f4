"""Revision 0016: ``attempts.regrade_requested_at``, which attempts a week's latest regrade
took (its progress). The service data folder of 0006 (``tests/fixtures/data_folder_0006``)
opened by this autograder: its attempts were in no regrade; one asked for now stamps the
graded ones; down to 0015 the column goes and the attempts read as they did; opened again
the column is back, empty. On SQLite and on PostgreSQL (``database_url``, the fixture's rows
loaded at 0006 first)."""

from __future__ import annotations

import shutil
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect

from autograder.database.migrate import MIGRATIONS
from autograder.service.store import Store
from tests.database.test_data_folder_0006 import FIXTURE, _fixture_rows


def test_the_fixtures_attempts_join_a_regrade_and_read_the_same_down_to_0015(
        tmp_path: Path, database_url: str | None) -> None:
    shutil.copytree(FIXTURE, tmp_path / "fixture")
    data = tmp_path / "fixture" / "service-data"
    rows = _fixture_rows(data / "gradebook.sqlite", database_url)["attempts"]
    graded = [row for row in rows if row["state"] == "graded"]
    context, week = graded[0]["context"], graded[0]["week"]
    with Store(data, database=database_url) as store:
        assert all(store.attempt(row["id"]).regrade_requested_at is None for row in rows)  # type: ignore[union-attr]
        status = store.regrade_status(context=context, week=week)
        assert status.total == 0 and status.regradable == sum(row["context"] == context for row in graded)
        assert store.regrade(context=context, week=week) == status.regradable
        assert store.regrade_status(context=context, week=week).total == status.regradable
        for row in graded:  # each keeps its last score while it waits
            if row["context"] == context:
                attempt = store.attempt(row["id"])
                assert attempt is not None and attempt.regrading and attempt.score == row["score"]

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with store.database.write() as db:
            config.attributes["connection"] = db
            command.downgrade(config, "0015")
            assert "regrade_requested_at" not in {c["name"] for c in inspect(db).get_columns("attempts")}
    with Store(data, database=database_url) as store:  # up to the head again
        assert store.regrade_status(context=context, week=week).total == 0
        again = {row["id"]: store.attempt(row["id"]) for row in rows}
        assert all(a is not None and a.regrade_requested_at is None and a.score == row["score"]
                   for row in rows if (a := again[row["id"]]) is not None)
