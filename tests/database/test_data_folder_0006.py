"""A data folder written by the autograder of revision 0006 (``tests/fixtures/data_folder_0006``,
made by its ``make.py`` with that commit's code) opened by this one: the platform
registrations of its ``platforms.json`` imported into the database (SQLite, and PostgreSQL
via ``database_url``), the file renamed beside them rather than deleted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from autograder.exceptions import AutograderError
from autograder.service.lti import LoginStates, Platform, Platforms
from autograder.service.settings import Settings
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
