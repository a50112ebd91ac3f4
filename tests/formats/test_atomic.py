"""Every output appears whole or not at all (autograder/formats/atomic.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.formats.atomic import atomic_path, create_once, write_text
from autograder.formats.points import format_points


def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "grades.csv"
    target.write_text("old\n")
    with pytest.raises(OSError, match="disk full"), atomic_path(target) as partial:
        partial.write_text("half a sheet")
        raise OSError("disk full")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["grades.csv"]


def test_a_finished_write_replaces_the_file_and_keeps_line_endings(tmp_path: Path) -> None:
    target = tmp_path / "sheet.csv"
    write_text(target, "a,b\r\n1,2\r\n")
    assert target.read_bytes() == b"a,b\r\n1,2\r\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sheet.csv"]


def test_a_file_made_once_keeps_the_first_content_its_mode_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    assert create_once(target, lambda: b"first", mode=0o600) == b"first"
    assert create_once(target, lambda: b"second", mode=0o600) == b"first"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]


@pytest.mark.parametrize(("value", "decimal", "text"),
                         [(7.0, ".", "7"), (7.25, ".", "7.25"), (2 / 3, ".", "0.67"), (7.5, ",", "7,5"), (0.0, ".", "0")])
def test_points_are_written_as_a_person_writes_them(value: float, decimal: str, text: str) -> None:
    assert format_points(value, decimal) == text
