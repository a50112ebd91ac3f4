"""Our results as the grade spreadsheets nbgrader and otter write, column for column.

- nbgrader's ``nbgrader export`` (CsvExportPlugin): one row per submission with
  ``assignment, duedate, timestamp, student_id, last_name, first_name, email, raw_score,
  late_submission_penalty, score, max_score``; numbers as Python prints floats, missing
  values empty.
- otter's ``final_grades.csv`` (``otter grade``): ``file``, one column per question
  (sorted by name), ``total_points_earned, percent_correct, grading_status``; the first
  row is ``points-per-question`` with each question's points. Questions are our
  autograded tasks, named ``task<N>`` as ``export_otter`` names them; manual tasks are
  not otter questions and have no column, as in otter.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from autograder.formats.atomic import atomic_path
from autograder.formats.spreadsheet_cells import spreadsheet_cell
from autograder.results import Status, SubmissionResult

NBGRADER_COLUMNS = (
    "assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
    "raw_score", "late_submission_penalty", "score", "max_score",
)
OTTER_FILE, OTTER_TOTAL = "file", "total_points_earned"
OTTER_PERCENT, OTTER_STATUS = "percent_correct", "grading_status"
OTTER_POINTS_ROW = "points-per-question"
FAILED = (Status.ERROR, Status.TIMEOUT)  # otter's "catastrophic failure": zero everywhere


def question_name(task: int) -> str:
    """A task's column name in otter's grade spreadsheet."""
    return f"task{task}"


def split_name(full_name: str | None) -> tuple[str, str]:
    """(first, last) from Moodle's full name: the last word is taken as the last name."""
    parts = (full_name or "").strip().rsplit(" ", 1)
    return (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])


def _student_id(result: SubmissionResult) -> str:
    participant = result.participant
    return (participant.participant_id if participant and participant.participant_id else None) or result.key


def to_nbgrader_grades_csv(results: Iterable[SubmissionResult], path: Path, *, duedate: str = "") -> Path:
    """Write ``grades.csv`` as ``nbgrader export`` does. A submission that is missing
    scores 0 with an empty timestamp, as nbgrader scores a student who submitted nothing."""
    with atomic_path(path) as partial, partial.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(NBGRADER_COLUMNS)
        for result in results:
            first, last = split_name(result.participant.full_name if result.participant else None)
            raw = 0.0 if result.status is Status.NOT_SUBMITTED else float(result.score)
            writer.writerow([
                result.week, duedate, "", *map(spreadsheet_cell, (_student_id(result), last, first)), "",
                str(raw), str(0.0), str(max(0.0, raw)), str(float(result.max_score)),
            ])
    return path


def to_otter_final_grades_csv(results: Iterable[SubmissionResult], path: Path) -> Path:
    """Write ``final_grades.csv`` as ``otter grade`` does (see the module docstring)."""
    results = list(results)
    possible: dict[str, float] = {}
    for result in results:
        for task in result.tasks:
            if not task.manual:
                possible[question_name(task.task)] = float(task.max_score)
    questions = sorted(possible)
    total_possible = sum(possible.values())
    with atomic_path(path) as partial, partial.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([OTTER_FILE, *questions, OTTER_TOTAL, OTTER_PERCENT, OTTER_STATUS])
        if questions:
            writer.writerow([OTTER_POINTS_ROW, *(possible[q] for q in questions), total_possible, 1, "--"])
        for result in results:
            failed = result.status in FAILED or result.status is Status.NOT_SUBMITTED
            scores = {question_name(t.task): float(t.score) for t in result.tasks if not t.manual}
            earned = 0.0 if failed else sum(scores.get(q, 0.0) for q in questions)
            percent = round(earned / total_possible, 4) if total_possible else 0
            status = "Completed" if not failed else (result.messages[0] if result.messages else result.status.value)
            writer.writerow([spreadsheet_cell(result.submission),
                             *(0.0 if failed else scores.get(q, 0.0) for q in questions),
                             earned, percent, spreadsheet_cell(status)])
    return path
