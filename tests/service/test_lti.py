"""The LTI login states (``service.lti.LoginStates``) on SQLite and PostgreSQL: each state,
nonce and registration code is good once, also across two server processes' connections."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from autograder.database import clock
from autograder.service.lti import LOGIN_LIFETIME_S, LoginStates, Platform

ISSUER = "https://moodle.example"
PLATFORM = Platform(ISSUER, "client-1", "https://moodle.example/auth", "https://moodle.example/token",
                    "https://moodle.example/certs")


@pytest.fixture
def two(tmp_path: Path, database_url: str | None) -> Iterator[tuple[LoginStates, LoginStates]]:
    """Two openers of one database, as two server processes would be."""
    location = database_url or tmp_path / "lti.sqlite"
    first, second = LoginStates(location), LoginStates(location)
    yield first, second
    first.close()
    second.close()


def test_a_login_state_is_taken_once_by_whichever_process_gets_the_launch(two) -> None:
    first, second = two
    state, nonce = first.begin(ISSUER, "client-1")
    assert second.take(state) == (nonce, ISSUER, "client-1")
    assert first.take(state) is None and second.take(state) is None
    assert second.take("never-issued") is None


def test_a_login_older_than_its_lifetime_is_not_taken(two, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = two
    state, _ = first.begin(ISSUER, "client-1")
    later = clock.now() + timedelta(seconds=LOGIN_LIFETIME_S + 1)
    monkeypatch.setattr(clock, "now", lambda: later)
    assert first.take(state) is None


def test_a_nonce_is_accepted_once_and_a_replay_is_refused_by_the_other_process(two) -> None:
    first, second = two
    assert first.use_nonce(ISSUER, "n-1")
    assert not second.use_nonce(ISSUER, "n-1")
    assert second.use_nonce("https://other.example", "n-1")  # another platform's nonce space


def test_a_registration_code_is_spent_by_asking(two) -> None:
    first, second = two
    code = first.new_registration_code()
    assert second.use_registration_code(code)
    assert not first.use_registration_code(code)
    expired = first.new_registration_code(lifetime_s=-1)
    assert not second.use_registration_code(expired)


def test_a_line_items_owner_is_remembered_and_rebound(two) -> None:
    first, second = two
    first.bind_lineitem("https://moodle.example/lineitem/1", PLATFORM)
    assert second.lineitem_owner("https://moodle.example/lineitem/1") == (ISSUER, "client-1")
    second.bind_lineitem("https://moodle.example/lineitem/1", Platform(ISSUER, "client-2", "a", "b", "c"))
    assert first.lineitem_owner("https://moodle.example/lineitem/1") == (ISSUER, "client-2")
    assert first.lineitem_owner("https://moodle.example/lineitem/2") is None
