"""A week in fewer languages than the course: ``source/weekNN/week.toml``.

The trial of issue 25 again, from the guide: week 7 of docs/AUTHORING.md written into a
copy of this course (en, ja, pt, es), drafted in English only, generates and grades for
real (sandbox, hidden tests) while ja, pt and es are untranslated; then gains a language
without any course-wide setting changing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from babel.messages.catalog import Catalog

from autograder.course import Course
from autograder.course_languages import Languages, read_week_languages
from autograder.exceptions import CourseError, GenerationError
from autograder.execution import Sandboxed, ZygoteSlot
from autograder.generate import generate_week
from autograder.grading.grader import grade
from autograder.i18n.catalog import catalog_path, extract, update, write_catalog
from autograder.i18n.languages import framework_catalog_path, translations
from autograder.i18n.status import catalog_status
from autograder.i18n.update import update_catalogs
from autograder.report import render_feedback
from autograder.results import Status
from autograder.submission import Submission
from tests.helpers import ROOT, write_week_from_the_docs

COURSE = Languages(source="en", offered=("en", "ja", "pt", "es"), instructor="en")


def week_languages(tmp_path: Path, text: str) -> Languages:
    (tmp_path / "week.toml").write_text(text, encoding="utf-8")
    return read_week_languages(tmp_path, COURSE)


def test_a_week_without_week_toml_offers_the_courses_languages(tmp_path: Path) -> None:
    assert read_week_languages(tmp_path, COURSE) == COURSE


def test_week_toml_narrows_the_languages_and_may_name_its_own_source(tmp_path: Path) -> None:
    drafted = week_languages(tmp_path, '[languages]\noffered = ["en"]\n')
    assert drafted == Languages(source="en", offered=("en",), instructor="en")
    assert drafted.pick("ja") == "en" and drafted.pick("en") == "en"
    imported = week_languages(tmp_path, '[languages]\nsource = "ru"\noffered = ["ru", "en"]\n')
    assert imported == Languages(source="ru", offered=("ru", "en"), instructor="en")
    assert imported.pick("pt") == "ru"


@pytest.mark.parametrize(("text", "says"), [
    ('[languages]\noffered = ["ja"]\n', r'\[languages\] offered: \["ja"\] must include the week\'s source language "en"'),
    ('[languages]\nsource = "ru"\n', r'must include the week\'s source language "ru": add it \(offered = \["ru", "en", "ja", "pt", "es"\]\)'),
    ('[languages]\noffered = ["en", "fr"]\n', r'names "fr", which the course does not offer .*remove it here, or add'),
    ('[languages]\noffered = ["en", "en"]\n', r"lists a language twice"),
    ('[languages]\noffered = "en"\n', r'\[languages\] offered = "en" is not allowed here: write a list of language codes'),
    ('[languages]\nsource = "English"\n', r'\[languages\] source = "English" is not allowed here: write a language code such as'),
    ('[languages]\ninstructor = "ja"\n', r"instructor: the instructor's language is course-wide; set it in course.toml"),
    ('[languages]\nofered = ["en"]\n', r"\[languages\] ofered: unknown key; the keys here are offered, source: remove it or fix its name"),
    ('[language]\noffered = ["en"]\n', r"language: unknown key; the keys here are files, languages"),
    ('languages = "en"\n', r'languages = "en" is not allowed here: write a table: \[languages\] on a line of its own'),
    ('[languages\n', r"not valid TOML"),
])
def test_week_toml_mistakes_name_the_file_the_key_and_the_fix(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(CourseError, match=says) as refused:
        week_languages(tmp_path, text)
    assert str(refused.value).startswith(str(tmp_path / "week.toml"))


def fake_translate(catalog_file: Path, template: Catalog, language: str) -> None:
    """Translate every message of ``template`` into ``[language] text`` (placeholders kept)."""
    catalog = update(template, catalog_file, language)
    for message in catalog:
        if message.id:
            message.string = f"[{language}] {message.id}"
            message.flags.discard("fuzzy")
    write_catalog(catalog, catalog_file)


@pytest.fixture
def drafted(tmp_path: Path) -> Course:
    """A copy of this course's settings with the guide's week 7 in it (its week.toml too)."""
    shutil.copy(ROOT / "course.toml", tmp_path / "course.toml")
    write_week_from_the_docs(tmp_path)
    course = Course(tmp_path)
    assert course.languages.offered == ("en", "ja", "pt", "es")
    return course


def test_the_guides_week_offers_english_only_and_without_week_toml_could_not_be_generated(drafted: Course) -> None:
    week_toml = drafted.root / "source" / "week07" / "week.toml"
    assert drafted.week("week07").languages.offered == ("en",)
    week_toml.unlink()
    with pytest.raises(GenerationError, match=r"language 'ja'.*lacks \d+ translation") as refused:
        generate_week(drafted.week("week07"))
    assert "week.toml" in str(refused.value)  # the refusal names the way out


def hand_in(path: Path, *, language: str) -> bytes:
    nb = nbformat.read(path, as_version=4)
    nb.metadata.setdefault("autograder", {})["language"] = language
    return nbformat.writes(nb).encode()


def test_a_week_drafted_in_english_generates_and_grades_while_the_others_are_untranslated(
        drafted: Course, slot: ZygoteSlot) -> None:
    week = drafted.week("week07")
    generate_week(week)
    assert sorted(p.name for p in (drafted.root / "assignments" / "week07").iterdir()) == ["en"]
    assert sorted(p.name for p in (drafted.root / "solutions" / "week07").iterdir()) == ["en"]
    assert generate_week(week, check=True) == []

    changed = update_catalogs(drafted, framework=False)
    assert {p.relative_to(drafted.root).as_posix() for p in changed} == {
        "source/week07/locale/week07.pot",
        *(f"source/week07/locale/{lang}/LC_MESSAGES/week07.po" for lang in ("ja", "pt", "es"))}
    assert update_catalogs(drafted, framework=False) == []  # nothing changed: nothing written
    rows = {(r.catalog, r.language): r for r in catalog_status(drafted) if r.catalog == "week07"}
    assert {k[1]: r.offer for k, r in rows.items()} == {"en": "source", "ja": "not offered", "pt": "not offered",
                                                        "es": "not offered"}
    assert all(r.lacking == r.messages > 0 for k, r in rows.items() if k[1] != "en")
    assert not any(r.blocks for r in rows.values())
    status = subprocess.run([sys.executable, "-m", "autograder", "i18n", "status", "week07", "--course",
                             str(drafted.root)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "COLUMNS": "200"})
    assert status.returncode == 0, status.stdout + status.stderr  # nothing the week offers lacks a translation
    lines = [" ".join(line.replace("│", " ").split()) for line in status.stdout.splitlines()]
    assert "week07 en source" in " | ".join(lines)
    assert all(any(line.startswith(f"week07 {lang} not offered") for line in lines) for lang in ("ja", "pt", "es"))

    reference, stub = week.solution_notebook_in("en"), week.assignment_notebook_in("en")
    submissions = [Submission(origin="ref-ja.ipynb", key="ref-ja", content=hand_in(reference, language="ja"), seed=3),
                   Submission(origin="ref-en.ipynb", key="ref-en", content=hand_in(reference, language="en"), seed=3),
                   Submission(origin="stub.ipynb", key="stub", content=hand_in(stub, language="es"), seed=3)]
    results = {r.key: r for r in grade(week, submissions, isolation=Sandboxed(slot=slot))}
    autograded = sum(t.points for t in week.tasks if not t.manual)
    for key in ("ref-ja", "ref-en"):
        assert results[key].status is Status.GRADED, results[key].messages
        assert results[key].score == autograded and results[key].language == "en"
    assert [(t.name, t.score) for t in results["ref-ja"].tests] == [(t.name, t.score) for t in results["ref-en"].tests]
    assert results["stub"].status is Status.NOT_ATTEMPTED and results["stub"].language == "en"
    page = render_feedback(results["ref-ja"], week_title=week.title, week=week)
    assert 'lang="en"' in page and "k-means" in page

    # A language is added for this week alone: course.toml is not touched.
    course_toml = (drafted.root / "course.toml").read_bytes()
    fake_translate(catalog_path(week, "es"), extract(week), "es")
    (week.source_dir / "week.toml").write_text('[languages]\noffered = ["en", "es"]\n')
    week = Course(drafted.root).week("week07")
    generate_week(week)
    assert sorted(p.name for p in (drafted.root / "assignments" / "week07").iterdir()) == ["en", "es"]
    assert "[es] " in week.assignment_notebook_in("es").read_text()
    assert (drafted.root / "course.toml").read_bytes() == course_toml
    [again] = grade(week, [submissions[2]], isolation=Sandboxed(slot=slot))
    assert again.language == "es" and again.status is Status.NOT_ATTEMPTED


def test_a_week_written_in_a_language_the_autograder_lacks_gets_its_words_in_english(drafted: Course) -> None:
    source = drafted.root / "source" / "week07"
    (source / "week.toml").write_text('[languages]\nsource = "ru"\noffered = ["ru"]\n')
    week = drafted.week("week07")
    assert not framework_catalog_path("ru").exists()
    generate_week(week)
    assert sorted(p.name for p in (drafted.root / "assignments" / "week07").iterdir()) == ["ru"]
    student = nbformat.read(week.assignment_notebook_in("ru"), as_version=4)
    assert student.metadata.autograder.language == "ru"
    assert "# your code here" in "\n".join(c.source for c in student.cells if c.cell_type == "code")


def test_the_report_falls_back_to_the_weeks_source_for_week_text_it_lacks(drafted: Course) -> None:
    (drafted.root / "course.toml").write_text('[languages]\nsource = "en"\noffered = ["en", "es"]\n'
                                              'instructor = "es"\n')
    week = Course(drafted.root).week("week07")
    fake_translate(catalog_path(week, "es"), extract(week), "es")  # translated, but the week does not offer es
    active = translations(week, "es")
    assert active is not None and active.gettext(week.title) == week.title  # the week's text: its source
    assert active.gettext("submissions") != "submissions"  # the report's own words: the instructor's language
