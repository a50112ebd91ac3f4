"""The small course the catalog's and generation's tests share (tests/i18n/): week99 of
tests/fixtures/generate in a course offering en and a made-up, complete "ja"."""

from __future__ import annotations

import shutil
from pathlib import Path

from babel.messages.catalog import Catalog

from autograder.course import Course
from autograder.i18n.catalog import catalog_path, extract, update, write_catalog
from tests.helpers import GENERATE_SOURCE


def fake_translate(text: str) -> str:
    """A 'translation' that keeps placeholders and markdown, so the output is checkable."""
    return "[ja] " + text


def translate_catalog(path: Path, template: Catalog, language: str) -> None:
    catalog = update(template, path, language)
    for message in catalog:
        if message.id:
            message.string = fake_translate(str(message.id))
            message.flags.discard("fuzzy")
    write_catalog(catalog, path)


def translated_course(root: Path) -> Course:
    """week99 of tests/fixtures/generate under ``root``, in a course offering en and ja, fully
    translated; its hidden test has a translatable failure message."""
    week = root / "source" / "week99"
    (week / "tests").mkdir(parents=True)
    shutil.copy(GENERATE_SOURCE, week / "week99.ipynb")
    (week / "tests" / "test_week99.py").write_text(
        "import pytest\nfrom autograder.i18n import _\n\n\n@pytest.mark.task(1)\n@pytest.mark.points(10)\n"
        "def test_square(student):\n    \"\"\"square(3) is 9.\"\"\"\n"
        "    assert student.square(3) == 9, _(\"square({x}) should be {y}\").format(x=3, y=9)\n"
    )
    (root / "course.toml").write_text('[languages]\nsource = "en"\noffered = ["en", "ja"]\n')
    found = Course(root)
    the_week = found.week("week99")
    translate_catalog(catalog_path(the_week, "ja"), extract(the_week), "ja")
    return found
