"""From a Moodle export to a filled worksheet and a feedback zip, for every layout.

Each case is an export in one of the layouts docs/LMS.md lists and the worksheet Moodle offers for
it. The results are made from the submissions (a score per participant) the way the
grading pipeline would; what is checked is that each grade lands in the right rows and
each feedback page in a folder Moodle's importer maps back to the same participant.
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.formats.feedback_zip import write_feedback_zip
from autograder.formats.worksheet import fill_worksheet
from autograder.hand_ins import collect
from autograder.results import Status, SubmissionResult, TaskResult

HEADER = 'Identifier,"Full name",Status,Group,Grade,"Maximum Grade","Last modified (grade)","Feedback comments"\n'


def notebook(points: int) -> bytes:
    nb = nbformat.v4.new_notebook(metadata={"autograder": {"week": "week01"}})
    nb.cells = [nbformat.v4.new_code_cell(f"POINTS = {points}")]
    return nbformat.writes(nb).encode()


def row(participant: int, name: str, group: str = "") -> str:
    return f'"Participant {participant}","{name}",Submitted,"{group}",,100.00,-,\n'


# layout -> (export members, worksheet, expected grade per participant id)
LAYOUTS = {
    "4.1 folders": (
        {"Jane Doe_11_assignsubmission_file/week01.ipynb": notebook(90),
         "山田 太郎_12_assignsubmission_file/sub/week01.ipynb": notebook(70),
         "Zoë Ångström_13_assignsubmission_onlinetext/onlinetext.html": b"<p>text</p>"},
        row(11, "Jane Doe") + row(12, "山田 太郎") + row(13, "Zoë Ångström") + row(14, "No Show"),
        {"11": "90.00", "12": "70.00", "13": "", "14": ""},
    ),
    "3.x folders": (
        {"Jane Doe_11_assignsubmission_file_/week01.ipynb": notebook(90),
         "Group A-Ann Poe_12_assignsubmission_file_/week01.ipynb": notebook(60)},
        row(11, "Jane Doe") + row(12, "Ann Poe", "Group A"),
        {"11": "90.00", "12": "60.00"},
    ),
    "flat files": (
        {"Jane Doe_11_assignsubmission_file_week01.ipynb": notebook(90),
         "João Conceição_12_assignsubmission_file_my_week01.ipynb": notebook(50)},
        row(11, "Jane Doe") + row(12, "João Conceição"),
        {"11": "90.00", "12": "50.00"},
    ),
    "blind marking": (
        {"Participant_11_assignsubmission_file/week01.ipynb": notebook(90),
         "Participant_12_assignsubmission_file/week01.ipynb": notebook(40)},
        row(11, "Participant 11") + row(12, "Participant 12"),
        {"11": "90.00", "12": "40.00"},
    ),
    "teams": (
        {"Group A_17_assignsubmission_file/week01.ipynb": notebook(80),
         "Default group_assignsubmission_file/week01.ipynb": notebook(30)},
        row(11, "Jane Doe", "Group A") + row(12, "John Roe", "Group A") + row(13, "Solo Act", "Default group"),
        {"11": "80.00", "12": "80.00", "13": "30.00"},
    ),
}


def grade(submission) -> SubmissionResult:
    """What the pipeline would produce: the notebook's POINTS as the only task's score."""
    status, score = (submission.status, 0.0) if submission.status else (Status.GRADED, 0.0)
    if submission.content is not None:
        source = nbformat.reads(submission.content.decode(), as_version=4).cells[0].source
        score = float(source.split("=")[1])
    return SubmissionResult(
        submission=submission.origin,
        key=submission.key,
        status=status,
        tasks=[TaskResult(task=1, score=score, max_score=100)],
        participant=submission.participant,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_round_trip(tmp_path: Path, layout: str) -> None:
    members, worksheet_rows, expected = LAYOUTS[layout]
    export = tmp_path / "course-week 1-42.zip"
    with zipfile.ZipFile(export, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    worksheet = tmp_path / "grades.csv"
    worksheet.write_text(HEADER + worksheet_rows, encoding="utf-8")

    results = [grade(s) for s in collect([export], week="week01")]
    fill_worksheet(worksheet=worksheet, results=results, out=tmp_path / "filled.csv")
    zipped = write_feedback_zip(
        results=results,
        pages={r.key: f"<p>{r.score}</p>" for r in results if r.status is Status.GRADED},
        out=tmp_path / "feedback.zip",
    )

    filled = list(csv.DictReader(io.StringIO((tmp_path / "filled.csv").read_text(encoding="utf-8"))))
    assert {r["Identifier"].split()[-1]: r["Grade"] for r in filled} == expected
    by_key = {r.key: r for r in results}
    for key, name in zipped.written.items():
        info = name.split("/")[0].split("_", 4)  # explode('_', $part, 5)
        participant = by_key[key].participant
        assert len(info) >= 4 and info[1].isdigit() and info[2:4] == ["assignsubmission", "file"]
        assert info[1] == (participant.participant_id or participant.group_id)
    assert set(zipped.written) | set(zipped.skipped) == set(by_key)
