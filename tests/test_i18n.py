"""One source, several languages: what is translatable, catalogs, and generation's refusals.

Grading in each language (same score, feedback in the student's language) is in
tests/test_i18n_grading.py.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import nbformat
import pytest
from babel.messages.catalog import Catalog

from autograder import results as r
from autograder.authoring.markers import BEGIN, END
from autograder.course import Course
from autograder.course_languages import Languages, read_languages
from autograder.exceptions import CourseError, GenerationError, MarkerError
from autograder.generate import generate_week
from autograder.i18n import _, speaking
from autograder.i18n.catalog import (
    CatalogTranslations,
    catalog_path,
    extract,
    problems,
    read_catalog,
    template_path,
    update,
    write_catalog,
)
from autograder.i18n.languages import framework_catalog_path, framework_template
from autograder.i18n.units import notebook_messages, translate_code, translate_markdown, translate_notebook
from autograder.report import plots
from autograder.testing.budgets import source_cells

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "source").glob("week*/week*.ipynb"))
FIXTURES = Path(__file__).parent / "fixtures" / "generate"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_translating_with_the_identity_gives_every_source_notebook_back(path: Path):
    nb = nbformat.read(path, as_version=4)
    assert [c.source for c in translate_notebook(nb, lambda text: text).cells] == [c.source for c in nb.cells]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_message_found_is_one_replacement_and_code_still_compiles(path: Path):
    nb = nbformat.read(path, as_version=4)
    found = [m.text for m in notebook_messages(nb)]
    asked: list[str] = []

    def lookup(text: str) -> str:
        asked.append(text)
        return "«" + text.replace("\n", "\n«") + "»\\ \"'"  # quotes, a backslash, a new line per line

    translated = translate_notebook(nb, lookup)
    assert sorted(asked) == sorted(found) and found
    for before, after in zip(nb.cells, translated.cells):
        if after.cell_type == "code" and not after.source.lstrip().startswith(("%", "!")):
            compile(after.source, path.name, "exec")  # still Python
            for marker in (BEGIN, END):  # solution markers untouched, one per line as before
                assert before.source.count(marker) == after.source.count(marker)


def test_identifiers_math_and_inline_code_stay_while_words_change():
    md = "## Task 1 (40 points): the update\n\nSet `w_` so that\n\n$$z = w^T x$$\n\n```python\nx = 1\n```"
    out = translate_markdown(md, lambda t: "訳:" + t)
    assert out.startswith("訳:## Task 1 (40 points): the update\n\n訳:Set `w_` so that\n\n$$z = w^T x$$\n\n```python")
    code = 'def f(x):\n    """Return x.\n\n    More text.\n    """\n    # add one\n    assert x, "x is empty"\n    return x + 1  # noqa: E501\n'
    out = translate_code(code, lambda t: t.upper())
    assert '"""RETURN X.\n\n    MORE TEXT.\n    """' in out and "# ADD ONE" in out and '"X IS EMPTY"' in out
    assert "def f(x):" in out and "return x + 1  # noqa: E501" in out  # code and tool comments stay
    assert translate_code("%matplotlib inline\nx = 1  # one", str.upper) == "%matplotlib inline\nx = 1  # one"


def test_the_active_language_is_per_context_and_falls_back_to_the_source():
    catalog = Catalog(locale="ja")
    catalog.add("the check did not hold", "チェックが成り立ちませんでした")
    assert _("the check did not hold") == "the check did not hold"
    with speaking(CatalogTranslations([catalog])):
        assert _("the check did not hold") == "チェックが成り立ちませんでした"
        assert _("not in the catalog") == "not in the catalog"
    assert _("the check did not hold") == "the check did not hold"


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


# -- a small course in English and a made-up complete "ja" ---------------------------------


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


@pytest.fixture
def course(tmp_path: Path) -> Course:
    """week99 of tests/fixtures/generate in a course offering en and ja, fully translated."""
    week = tmp_path / "source" / "week99"
    (week / "tests").mkdir(parents=True)
    shutil.copy(FIXTURES / "week99.ipynb", week / "week99.ipynb")
    (week / "tests" / "test_week99.py").write_text(
        "import pytest\nfrom autograder.i18n import _\n\n\n@pytest.mark.task(1)\n@pytest.mark.points(10)\n"
        "def test_square(student):\n    \"\"\"square(3) is 9.\"\"\"\n"
        "    assert student.square(3) == 9, _(\"square({x}) should be {y}\").format(x=3, y=9)\n"
    )
    (tmp_path / "course.toml").write_text('[languages]\nsource = "en"\noffered = ["en", "ja"]\n')
    found = Course(tmp_path)
    the_week = found.week("week99")
    translate_catalog(catalog_path(the_week, "ja"), extract(the_week), "ja")
    return found


def framework_is_translated(language: str) -> bool:
    path = framework_catalog_path(language)
    return path.is_file() and not problems(framework_template(), read_catalog(path))


needs_ja = pytest.mark.skipif(not framework_is_translated("ja"), reason="the autograder's ja catalog is incomplete")


def test_the_template_holds_notebook_text_check_names_and_feedback_messages(course: Course):
    week = course.week("week99")
    ids = {str(m.id) for m in extract(week) if m.id}
    assert "square(3) is 9" in ids  # the test's description, as feedback shows it
    assert "square({x}) should be {y}" in ids  # the failure message, before .format
    assert week.title in ids and all(t.title in ids for t in week.tasks)
    assert {m.text for m in notebook_messages(nbformat.read(week.source_notebook, as_version=4))} <= ids


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


def test_plot_labels_in_japanese_draw_without_missing_glyphs():
    assert len(plots.font_families()) > 1, "install fonts-noto-cjk (scripts/install-system-packages)"
    catalog = Catalog(locale="ja")
    catalog.add("submissions", "提出数")
    catalog.add("full marks", "満点")
    results = [r.SubmissionResult(submission="a", key="山田", status=r.Status.GRADED,
                                  tasks=[r.TaskResult(1, 5, 10, title="パーセプトロン")],
                                  tests=[r.TestResult("test_重み", 1, 5, 10, "重みベクトル: passed")])]
    with warnings.catch_warnings(record=True) as caught, speaking(CatalogTranslations([catalog])):
        warnings.simplefilter("always")
        for draw in (plots.score_distribution, plots.task_scores, plots.pass_rates_by_test):
            assert draw(results).startswith(b"\x89PNG")
    assert not [w for w in caught if "missing from font" in str(w.message)]
