"""The course in ja, pt, es and en, graded: one set of hidden tests, the same score in every
language, feedback in the student's.

Real grading through the sandbox (the session's ``slot``) of the committed generated
notebooks and of the fixtures of tests/fixtures/weekNN "handed in" in each language (the
fixture's code in the cells of that language's student notebook, as a student of that
language would hand it in). Browser screenshots of the Japanese feedback page and report go
to tests/artefacts/ (not committed), for a person to look at.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Sandboxed, ZygoteSlot
from autograder.grading.grader import grade
from autograder.report import render_feedback, write_report
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission

FIXTURES = Path(__file__).parent / "fixtures"
ARTEFACTS = Path(__file__).parent / "artefacts"
LANGUAGES = ("en", "ja", "pt", "es")
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def offered(course: Course) -> tuple[str, ...]:
    return course.languages.offered


def in_language(content: bytes, course: Course, week: str, language: str) -> bytes:
    """``content`` (a fixture notebook) as handed in by a student of ``language``: the
    markdown of that language's student notebook (same cell ids), the fixture's code, and
    the notebook's language in its metadata."""
    nb = nbformat.reads(content.decode("utf-8"), as_version=4)
    given = nbformat.read(course.week(week).assignment_notebook_in(language), as_version=4)
    text = {c.id: c.source for c in given.cells if c.cell_type == "markdown"}
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.get("id") in text:
            cell.source = text[cell.id]
    nb.metadata.setdefault("autograder", {})["language"] = language
    return nbformat.writes(nb).encode("utf-8")


def sample(week: str) -> list[str]:
    """Every fixture of the week that is a notebook a student of any language could hand in:
    the correct-but-different ones and the plausible wrong answers (not the stub, the wrong
    week or the broken files, whose outcome does not depend on the text around the code)."""
    expectations = json.loads((FIXTURES / week / "expectations.json").read_text())
    return [n for n, e in expectations.items() if e.get("full") or e.get("loses") or e.get("fails")]


_graded: dict[str, list[SubmissionResult]] = {}


def graded(course: Course, slot: ZygoteSlot, week: str) -> list[SubmissionResult]:
    """The week's solution notebook in every language, then its fixtures in every language
    (each fixture with one seed in all its languages), graded as one batch."""
    if week not in _graded:
        subs = [Submission(origin=f"solution-{lang}", key=f"solution-{lang}", seed=7,
                           content=course.week(week).solution_notebook_in(lang).read_bytes())
                for lang in offered(course)]
        for index, name in enumerate(sample(week)):
            content = (FIXTURES / week / name).read_bytes()
            subs += [Submission(origin=f"{name}-{lang}", key=f"{Path(name).stem}-{lang}", seed=100 + index,
                                content=in_language(content, course, week, lang)) for lang in offered(course)]
        _graded[week] = grade(course.week(week), subs, isolation=Sandboxed(slot=slot))
    return _graded[week]


WEEKS = [f"week0{n}" for n in range(1, 7)]


def test_the_course_offers_the_four_languages(course: Course):
    assert set(offered(course)) == set(LANGUAGES)
    for week in course.week_names():
        for lang in LANGUAGES:
            assert course.week(week).assignment_notebook_in(lang).is_file()
            assert course.week(week).solution_notebook_in(lang).is_file()


@pytest.mark.parametrize("week", WEEKS)
def test_every_languages_solution_passes_and_every_fixture_scores_the_same_in_each(
        course: Course, slot: ZygoteSlot, week: str):
    results = {r.key: r for r in graded(course, slot, week)}
    the_week = course.week(week)
    autograded = sum(t.points for t in the_week.tasks if not t.manual)
    for lang in offered(course):
        solution = results[f"solution-{lang}"]
        assert solution.status is Status.GRADED and solution.language == lang
        assert sum(t.score for t in solution.tasks if not t.manual) == pytest.approx(autograded), \
            [t.output for t in solution.tests if not t.passed]
    for name in sample(week):
        stem = Path(name).stem
        english = results[f"{stem}-en"]
        for lang in offered(course):
            other = results[f"{stem}-{lang}"]
            assert other.language == lang
            assert (other.status, other.score) == (english.status, english.score), (name, lang)
            assert [(t.name, t.passed) for t in other.tests] == [(t.name, t.passed) for t in english.tests]


@pytest.mark.parametrize("week", WEEKS)
def test_feedback_is_in_the_students_language(course: Course, slot: ZygoteSlot, week: str):
    results = {r.key: r for r in graded(course, slot, week)}
    the_week = course.week(week)
    wrong = next(Path(n).stem for n in sample(week)
                 if any(not t.passed for t in results[f"{Path(n).stem}-en"].tests))
    english, japanese = results[f"{wrong}-en"], results[f"{wrong}-ja"]
    assert not any(CJK.search(t.output) for t in english.tests)
    failed = [t.output for t in japanese.tests if not t.passed]
    assert failed and all(CJK.search(text) for text in failed), failed  # check names and reasons in ja
    page = render_feedback(japanese, week_title=the_week.title, week=the_week)
    assert '<html lang="ja">' in page and CJK.search(page.split("<main>")[1].split("</h1>")[0])  # translated title
    spanish = render_feedback(results[f"{wrong}-es"], week_title=the_week.title, week=the_week)
    assert '<html lang="es">' in spanish and "points" not in spanish.split("score-big")[1][:200]


playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (scripts/install-system-packages)")
def test_japanese_feedback_and_report_render_their_cjk_text_in_chromium(
        course: Course, slot: ZygoteSlot, tmp_path: Path):
    week = course.week("week01")
    results = [r for r in graded(course, slot, "week01") if r.language == "ja"]
    for index, result in enumerate(results):
        result.participant = None
        result.key = f"学生-{index}"
    (tmp_path / "course").mkdir()
    japanese_course = tmp_path / "course"
    shutil.copytree(course.root / "source" / "week01", japanese_course / "source" / "week01")
    (japanese_course / "course.toml").write_text(
        '[languages]\nsource = "en"\noffered = ["en", "ja"]\ninstructor = "ja"\n')
    ja_week = Course(japanese_course).week("week01")
    report = write_report(results, tmp_path / "out", week_title=f"week01: {week.title}", week=ja_week)
    feedback = tmp_path / "out" / "feedback" / f"{results[1].key}.html"
    ARTEFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        for path, shot in ((feedback, "feedback-ja.png"), (report, "report-ja.png")):
            page.goto(path.as_uri())
            heading = page.locator("h1").inner_text()
            assert CJK.search(heading), heading
            page.screenshot(path=str(ARTEFACTS / shot), full_page=shot.startswith("feedback"))
            fonts = fonts_drawing(page, "h1")
            assert any("CJK" in f["familyName"] and f["glyphCount"] > 0 for f in fonts), (
                f"{shot}: the heading's Japanese is not drawn with a CJK font ({fonts}): "
                "install fonts-noto-cjk (scripts/install-system-packages)")
        browser.close()


def fonts_drawing(page: object, selector: str) -> list[dict[str, object]]:
    """The fonts Chromium drew an element's text with, and how many glyphs each (DevTools'
    CSS.getPlatformFontsForNode): a character no installed font has is drawn as a box."""
    client = page.context.new_cdp_session(page)  # type: ignore[attr-defined]
    client.send("DOM.enable")
    client.send("CSS.enable")
    root = client.send("DOM.getDocument")["root"]["nodeId"]
    node = client.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts: list[dict[str, object]] = client.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return fonts
