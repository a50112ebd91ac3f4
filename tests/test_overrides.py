"""An instructor's override of an autograded task's points (issue 40): recorded in the
gradebook with its reason, who and when; applied wherever a result is read (the one record
of a result), kept by a regrade, taken back by removing it; shown on the feedback page with
the reason, in the student's language. On SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from markupsafe import escape

from autograder.exceptions import GradebookError
from autograder.formats import result_json
from autograder.formats.worksheet import feedback_comment
from autograder.gradebook import Gradebook
from autograder.report.feedback import render_feedback
from autograder.results import Status, SubmissionResult, TaskResult
from autograder.results import TestResult as Check

WEEK = "week01"
ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``autograder ARGS`` in the course's folder."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "300"})


def graded(key: str, autograded: float, *, tests_sha: str = "t" * 64) -> SubmissionResult:
    """A result of task 1 (autograded, 10 points) and task 2 (by hand, 5 points)."""
    return SubmissionResult(
        submission=f"{key}.ipynb", key=key, status=Status.GRADED, week=WEEK, grader_version="0.1.0",
        submission_sha256=key.ljust(64, "0"), tests_sha256=tests_sha,
        tasks=[TaskResult(task=1, score=autograded, max_score=10.0, title="Perceptron"),
               TaskResult(task=2, score=0.0, max_score=5.0, manual=True, title="Discussion")],
        tests=[Check(name="test_fit", task=1, score=autograded, max_score=10.0, output="fit converges")])


@pytest.fixture
def book(tmp_path: Path) -> Gradebook:
    opened = Gradebook.open(tmp_path / "gradebook.sqlite")
    yield opened  # type: ignore[misc]
    opened.close()


def test_an_override_counts_for_every_reader_survives_a_regrade_and_its_removal_restores_the_tests_points(
        tmp_path: Path, database_url: str | None) -> None:
    with Gradebook.open(database_url or tmp_path / "gradebook.sqlite") as book:
        book.record(graded("a", 4.0))
        book.record(graded("b", 6.0))
        book.set_manual(WEEK, "a", 2, points=3.0, comment="fine")
        given = book.set_override(WEEK, "a", 1, points=9.5, reason="  test_fit used the wrong tolerance ", by="Ada")
        assert (given.points, given.reason, given.by) == (9.5, "test_fit used the wrong tolerance", "Ada")
        assert abs((datetime.now(UTC) - given.at).total_seconds()) < 60

        (a, b) = book.results(WEEK)
        assert (a.task(1).score, a.task(1).autograded_score, a.task(1).override_reason) == (
            9.5, 4.0, "test_fit used the wrong tolerance")
        assert a.score == 12.5 and a.task(2).score == 3.0  # the hand mark is untouched
        assert not b.task(1).overridden and b.score == 6.0
        assert book.result(WEEK, "a") == a
        assert book.lookup(WEEK, "a", submission_sha256=a.submission_sha256, tests_sha256="t" * 64,
                           grader_version="0.1.0") == a
        assert book.overrides(WEEK) == {"a": {1: given}}
        assert result_json.from_dict(result_json.to_dict(a)) == a  # the result's JSON file carries it

        book.record(graded("a", 9.5, tests_sha="u" * 64))  # regraded: the tests now agree; the override stays
        assert book.result(WEEK, "a").task(1).autograded_score == 9.5  # type: ignore[union-attr]
        book.record(graded("a", 2.0, tests_sha="v" * 64))
        assert book.result(WEEK, "a").score == 12.5  # type: ignore[union-attr]
        fewer = graded("a", 2.0, tests_sha="w" * 64)
        fewer.task(1).max_score = 8.0  # new tests worth less than the override: it counts their maximum
        book.record(fewer)
        assert book.result(WEEK, "a").task(1).score == 8.0  # type: ignore[union-attr]

        book.set_override(WEEK, "a", 1, points=0, reason="Copied from the model answer", by="Ada")  # replaced
        assert book.result(WEEK, "a").score == 3.0  # type: ignore[union-attr]

        book.remove_override(WEEK, "a", 1)
        restored = book.result(WEEK, "a")
        assert restored is not None and restored.score == 5.0 and not restored.task(1).overridden
        assert "override_reason" not in result_json.to_dict(restored)["tasks"][0]  # no override, no key
        assert book.overrides(WEEK) == {}


@pytest.mark.parametrize(
    ("key", "task", "points", "reason", "says"),
    [
        ("a", 2, 1.0, "ok", "task 2 of week01 is marked by hand: give it a mark instead"),
        ("a", 1, 10.5, "ok", r"10\.5 points for task 1 of 'a' is outside 0\.\.10"),
        ("a", 1, -1.0, "ok", "outside 0..10"),
        ("a", 1, math.nan, "ok", "outside 0..10"),
        ("a", 1, 5.0, "   ", "needs a reason: the student reads it"),
        ("a", 9, 5.0, "ok", "has no task 9"),
        ("ghost", 1, 5.0, "ok", "no result for 'ghost' in week01: grade it before overriding"),
    ],
)
def test_an_override_that_cannot_stand_is_refused_saying_why(book: Gradebook, key: str, task: int, points: float,
                                                             reason: str, says: str) -> None:
    book.record(graded("a", 4.0))
    with pytest.raises(GradebookError, match=says):
        book.set_override(WEEK, key, task, points=points, reason=reason, by="Ada")
    assert book.overrides(WEEK) == {}


def test_removing_an_override_that_is_not_there_is_refused(book: Gradebook) -> None:
    book.record(graded("a", 4.0))
    with pytest.raises(GradebookError, match="task 1 of 'a' in week01 has no override to remove"):
        book.remove_override(WEEK, "a", 1)


@pytest.mark.parametrize(("language", "says"), [
    ("en", "Your instructor changed this task's points: 9.5 in place of the 4 the checks gave. Their reason:"),
    ("ja", "担当教員がこの課題の点数を変更しました。チェックによる4点に代わり9.5点です。理由:"),
])
def test_the_feedback_page_shows_the_overridden_points_and_the_reason(book: Gradebook, language: str,
                                                                      says: str) -> None:
    result = graded("a", 4.0)
    result.language = language
    book.record(result)
    book.set_override(WEEK, "a", 1, points=9.5, reason="test_fit's tolerance was <wrong>", by="Ada")
    page = render_feedback(book.result(WEEK, "a"), week_title="week01: Perceptrons")  # type: ignore[arg-type]
    assert escape(says) in page  # as the page writes it (an apostrophe is &#39;)
    assert '<div class="comment">test_fit&#39;s tolerance was &lt;wrong&gt;</div>' in page
    assert "<strong>9.5 / 10</strong>" in page and "Ada" not in page  # who overrode is the gradebook's


@pytest.mark.slow
def test_the_cli_overrides_and_report_writes_the_outputs_with_it(tmp_path: Path) -> None:
    """``autograder override FOLDER KEY TASK POINTS --reason ...`` writes the folder's gradebook;
    ``autograder report FOLDER`` then writes the result's JSON and feedback page with it."""
    out = tmp_path / "results"
    with Gradebook.open(out / "gradebook.sqlite") as book:
        book.record(graded("a", 4.0))
    given = run("override", str(out), "a", "1", "9.5", "--reason", "The tolerance was wrong",
                "--by", "Ada")
    assert given.returncode == 0, given.stderr
    assert "task 1 of a: 9.5 points, by Ada" in given.stderr and f"autograder report {out}" in given.stderr
    reported = run("report", str(out))
    assert reported.returncode == 0, reported.stderr
    document = json.loads((out / "a.json").read_text(encoding="utf-8"))
    assert document["score"] == 9.5 and document["tasks"][0]["override_reason"] == "The tolerance was wrong"
    page = next(out.rglob("a.html")).read_text(encoding="utf-8")
    assert "The tolerance was wrong" in page and "9.5 in place of the 4 the checks gave" in page
    with (out / "gradebook.csv").open(encoding="utf-8-sig", newline="") as sheet:
        [row] = list(csv.DictReader(sheet))
    assert (row["Task 1 (max 10)"], row["Total"]) == ("9.5", "9.5")


def test_moodles_feedback_comment_gives_the_overridden_points_and_the_reason(book: Gradebook) -> None:
    """The worksheet's and the Moodle sync's comment cell, beside the grade they fill."""
    book.record(graded("a", 4.0))
    book.set_override(WEEK, "a", 1, points=9.5, reason="The tolerance was <wrong>", by="Ada")
    comment = feedback_comment(book.result(WEEK, "a"), decimal=",")  # type: ignore[arg-type]
    assert ("<li>Task 1 (Perceptron): 9,5 / 10 (changed by the instructor from 4: The tolerance was &lt;wrong&gt;)"
            "</li>") in comment
