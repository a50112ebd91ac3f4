"""Revision 0014: ``score_overrides``, an instructor's points for an autograded task. The
batch gradebook of the 0006 data folder (``tests/fixtures/data_folder_0006``) opened by this
autograder takes an override of one of its results; down to 0013 the table goes and the
results stay as they were; opened again, the table is back, empty. On SQLite and on
PostgreSQL (``database_url``, the fixture's rows loaded at 0006 first)."""

from __future__ import annotations

import shutil
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect

from autograder.database.migrate import MIGRATIONS
from autograder.gradebook import Gradebook
from tests.database.test_data_folder_0006 import FIXTURE, _fixture_rows


def test_the_fixtures_gradebook_takes_an_override_and_gives_the_table_back_down_to_0013(
        tmp_path: Path, database_url: str | None) -> None:
    shutil.copytree(FIXTURE, tmp_path / "fixture")
    path = tmp_path / "fixture" / "batch" / "gradebook.sqlite"
    _fixture_rows(path, database_url)
    with Gradebook.open(database_url or path) as book:
        [week] = book.weeks()
        before = book.results(week)
        result = next(r for r in before if any(not t.manual and t.score < t.max_score for t in r.tasks))
        task = next(t for t in result.tasks if not t.manual and t.score < t.max_score)
        book.set_override(week, result.key, task.task, points=task.max_score, reason="The test was wrong", by="Ada")
        overridden = book.result(week, result.key)
        assert overridden is not None and overridden.task(task.task).score == task.max_score
        assert overridden.score == result.score - task.score + task.max_score

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with book.database.write() as db:
            config.attributes["connection"] = db
            command.downgrade(config, "0013")
            assert "score_overrides" not in inspect(db).get_table_names()
    with Gradebook.open(database_url or path) as book:  # up to the head again
        assert book.overrides(week) == {} and book.results(week) == before
