"""The one publishing step (``autograder/publish.py``): the batch and the service render a
result's files with the same artifacts, byte for byte, and ``Scores`` decides what an LMS is
given while the caller's sink sends it."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from autograder.batch import write_outputs
from autograder.course import Course
from autograder.publish import Edition, Publisher, Score, Scores, attempt_page, publish_attempt
from autograder.report import render_feedback
from autograder.results import Participant, Status, SubmissionResult, TaskResult
from autograder.results import TestResult as TestRecord  # not collected as a test class


def a_result(key: str, *, marked: bool = False) -> SubmissionResult:
    return SubmissionResult(
        f"{key}.ipynb", key, Status.GRADED, week="week01",
        tasks=[TaskResult(1, 3.0, 4.0), TaskResult(2, 5.0 if marked else 0.0, 6.0, manual=True, marked=marked)],
        tests=[TestRecord("test_fit", 1, 3.0, 4.0, "fit converges")],
        participant=Participant(full_name="Alice <b>"))


def test_the_service_publishes_an_attempt_as_the_batch_publishes_a_submission(course: Course, tmp_path: Path) -> None:
    week = course.week("week01")
    result = a_result("attempt-7")
    (tmp_path / "batch").mkdir()
    write_outputs(week, [result], tmp_path / "batch")
    json_path, html_path = publish_attempt(tmp_path / "data", course, result, week_title=week.label())
    assert (json_path, html_path) == (tmp_path / "data/results/week01/attempt-7.json",
                                      tmp_path / "data/results/week01/attempt-7.html")
    assert sorted(p.name for p in json_path.parent.iterdir()) == ["attempt-7.html", "attempt-7.json"]
    assert json_path.read_bytes() == (tmp_path / "batch/attempt-7.json").read_bytes()
    assert html_path.read_bytes() == (tmp_path / "batch/feedback/attempt-7.html").read_bytes()
    assert attempt_page(course, result, week_title=week.label()) == html_path.read_text(encoding="utf-8")


class Collected:
    """A sink that keeps what it is sent (an LMS client sends it instead)."""

    def __init__(self) -> None:
        self.scores: list[Score] = []

    def send(self, scores: Sequence[Score]) -> None:
        self.scores.extend(scores)


def test_scores_give_no_grade_while_a_hand_mark_is_pending_unless_allowed(course: Course, tmp_path: Path) -> None:
    week = course.week("week01")
    edition = Edition.of(week, [a_result("bob"), a_result("alice", marked=True)], tmp_path)
    for allow_pending, pending_note in ((False, "the grade follows once it is."), (True, "this grade is provisional.")):
        sink = Collected()
        outputs = Publisher([Scores(sink, allow_pending=allow_pending)]).publish(edition)
        assert [(s.result.key, s.graded) for s in sink.scores] == [("alice", True), ("bob", allow_pending)]
        alice, bob = sink.scores
        assert "not marked yet" not in alice.comment
        assert bob.comment.endswith(f"<p>Task 2 (6 points) is marked by hand and not marked yet: {pending_note}</p>")
        assert bob.page() == render_feedback(bob.result, week_title=week.label(), week=week)
        assert list(tmp_path.iterdir()) == [] and outputs.report is None  # scores only: no file written


def test_the_batch_writes_a_gradebook_csv_a_spreadsheet_opens_with_names_tasks_totals_and_status(
        course: Course, tmp_path: Path) -> None:
    week = course.week("week01")
    graded = a_result("z-key", marked=True)
    graded.participant = Participant(participant_id="123456", full_name="Zoé 山田")
    pending = a_result("b-key")
    pending.participant = Participant(participant_id="777", full_name='=HYPERLINK("http://x.test","a")')
    error = SubmissionResult("c.ipynb", "c-key", Status.ERROR, week="week01",
                             tasks=[TaskResult(1, 0.0, 4.0), TaskResult(2, 0.0, 6.0, manual=True)])
    outputs = write_outputs(week, [graded, pending, error], tmp_path)
    assert outputs.gradebook == tmp_path / "gradebook.csv"
    raw = outputs.gradebook.read_bytes()
    assert raw.startswith("\ufeff".encode())  # Excel reads it as UTF-8
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows == [
        ["Name", "LMS id", "Email", "Task 1 (max 4)", "Task 2 (max 6)", "Total", "Maximum", "Status", "Pending points"],
        ["'=HYPERLINK(\"http://x.test\",\"a\")", "777", "", "3", "", "3", "10", "pending hand marks", "6"],
        ["c-key", "", "", "0", "", "0", "10", "error", "6"],
        ["Zoé 山田", "123456", "", "3", "5", "8", "10", "graded", "0"],
    ]
