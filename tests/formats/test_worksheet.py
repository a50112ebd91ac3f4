"""Filling Moodle's grading worksheet: only Grade and Feedback comments change, byte for byte.

The worksheets below are written the way Moodle's ``csv_export_writer`` (PHP ``fputcsv``)
writes them: fields with spaces, commas or quotes quoted, ``\\n`` line endings, grades in
the locale's number format.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from autograder.exceptions import WorksheetError
from autograder.formats.worksheet import feedback_comment, fill_worksheet, write_worksheet
from autograder.results import Participant, Status, SubmissionResult, TaskResult

ENGLISH = (
    'Identifier,"Full name","Email address",Status,Grade,"Maximum Grade","Grade can be changed",'
    '"Last modified (submission)","Online text","Last modified (grade)","Feedback comments"\n'
    '"Participant 123456","Jane Doe",jane@example.com,"Submitted for grading",,100.00,Yes,'
    '"Monday, 6 May 2024, 10:15 AM","<p>line one</p>\n<p>line ""two""</p>","Monday, 6 May 2024, 11:00 AM",\n'
    '"Participant 123457","John Roe",john@example.com,"No submission",,100.00,Yes,-,,-,\n'
    '"Participant 123458","Ann O\'Poe",ann@example.com,"Submitted for grading",55.00,100.00,Yes,'
    '"Tuesday, 7 May 2024, 9:00 AM",,"Tuesday, 7 May 2024, 9:30 AM","<p>Earlier feedback</p>"\n'
)

# Downloaded from a Portuguese/Japanese-locale site, re-saved by a spreadsheet: BOM, ";",
# decimal comma, CRLF, and a Group column (team assignment).
LOCALE = (
    "\ufeffIdentifier;Full name;Email address;Status;Group;Grade;Maximum Grade;"
    "Last modified (submission);Last modified (grade);Feedback comments\r\n"
    "Participant 200001;山田 太郎;taro@example.jp;Enviado;Group A;;100,00;6 maio 2024;-;\r\n"
    "Participant 200002;João Conceição;joao@example.pt;Enviado;Group A;;100,00;6 maio 2024;-;\r\n"
    "Participant 200003;Zoë Ångström;zoe@example.se;Enviado;Group B;;100,00;6 maio 2024;-;\r\n"
)


def result(key: str, participant: Participant | None, scores=(40.0, 45.0), status=Status.GRADED) -> SubmissionResult:
    tasks = [
        TaskResult(task=1, score=scores[0], max_score=50, title="the perceptron update"),
        TaskResult(task=2, score=scores[1], max_score=50, title="learning rate"),
    ]
    return SubmissionResult(submission=key, key=key, status=status, tasks=tasks, participant=participant)


def rows_of(text: str, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter=delimiter))


def write(tmp_path: Path, text: str, name: str = "grades.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_fills_grade_and_feedback_and_keeps_every_other_byte(tmp_path: Path) -> None:
    sheet = write(tmp_path, ENGLISH)
    jane = result("participant-123456", Participant(participant_id="123456", full_name="Jane Doe"))
    broken = result("participant-123457", Participant(participant_id="123457", full_name="John Roe"),
                    status=Status.ERROR)
    report = fill_worksheet(worksheet=sheet, results=[jane, broken], out=tmp_path / "out.csv")

    assert report.filled == {"participant-123456": ["Participant 123456"]}
    assert "status error" in report.skipped["participant-123457"]
    before, after = rows_of(ENGLISH), rows_of((tmp_path / "out.csv").read_text(encoding="utf-8"))
    assert len(after) == len(before) and after[0] == before[0]
    assert after[1][4] == "85.00"
    assert after[1][10] == feedback_comment(jane)
    assert after[1][:4] + after[1][5:10] == before[1][:4] + before[1][5:10]  # Last modified (grade) too
    assert after[2:] == before[2:]  # the error row and the ungraded row untouched
    out_lines = (tmp_path / "out.csv").read_text(encoding="utf-8").split("\n")
    in_lines = ENGLISH.split("\n")
    assert out_lines[0] == in_lines[0] and out_lines[3:] == in_lines[3:]  # raw bytes, quoting included
    # Moodle's own quoting (fputcsv): the new feedback holds spaces, so it is quoted.
    assert out_lines[2].endswith(',"Monday, 6 May 2024, 11:00 AM","' + feedback_comment(jane).replace('"', '""') + '"')


def test_nothing_to_fill_writes_the_same_bytes(tmp_path: Path) -> None:
    for text in (ENGLISH, LOCALE):
        sheet = write(tmp_path, text)
        fill_worksheet(worksheet=sheet, results=[], out=tmp_path / "out.csv")
        assert (tmp_path / "out.csv").read_bytes() == text.encode("utf-8")


def test_bom_semicolons_decimal_comma_japanese_name_and_teams(tmp_path: Path) -> None:
    sheet = write(tmp_path, LOCALE)
    team_a = result("group-17", Participant(group_id="17", group_name="Group A"), scores=(40.0, 45.5))
    report = fill_worksheet(worksheet=sheet, results=[team_a], out=tmp_path / "out.csv")

    raw = (tmp_path / "out.csv").read_bytes()
    assert raw.startswith("\ufeff".encode()) and raw.count(b"\r\n") == 4 and b"\n" not in raw.replace(b"\r\n", b"")
    after = rows_of(raw.decode("utf-8"), ";")
    assert report.filled == {"group-17": ["Participant 200001", "Participant 200002"]}
    assert [row[5] for row in after[1:]] == ["85,50", "85,50", ""]
    assert after[1][1] == "山田 太郎" and after[1][8] == "-"
    assert "85,5 / 100" in after[1][9]
    assert after[3] == rows_of(LOCALE, ";")[3]


def test_grades_are_scaled_to_moodles_maximum(tmp_path: Path) -> None:
    sheet = write(tmp_path, LOCALE.replace("100,00", "10,0"))
    taro = result("participant-200001", Participant(participant_id="200001", full_name="山田 太郎"))
    fill_worksheet(worksheet=sheet, results=[taro], out=tmp_path / "out.csv")

    assert rows_of((tmp_path / "out.csv").read_text(encoding="utf-8"), ";")[1][5] == "8,5"


def test_a_team_read_without_the_teams_flag_still_reaches_its_members(tmp_path: Path) -> None:
    # "Group B_18_..." read as an individual: id 18, name "Group B"; no row "Participant 18".
    sheet = write(tmp_path, LOCALE)
    misread = result("participant-18", Participant(participant_id="18", full_name="Group B"))
    report = fill_worksheet(worksheet=sheet, results=[misread], out=tmp_path / "out.csv")

    assert report.filled == {"participant-18": ["Participant 200003"]}


def test_default_group_and_unknown_rows(tmp_path: Path) -> None:
    text = LOCALE.replace(";Group B;", ";Default group;")
    sheet = write(tmp_path, text)
    default = result("default-group", Participant(group_name="Default group"))
    stranger = result("participant-9", Participant(participant_id="9", full_name="Nobody"))
    plain = result("alice", None)
    report = fill_worksheet(worksheet=sheet, results=[default, stranger, plain], out=tmp_path / "out.csv")

    assert report.filled == {"default-group": ["Participant 200003"]}
    assert report.skipped["participant-9"] == "no row 'Participant 9' in the worksheet"
    assert "no participant" in report.skipped["alice"]


def test_missing_required_columns_are_named(tmp_path: Path) -> None:
    sheet = write(tmp_path, 'Identifier,"Full name",Grade\n"Participant 1","A B",\n')
    with pytest.raises(WorksheetError, match="lacks 'Last modified \\(grade\\)'"):
        fill_worksheet(worksheet=sheet, results=[], out=tmp_path / "out.csv")


def test_a_scale_cannot_take_points(tmp_path: Path) -> None:
    sheet = write(tmp_path, 'Identifier,Grade,Scale,"Last modified (grade)"\n"Participant 1",,Good,-\n')
    with pytest.raises(WorksheetError, match="scale"):
        fill_worksheet(worksheet=sheet, results=[], out=tmp_path / "out.csv")


def test_a_worksheet_that_is_not_utf8_is_refused_with_advice(tmp_path: Path) -> None:
    sheet = tmp_path / "grades.csv"
    sheet.write_bytes(LOCALE.removeprefix("\ufeff").encode("cp1252", errors="replace").replace(b"?", b"\xe3"))
    with pytest.raises(WorksheetError, match="CSV UTF-8"):
        fill_worksheet(worksheet=sheet, results=[], out=tmp_path / "out.csv")


def test_a_new_worksheet_from_participant_ids(tmp_path: Path) -> None:
    jane = result("participant-123456", Participant(participant_id="123456", full_name="Jane Doe"))
    absent = result("participant-7", Participant(participant_id="7", full_name="山田 花子"),
                    scores=(0.0, 0.0), status=Status.NOT_SUBMITTED)
    team = result("group-17", Participant(group_id="17", group_name="Group A"))
    report = write_worksheet(results=[jane, absent, team], out=tmp_path / "new.csv")

    rows = rows_of((tmp_path / "new.csv").read_text(encoding="utf-8"))
    assert rows[0] == ["Identifier", "Full name", "Grade", "Last modified (grade)", "Feedback comments"]
    assert rows[1][:4] == ["Participant 123456", "Jane Doe", "85.00", ""]
    assert rows[2] == ["Participant 7", "山田 花子", "", "", ""]
    assert "pass it" in report.skipped["group-17"]
    assert set(report.filled) == {"participant-123456"}


def test_feedback_comment_is_a_short_html_summary() -> None:
    r = result("k", None, scores=(40.0, 7.5))
    r.tasks.append(TaskResult(task=3, score=8, max_score=10, manual=True, title="discuss <bias>", comment="clear",
                              marked=True))

    text = feedback_comment(r, decimal=",")
    assert text.startswith("<p>Autograder: <strong>55,5 / 110</strong></p>")
    assert "<li>Task 2 (learning rate): 7,5 / 50</li>" in text
    assert "<li>Task 3 (discuss &lt;bias&gt;): 8 / 10 (marked by hand: clear)</li>" in text
    assert "\n" not in text


def test_feedback_comment_writes_quotes_as_it_always_has() -> None:
    """The sync pushes a comment again when its bytes change: quotes stay ``&#x27;``/``&quot;``."""
    r = result("k", None)
    r.tasks[0] = TaskResult(task=1, score=1, max_score=2, manual=True, marked=True, title="scikit-learn's Perceptron",
                            comment='a "fair" try &#39;')

    assert ("<li>Task 1 (scikit-learn&#x27;s Perceptron): 1 / 2 (marked by hand: a &quot;fair&quot; try "
            "&amp;#39;)</li>") in feedback_comment(r)


def test_a_row_is_filled_once(tmp_path: Path) -> None:
    sheet = write(tmp_path, ENGLISH)
    jane = Participant(participant_id="123456", full_name="Jane Doe")
    report = fill_worksheet(
        worksheet=sheet, results=[result("participant-123456", jane), result("participant-123456-2", jane)],
        out=tmp_path / "out.csv",
    )

    assert list(report.filled) == ["participant-123456"]
    assert report.skipped["participant-123456-2"] == "its rows were already filled from participant-123456"


def test_a_grade_with_tasks_still_to_mark_by_hand_is_left_blank_unless_allowed(tmp_path: Path) -> None:
    sheet = write(tmp_path, ENGLISH)
    jane = result("participant-123456", Participant(participant_id="123456", full_name="Jane Doe"))
    jane.tasks.append(TaskResult(task=3, score=0, max_score=20, manual=True, title="discuss"))

    report = fill_worksheet(worksheet=sheet, results=[jane], out=tmp_path / "out.csv")
    assert report.filled == {} and "task 3 (20 points) not marked by hand yet" in report.skipped[jane.key]
    assert "--allow-pending" in report.skipped[jane.key]
    assert rows_of((tmp_path / "out.csv").read_text(encoding="utf-8"))[1][4] == ""  # not 85 as if final

    allowed = fill_worksheet(worksheet=sheet, results=[jane], out=tmp_path / "allowed.csv", allow_pending=True)
    row = rows_of((tmp_path / "allowed.csv").read_text(encoding="utf-8"))[1]
    assert allowed.filled and row[4] == "70.83"  # 85 of 120, scaled to Moodle's 100
    assert "Task 3 (discuss): pending marking by hand / 20" in row[10]

    new = write_worksheet(results=[jane], out=tmp_path / "new.csv")
    assert rows_of((tmp_path / "new.csv").read_text(encoding="utf-8"))[1][2] == "" and jane.key in new.skipped

    jane.tasks[2].score, jane.tasks[2].marked = 15, True
    fill_worksheet(worksheet=sheet, results=[jane], out=tmp_path / "marked.csv")
    assert rows_of((tmp_path / "marked.csv").read_text(encoding="utf-8"))[1][4] == "83.33"
