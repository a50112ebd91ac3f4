"""The course's TOML settings files load through one typed layer (``autograder.settings_files``):
a mistake in any of them names the file, the key as TOML writes it and what to write."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from autograder.audit.audit_toml import read_audit_toml
from autograder.course import Course
from autograder.course_languages import Languages, read_languages, read_week_languages
from autograder.exceptions import CourseError
from autograder.i18n.languages import framework_translations
from autograder.i18n.runtime import speaking
from autograder.service.moodle_sync import load_syncs
from autograder.service.policy import load_policies

ROOT = Path(__file__).resolve().parent.parent
COURSE = Languages(source="en", offered=("en", "ja", "pt", "es"), instructor="en")
SYNC = '[[sync]]\nweek = "week01"\nurl = "https://moodle.example.edu"\nassignment = 7\ntoken_file = "token"\n'


def a_course(root: Path) -> Course:
    """A course holding week01's notebook and a token file only its owner reads."""
    (root / "source" / "week01").mkdir(parents=True)
    shutil.copy(ROOT / "source" / "week01" / "week01.ipynb", root / "source" / "week01")
    (root / "token").write_text("t" * 32 + "\n", encoding="utf-8")
    os.chmod(root / "token", 0o600)
    return Course.locate(root)


KINDS: list[tuple[str, str, Callable[[Path], object], str]] = [
    ("course.toml", '[languages]\nofered = ["en", "ja"]\n', read_languages,
     "[languages] ofered: unknown key; the keys here are instructor, offered, source: remove it or fix its name"),
    ("week.toml", '[languages]\noffered = ["en", "Japanese"]\n', lambda root: read_week_languages(root, COURSE),
     '[languages] offered (item 2) = "Japanese" is not allowed here: write a list of language codes such as '
     '["en", "ja"], each once'),
    ("service.toml", "[week01]\nmax_attempts = 2.5\n", load_policies,
     "[week01] max_attempts = 2.5 is not allowed here: write a whole number of at least 1 (leave it out for no "
     "limit)"),
    ("service.toml", SYNC + 'interval_s = "60"\n', lambda root: load_syncs(a_course(root)),
     '[[sync]] entry 1 (week "week01", assignment 7): interval_s = "60" is not allowed here: write a number of '
     "seconds of at least 10"),
    ("audit.toml", '[[builds_on]]\ntask = 2\nuses = 1.0\nreason = "task 2 builds on task 1"\n',
     lambda root: read_audit_toml(root / "audit.toml", [1, 2]),
     "[[builds_on]] entry 1: uses = 1.0 is not allowed here: write the number of the task whose code those tests "
     "use"),
]


@pytest.mark.parametrize(("name", "text", "read", "says"), KINDS, ids=[
    "course.toml", "week.toml", "service.toml-policy", "service.toml-sync", "audit.toml"])
def test_a_mistake_names_the_file_the_key_and_the_fix(tmp_path: Path, name: str, text: str,
                                                      read: Callable[[Path], object], says: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(CourseError) as refused:  # PolicyError, service.toml's, is a CourseError
        read(tmp_path)
    assert str(refused.value) == f"{tmp_path / name}: {says}"


def test_the_messages_are_translated_like_the_autograders_others(tmp_path: Path) -> None:
    (tmp_path / "course.toml").write_text('[languages]\nofered = ["en", "ja"]\n', encoding="utf-8")
    with speaking(framework_translations("ja")), pytest.raises(CourseError) as refused:
        read_languages(tmp_path)
    assert str(refused.value) == (f"{tmp_path / 'course.toml'}: [languages] ofered: 不明なキーです。ここで使えるキーは "
                                  "instructor, offered, source です。削除するか名前を直してください")
