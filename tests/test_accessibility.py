"""The pages the grader writes meet WCAG 2.1 AA, checked in a real browser: axe-core (levels
A and AA) in Debian's chromium through Playwright, in each of the course's four languages,
then what a scanner cannot see: the report's filters and sort work from the keyboard alone,
focus is visible, and every plot has its numbers in a table beside it.

Pages: ``report.html`` and the feedback pages (in the instructor's and the students'
languages), ``manual-marking.html`` and the mutation audit's page. Screenshots go to
``tests/artefacts/`` (not committed) for a person to look at.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import results as r
from autograder.audit.audit_toml import Equivalent
from autograder.audit.mutants import generate_mutants
from autograder.audit.report import write_html
from autograder.audit.run import Audit, CrossLoss, MutantOutcome
from autograder.course import Course
from autograder.manual import write_manual_sheet
from autograder.report import write_report
from autograder.report.similarity import similar_pairs
from autograder.submission import Submission
from tests.helpers import axe_violations, focus_outline

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: "
                                "run scripts/install-system-packages (apt-get install chromium)")
ARTEFACTS = Path(__file__).parent / "artefacts"
LANGUAGES = ("en", "ja", "pt", "es")
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
NAMES = ["Zoë Müller", "山田 太郎", "Nguyễn Thị Minh", "João Conceição", "Ann O'Poe", "Ωmega <b>Bold</b>"]


def a_batch(language: str) -> list[r.SubmissionResult]:
    """A dozen results of every status, passes and failures, timeouts, marks pending and stale,
    feedback in ``language``."""
    rng = random.Random(29)
    out = []
    for i, status in enumerate(list(r.Status) * 2):
        ran = status in (r.Status.GRADED, r.Status.TIMEOUT, r.Status.WRONG_WEEK)
        tests = []
        for name, task, points in (("test_update", 1, 20), ("test_converges", 1, 20), ("test_sklearn", 2, 20)):
            passed = ran and rng.random() < 0.6
            timed_out = ran and not passed and rng.random() < 0.3
            visibility = r.Visibility.HIDDEN if name == "test_converges" and i % 3 == 0 else r.Visibility.VISIBLE
            tests.append(r.TestResult(name, task, points if passed else 0, points,
                                      f"{name}: " + ("passed" if passed else "the weights are wrong after one epoch"),
                                      timed_out=timed_out, visibility=visibility, not_attempted=not ran))
        marked = i % 2 == 0
        tasks = [r.TaskResult(1, sum(t.score for t in tests if t.task == 1), 40, title="the perceptron update"),
                 r.TaskResult(2, sum(t.score for t in tests if t.task == 2), 20, title="scikit-learn"),
                 r.TaskResult(3, 15 if marked else 0, 20, manual=True, title="a classifier", marked=marked,
                              comment="Clear; say why the data must be separable." if marked else "",
                              stale=not marked and i % 3 == 1)]
        out.append(r.SubmissionResult(
            submission=f"export.zip!s{i}/week01.ipynb", key=f"participant-{1000 + i}", status=status,
            tasks=tasks if status is not r.Status.NOT_SUBMITTED else [], tests=tests, week="week01",
            participant=r.Participant(participant_id=str(1000 + i), full_name=f"{NAMES[i % len(NAMES)]} {i}"),
            duration_s=rng.uniform(0.5, 12.0), language=language,
            messages=["Cell 4 raised ValueError: shapes (3,) and (2,) not aligned"] if status is r.Status.ERROR
            else []))
    return out


def course_speaking(course: Course, folder: Path, language: str) -> Course:
    """A copy of week 1 whose instructor reads ``language`` (the report's language)."""
    shutil.copytree(course.root / "source" / "week01", folder / "source" / "week01")
    (folder / "course.toml").write_text(
        f'[languages]\nsource = "en"\noffered = ["en", "ja", "pt", "es"]\ninstructor = "{language}"\n')
    return Course(folder)


def written_pages(course: Course, folder: Path, language: str) -> dict[str, Path]:
    """The report, one feedback page, the marking sheet and the audit page, as the grader writes them."""
    week = course_speaking(course, folder / "course", language).week("week01")
    results = a_batch(language)
    codes = {res.key: f"import math\nvalue_{i} = math.sqrt({i})\nprint(value_{i} * {i}, 'x' * {i})\n" * 40
             for i, res in enumerate(results)}
    codes[results[1].key] = codes[results[0].key]
    report = write_report(results, folder / "out", week_title="week01", week=week, similar=similar_pairs(codes))
    answer = nbformat.read(course.week("week01").solution_notebook_in(language), as_version=4)
    submissions = [Submission(origin=f"s{i}.ipynb", key=f"s{i}", content=nbformat.writes(answer).encode(),
                              participant=r.Participant(participant_id=str(i), full_name=NAMES[i]))
                   for i in range(3)]
    sheet = folder / "out" / "manual-marking.html"
    write_manual_sheet(submissions=submissions, tasks=week.tasks, csv_path=folder / "out" / "manual-marking.csv",
                       html_path=sheet, title="week01")
    generated = generate_mutants(week)
    mutants = generated.mutants
    audit = Audit(week=week, seed=1, budget_s=60, generated=generated, seconds=12.5,
                  outcomes=[MutantOutcome(mutants[0], 40, 40, "graded"),
                            MutantOutcome(mutants[1], 40, 40, "graded", Equivalent(1, mutants[1].task, mutants[1].operator,
                                                                             mutants[1].line, mutants[1].mutated,
                                                                             "the same for every input")),
                            # a cross-task loss: the page's blame table is checked too
                            MutantOutcome(mutants[2], 0, 40, "graded", cross=(CrossLoss("test_ppn_classifies_the_blobs", 2,
                                                                                  4.0, None),)),
                            *(MutantOutcome(m, 0, 40, "graded") for m in mutants[3:6])],
                  skipped=list(mutants[6:9]))
    return {"report": report, "feedback": folder / "out" / "feedback" / f"{results[0].key}.html",
            "feedback-error": folder / "out" / "feedback" / f"{results[2].key}.html",
            "marking-sheet": sheet, "audit": write_html(audit, folder / "out" / "audit.html")}


@pytest.mark.slow
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_written_page_has_no_wcag_aa_violation(course: Course, tmp_path: Path, language: str) -> None:
    pages = written_pages(course, tmp_path, language)
    ARTEFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        found = []
        for name, path in pages.items():
            page.goto(path.as_uri())
            if name in ("report", "feedback", "feedback-error"):  # in the instructor's / student's language
                assert page.evaluate("document.documentElement.lang") == language, name
                if language == "ja":
                    assert CJK.search(page.locator("h1").inner_text() + page.locator("main").inner_text()), name
            else:
                assert page.evaluate("document.documentElement.lang"), name
            found += [f"{name}: {v}" for v in axe_violations(page)]
            if name in ("report", "feedback"):
                page.screenshot(path=str(ARTEFACTS / f"a11y-{name}-{language}.png"), full_page=name == "feedback")
        browser.close()
    assert found == [], "\n".join(found)


@pytest.mark.slow
def test_the_reports_filters_and_sort_work_from_the_keyboard_alone(course: Course, tmp_path: Path) -> None:
    """Tab to the search box, the status filter and a column header; type, pick with the
    arrow keys, sort with Enter and Space; focus is drawn everywhere it lands; each plot has
    a table with its numbers."""
    report = written_pages(course, tmp_path, "en")["report"]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri())
        rows = page.locator("#results tbody tr")
        total = rows.count()

        def tab_to(selector: str, limit: int = 80) -> None:
            for _ in range(limit):
                page.keyboard.press("Tab")
                if page.evaluate(f"document.activeElement.matches({selector!r})"):
                    assert focus_outline(page), f"{selector} has the focus but no visible outline"
                    return
            raise AssertionError(f"Tab never reached {selector}")

        tab_to("#f-text")
        page.keyboard.type("山田")
        assert page.locator("#f-count").inner_text() == f"2 of {total} shown"
        page.keyboard.press("Control+a")
        page.keyboard.press("Backspace")
        tab_to("#f-status")
        page.keyboard.press("ArrowDown")  # the first status listed (graded)
        graded = page.locator("#results tbody tr[data-status=graded]").count()
        assert page.locator("#f-count").inner_text() == f"{graded} of {total} shown"
        page.keyboard.press("ArrowUp")  # back to "any"
        assert page.locator("#f-count").inner_text() == f"{total} of {total} shown"
        tab_to("#f-stale")
        page.keyboard.press("Space")
        stale = page.locator("#results tbody tr[data-stale='1']").count()
        assert page.locator("#f-count").inner_text() == f"{stale} of {total} shown"
        page.keyboard.press("Space")

        tab_to("#results th.num button")  # the score column's sort button
        page.keyboard.press("Enter")  # ascending
        header = page.locator("#results th.num").first
        assert header.get_attribute("aria-sort") == "ascending"
        page.keyboard.press("Space")  # descending
        assert header.get_attribute("aria-sort") == "descending"
        scores = [float(v) for v in page.locator("#results tbody tr td:nth-child(3)").evaluate_all(
            "cells => cells.map(c => c.dataset.value)")]
        assert scores == sorted(scores, reverse=True)
        assert "descending" in page.locator("#sort-status").inner_text()

        for figure in page.locator(".plots figure").all():  # every plot's numbers, as text
            table = figure.locator("table")
            assert table.count() == 1 and table.locator("tbody tr").count() > 0, figure.inner_text()
        browser.close()
