"""No CSV the project writes carries a live formula from a student or the LMS.

A Moodle full name that is a ``HYPERLINK`` formula built with ``CHAR()`` (no quotes, so it
survives Moodle's file-name cleaning) reaches every sheet through the export's folder
names; a loose notebook's file name is the student's own choice. Every writer escapes
them through ``formats.cells.spreadsheet_cell``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from autograder.course import Course, Task
from autograder.formats.spreadsheet_cells import FORMULA_STARTS, from_spreadsheet_cell, spreadsheet_cell
from autograder.formats.worksheet import write_worksheet
from autograder.grading.judge import base_result, empty_result
from autograder.interop.grades import to_nbgrader_grades_csv, to_otter_final_grades_csv
from autograder.manual import write_manual_sheet
from autograder.moodle.export import read_export
from autograder.results import Status
from autograder.submission import Submission
from tests.moodle.test_export import make_zip, notebook

FORMULA = "=HYPERLINK(CHAR(104)&CHAR(116)&CHAR(116)&CHAR(112)&CHAR(58)&CHAR(47)&CHAR(47)&CHAR(120),CHAR(120))"


@pytest.fixture
def submissions(tmp_path: Path) -> list[Submission]:
    export = make_zip(tmp_path / "export.zip", {
        f"{FORMULA}_400001_assignsubmission_file/week01.ipynb": notebook(),
        "-2+3 Smith_400002_assignsubmission_file/week01.ipynb": notebook(),
    })
    found = read_export(export)
    assert sorted(s.participant.full_name for s in found if s.participant) == sorted([FORMULA, "-2+3 Smith"])
    loose = Submission(origin="@SUM(1+1)*cmd.ipynb", key="=cmd", content=notebook())
    return [*found, loose]


def _cells(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8-sig")
    return [cell for row in csv.reader(text.splitlines()) for cell in row]


HOSTILE = ("HYPERLINK", "-2+3", "@SUM", "=cmd", "=1+1")


def _no_live_formula(path: Path) -> None:
    """No cell holding a student's or the LMS's text starts a formula (the tools' own
    constants, such as otter's ``--``, are theirs)."""
    live = [cell for cell in _cells(path) if cell.startswith(FORMULA_STARTS) and any(h in cell for h in HOSTILE)]
    assert live == [], f"{path.name}: {live}"


def test_every_sheet_escapes_names_and_file_names(course: Course, submissions: list[Submission],
                                                   tmp_path: Path) -> None:
    week = course.week("week01")
    results = []
    for submission in submissions:
        result = empty_result(week, base_result(week, submission))
        result.status = Status.ERROR
        result.messages.append("=1+1 in a message")
        results.append(result)
    write_worksheet(results=results, out=tmp_path / "worksheet.csv")
    to_nbgrader_grades_csv(results, tmp_path / "grades.csv")
    to_otter_final_grades_csv(results, tmp_path / "final_grades.csv")
    write_manual_sheet(submissions=submissions, tasks=[Task(number=1, points=5.0, manual=True, title="explain")],
                       csv_path=tmp_path / "manual.csv")
    for name in ("worksheet.csv", "grades.csv", "final_grades.csv", "manual.csv"):
        _no_live_formula(tmp_path / name)
    # the names are still there, shown as text
    assert "'" + FORMULA in _cells(tmp_path / "worksheet.csv")
    assert "'-2+3" in _cells(tmp_path / "grades.csv")  # the first name, split off as nbgrader does


def test_the_escape_round_trips() -> None:
    for text in (FORMULA, "+x1", "-x", "@a", "\tx", "\rx", "plain", "'quoted", ""):
        assert from_spreadsheet_cell(spreadsheet_cell(text)) == text
        assert not spreadsheet_cell(text).startswith(FORMULA_STARTS)


def test_a_plain_number_stays_a_number_and_a_sum_does_not() -> None:
    """A negative adjustment in the marking sheet is a number a spreadsheet reads as one;
    ``-2+3`` is a formula."""
    assert spreadsheet_cell("-2.5") == "-2.5" and spreadsheet_cell("+3") == "+3"
    assert spreadsheet_cell("-2+3") == "'-2+3" and spreadsheet_cell("-2.5e3") == "'-2.5e3"


def test_the_services_attempts_sheet_escapes_the_lms_user_id() -> None:
    from autograder.service.routes.instructor import csv_cell
    assert next(csv.reader([csv_cell(FORMULA)])) == ["'" + FORMULA]
    assert next(csv.reader([csv_cell('a "quoted" id')])) == ['a "quoted" id']
