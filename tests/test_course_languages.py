"""A course's languages (autograder/course_languages.py): ``[languages]`` of course.toml read,
a language picked for a student, and an offered list without the source or with a name
instead of a code refused, saying what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course_languages import Languages, read_languages
from autograder.exceptions import CourseError


def test_course_languages_are_read_and_checked(tmp_path: Path):
    assert read_languages(tmp_path) == Languages()
    (tmp_path / "course.toml").write_text('[languages]\nsource = "en"\noffered = ["en", "ja"]\ninstructor = "ja"\n')
    languages = read_languages(tmp_path)
    assert languages.offered == ("en", "ja") and languages.instructor == "ja"
    assert languages.pick("ja") == "ja" and languages.pick("fr") == "en" and languages.pick(["ja"]) == "en"
    (tmp_path / "course.toml").write_text('[languages]\noffered = ["ja"]\n')
    with pytest.raises(CourseError, match=r'\[languages\] offered: \["ja"\] must list each language once, the source \("en"\)'):
        read_languages(tmp_path)
    (tmp_path / "course.toml").write_text('[languages]\noffered = ["en", "Japanese"]\n')
    with pytest.raises(CourseError, match="language codes"):
        read_languages(tmp_path)
