"""The instructor's report in a real browser (Debian's chromium, headless via Playwright) at
300 students: the table sorts and filters, and a screenshot is kept for a person to look at.

The screenshot goes to ``tests/artefacts/report-300.png`` (not committed)."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from autograder import results as r
from autograder.report import write_report
from autograder.report.similarity import similar_pairs

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium")
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: "
                                 "run scripts/install-system-packages (apt-get install chromium)"),
              pytest.mark.slow]
ARTEFACTS = Path(__file__).parent / "artefacts"
NAMES = ["Zoë Müller", "山田 太郎", "Nguyễn Thị Minh", "João Conceição", "Ann O'Poe", "Ωmega <b>Bold</b>"]


def course_of_300() -> list[r.SubmissionResult]:
    rng = random.Random(300)
    out = []
    for i in range(300):
        status = rng.choices(list(r.Status), weights=[80, 5, 3, 4, 3, 1])[0]
        ran = status in (r.Status.GRADED, r.Status.TIMEOUT, r.Status.WRONG_WEEK)
        tests = []
        for name, task, points in (("test_update", 1, 20), ("test_converges", 1, 20), ("test_sklearn", 2, 20)):
            passed = ran and rng.random() < 0.8
            timed_out = ran and not passed and rng.random() < 0.2
            output = f"{name}: passed" if passed else (
                f"{name}: failed (your code did not finish within 10 s)" if timed_out else
                f"{name}: failed ({rng.choice(['the weights are wrong after one epoch', 'no bias term'])})")
            tests.append(r.TestResult(name, task, points if passed else 0, points, output, timed_out=timed_out))
        marked = rng.random() < 0.5
        tasks = [r.TaskResult(1, sum(t.score for t in tests if t.task == 1), 40, title="the perceptron update"),
                 r.TaskResult(2, sum(t.score for t in tests if t.task == 2), 20, title="scikit-learn"),
                 r.TaskResult(3, 15 if marked else 0, 20, manual=True, title="a classifier", marked=marked,
                              stale=not marked and rng.random() < 0.1)]
        out.append(r.SubmissionResult(
            submission=f"export.zip!s{i}/week01.ipynb", key=f"participant-{1000 + i}", status=status,
            tasks=tasks if status is not r.Status.NOT_SUBMITTED else [], tests=tests, week="week01",
            participant=r.Participant(participant_id=str(1000 + i), full_name=f"{NAMES[i % len(NAMES)]} {i}"),
            duration_s=rng.uniform(0.5, 12.0)))
    return out


def test_the_report_works_in_chromium_at_300_students(tmp_path: Path) -> None:
    results = course_of_300()
    solution = "def update(w, x, y, eta):\n    if y * (w @ x) <= 0:\n        w = w + eta * y * x\n    return w\n" * 3
    codes = {res.key: f"# student {i}\nimport math\nvalue_{i} = math.sqrt({i})\nprint(value_{i} * {i})\n"
             for i, res in enumerate(results)}
    codes[results[0].key] = codes[results[1].key] = solution  # one copied pair
    report = write_report(results, tmp_path, week_title="week01: The perceptron",
                          similar=similar_pairs(codes))

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(report.as_uri())
        rows = page.locator("#results tbody tr")
        assert rows.count() == 300 and errors == []
        assert page.locator("#f-count").inner_text() == "300 of 300 shown"

        page.select_option("#f-status", "timeout")
        expected = sum(res.status is r.Status.TIMEOUT for res in results)
        assert page.locator("#f-count").inner_text() == f"{expected} of 300 shown"
        page.select_option("#f-status", "")
        page.check("#f-stale")
        stale = sum(any(t.stale for t in res.tasks) for res in results)
        assert page.locator("#f-count").inner_text() == f"{stale} of 300 shown" and stale > 0
        page.uncheck("#f-stale")

        page.click("#results th:nth-child(3)")  # score, ascending
        page.click("#results th:nth-child(3)")  # descending
        top = max(res.score for res in results)
        assert page.locator("#results tbody tr:visible td:nth-child(3) strong").first.inner_text() == f"{top:g}"

        assert page.locator(".bar-name").first.inner_text() == max(results, key=lambda x: x.duration_s).participant.full_name
        failures = Counter(t.output for res in results for t in res.tests if t.name == "test_update" and not t.passed)
        message, count = failures.most_common(1)[0]
        update = page.locator("#tests-table tbody tr").filter(has=page.locator("td.testname", has_text="test_update"))
        assert update.locator(".failures li").first.inner_text() == f"{count}× {message}"  # the commonest, counted
        pair = page.locator("details.pair").first
        assert "100%" in pair.locator("summary").inner_text() and pair.locator("pre.listing").count() == 2

        ARTEFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTEFACTS / "report-300.png"), full_page=False)
        page.locator("#tests").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTEFACTS / "report-300-tests.png"))
        page.locator("#similarity").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTEFACTS / "report-300-similarity.png"))
        browser.close()
