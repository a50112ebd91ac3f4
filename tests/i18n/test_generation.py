"""Generating a week in each of its languages (autograder/i18n/generation.py): every
language written and stamped; a stale, fuzzy or missing catalog refused with the fix and
nothing written; a misspelt marker refused as a marker, not as a missing translation.

Grading in each language (same score, feedback in the student's language) is in
tests/test_i18n_grading.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.exceptions import GenerationError, MarkerError
from autograder.generate import generate_week
from autograder.i18n.catalog import catalog_path, extract, problems, read_catalog, update, write_catalog
from autograder.i18n.languages import framework_catalog_path, framework_template
from autograder.testing.budgets import source_cells
from tests.i18n.translated import translate_catalog, translated_course


@pytest.fixture
def course(tmp_path: Path) -> Course:
    return translated_course(tmp_path)


def framework_is_translated(language: str) -> bool:
    path = framework_catalog_path(language)
    return path.is_file() and not problems(framework_template(), read_catalog(path))


needs_ja = pytest.mark.skipif(not framework_is_translated("ja"), reason="the autograder's ja catalog is incomplete")


@pytest.mark.slow
@needs_ja
def test_generate_writes_every_language_and_stamps_it(course: Course):
    week = course.week("week99")
    generate_week(week)
    for language in ("en", "ja"):
        for path in (week.assignment_notebook_in(language), week.solution_notebook_in(language)):
            nb = nbformat.read(path, as_version=4)
            assert nb.metadata.autograder.language == language
    ja = nbformat.read(week.assignment_notebook_in("ja"), as_version=4)
    en = nbformat.read(week.assignment_notebook_in("en"), as_version=4)
    assert [c.id for c in ja.cells] == [c.id for c in en.cells]
    assert [c.metadata for c in ja.cells] == [c.metadata for c in en.cells]  # the grader finds the same cells
    markdown = [c.source for c in source_cells(ja.cells)
                if c.cell_type == "markdown" and "answer" not in c.metadata.get("autograder", {})]
    assert markdown and all("[ja] " in text for text in markdown)  # the week's catalog (the time limits: ours)
    prompt = next(c.source for c in ja.cells if "answer" in c.metadata.get("autograder", {}))
    assert prompt != next(c.source for c in en.cells if "answer" in c.metadata.get("autograder", {}))  # the autograder's
    stub = "\n".join(c.source for c in ja.cells if c.cell_type == "code")
    assert "raise NotImplementedError()" in stub and "# your code here" not in stub  # the stub comment translated


@pytest.mark.slow
@needs_ja
def test_a_changed_source_string_makes_generate_refuse_the_stale_language(course: Course):
    week = course.week("week99")
    generate_week(week)
    before = {p: p.read_bytes() for p in (course.root / "assignments").rglob("*.ipynb")}
    nb = json.loads(week.source_notebook.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    old = "".join(cell["source"]).split("\n\n")[0].strip()
    cell["source"] = "".join(cell["source"]).replace(old, old + " Read it twice.", 1)
    week.source_notebook.write_text(json.dumps(nb))
    fresh = Course(course.root).week("week99")
    with pytest.raises(GenerationError) as refused:
        generate_week(fresh)
    message = str(refused.value)
    assert "language 'ja'" in message and "changed since it was translated" in message
    assert "Read it twice." in message and "autograder i18n update" in message
    assert {p: p.read_bytes() for p in (course.root / "assignments").rglob("*.ipynb")} == before  # nothing written

    path = catalog_path(fresh, "ja")
    write_catalog(update(extract(fresh), path, "ja"), path)  # what `autograder i18n update` does
    with pytest.raises(GenerationError, match="marked fuzzy"):
        generate_week(fresh)
    translate_catalog(path, extract(fresh), "ja")
    generate_week(fresh)
    assert "Read it twice." in week.assignment_notebook_in("ja").read_text()


@pytest.mark.slow
def test_a_language_without_a_catalog_is_refused_with_the_fix(course: Course):
    (course.root / "course.toml").write_text('[languages]\nsource = "en"\noffered = ["en", "pt", "ja"]\n')
    with pytest.raises(GenerationError, match=r"language 'pt'.*lacks \d+ translation\(s\)") as refused:
        generate_week(Course(course.root).week("week99"))
    assert "not in the catalog" in str(refused.value)
    assert not (course.root / "assignments").exists()


def test_a_misspelt_marker_is_refused_as_a_marker_not_as_a_missing_translation(course: Course):
    week = course.week("week99")
    text = week.source_notebook.read_text()
    week.source_notebook.write_text(text.replace("### END SOLUTION", "### END SOLUTON", 1))
    with pytest.raises(MarkerError) as refused:
        generate_week(Course(course.root).week("week99"))
    message = str(refused.value)
    assert "malformed solution marker '### END SOLUTON'" in message and "'### END SOLUTION' exactly" in message
    assert re.search(r"week99\.ipynb: cell \d+, line \d+: ", message)
    assert "translation" not in message
    assert not (course.root / "assignments").exists()
