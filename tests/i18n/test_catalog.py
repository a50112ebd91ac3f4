"""A week's catalog (autograder/i18n/catalog.py): its template holds the notebook's text,
the checks' names and the feedback messages; only failure messages are flagged
python-brace-format, LaTeX is not."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.i18n.catalog import catalog_path, extract, template_path
from autograder.i18n.units import notebook_messages
from tests.i18n.translated import translated_course


@pytest.fixture
def course(tmp_path: Path) -> Course:
    return translated_course(tmp_path)


def test_the_template_holds_notebook_text_check_names_and_feedback_messages(course: Course):
    week = course.week("week99")
    ids = {str(m.id) for m in extract(week) if m.id}
    assert "square(3) is 9" in ids  # the test's description, as feedback shows it
    assert "square({x}) should be {y}" in ids  # the failure message, before .format
    assert week.title in ids and all(t.title in ids for t in week.tasks)
    assert {m.text for m in notebook_messages(nbformat.read(week.source_notebook, as_version=4))} <= ids


def test_only_failure_messages_are_flagged_as_brace_format_latex_is_not(course: Course):
    from autograder.i18n.update import update_catalogs

    week = course.week("week99")
    nb = nbformat.read(week.source_notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("The points $x^{(1)}, \\dots, x^{(n)}$ are given."))
    nbformat.write(nb, week.source_notebook)
    update_catalogs(Course(course.root), framework=False)
    for path in (template_path(week), catalog_path(week, "ja")):
        entries = {block.split("msgid ", 1)[1].split("\n", 1)[0]: block
                   for block in path.read_text(encoding="utf-8").split("\n\n") if "msgid " in block}
        assert "python-brace-format" in entries['"square({x}) should be {y}"']
        latex = entries['"The points $x^{(1)}, \\\\dots, x^{(n)}$ are given."']
        assert "python-brace-format" not in latex, latex
