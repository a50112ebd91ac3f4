"""The ``autograder`` command end to end, as a subprocess, on a small Moodle export."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autograder.course import normalise_week_name
from autograder.exceptions import CourseError

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "week01"
AUTOGRADER = [sys.executable, "-m", "autograder"]

HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
          "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*AUTOGRADER, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, Path]:
    """A three-student 4.1+ export and its worksheet (semicolons, decimal comma, BOM)."""
    folder = tmp_path_factory.mktemp("moodle")
    zip_path = folder / "ML101-Week 1-42.zip"
    people = [("Zoë Müller", 201, "correct_loop_eta_y_x.ipynb"), ("山田 太郎", 202, "wrong_no_bias.ipynb"),
              ("Nguyễn Thị Minh", 203, "untouched_stub.ipynb")]
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, pid, fixture in people:
            z.writestr(f"{name}_{pid}_assignsubmission_file/week01.ipynb", (FIXTURES / fixture).read_bytes())
    text = io.StringIO()
    writer = csv.writer(text, delimiter=";", lineterminator="\r\n")
    writer.writerow(HEADER)
    for name, pid, _ in people:
        writer.writerow([f"Participant {pid}", name, f"s{pid}@example.edu", "Submitted for grading", "",
                         "100,00", "Yes", "Friday, 20 November 2026, 11:41 PM", "-", ""])
    sheet = folder / "grades.csv"
    sheet.write_bytes(b"\xef\xbb\xbf" + text.getvalue().encode("utf-8"))
    return zip_path, sheet


def read_sheet(path: Path) -> list[dict[str, str]]:
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "the BOM is kept"
    return list(csv.DictReader(io.StringIO(raw[3:].decode("utf-8")), delimiter=";"))


@pytest.mark.sandbox
def test_grade_json_worksheet_feedback_and_rerun(export, tmp_path: Path):
    zip_path, sheet = export
    out = tmp_path / "results"
    first = run("grade", "week01", str(zip_path), "--worksheet", str(sheet), "--out", str(out), "--json", "--jobs", "1",
                "--allow-pending")  # tasks 3 and 4 are marked by hand: without it the grades stay blank
    assert first.returncode == 0, first.stderr
    results = json.loads(first.stdout)  # stdout is one JSON array and nothing else
    by_id = {r["participant"]["participant_id"]: r for r in results}
    assert by_id["201"]["score"] == 60 and by_id["201"]["status"] == "graded"
    assert by_id["202"]["tasks"][0]["score"] < 40 and by_id["202"]["tasks"][1]["score"] == 20
    assert by_id["203"]["status"] == "not_attempted"
    for r in results:
        assert {"submission", "status", "score", "max_score", "tasks", "tests", "submission_sha256",
                "grader_version"} <= r.keys()
        assert all({"name", "task", "score", "max_score", "output", "visibility"} <= t.keys() for t in r["tests"])
        assert [t["manual"] for t in r["tasks"]] == [False, False, True, True]
        assert (out / f"{r['key']}.json").is_file()

    rows = read_sheet(out / "grades.csv")
    assert [row["Identifier"] for row in rows] == ["Participant 201", "Participant 202", "Participant 203"]
    assert rows[0]["Grade"] == "60,00" and rows[0]["Last modified (grade)"] == "-"
    assert rows[0]["Feedback comments"]
    with zipfile.ZipFile(out / "feedback.zip") as z:
        names = z.namelist()
    assert "Zoë Müller_201_assignsubmission_file/feedback.html" in names
    assert (out / "report.html").is_file() and (out / "manual-marking.csv").is_file()

    again = run("grade", "week01", str(zip_path), "--out", str(out), "--json", "--jobs", "1")
    assert again.returncode == 0, again.stderr
    assert "3 unchanged submission(s)" in again.stderr
    assert [r["score"] for r in json.loads(again.stdout)] == [r["score"] for r in results]


@pytest.mark.sandbox
def test_manual_marks_merge_into_totals_worksheet_and_survive_regrade(export, tmp_path: Path):
    zip_path, sheet = export
    out = tmp_path / "results"
    assert run("grade", "week01", str(zip_path), "--out", str(out), "--jobs", "1").returncode == 0
    marking = out / "manual-marking.csv"
    text = marking.read_text(encoding="utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    for row in rows:
        if row["identifier"] == "Participant 201":
            row["points"], row["comment"] = ("15,5", "Good example") if row["task"] == "3" else ("20", "")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0].keys()))
    writer.writeheader()
    writer.writerows(rows)
    marking.write_text(buffer.getvalue(), encoding="utf-8")

    merged = run("merge-manual", "week01", str(marking), "--out", str(out), "--worksheet", str(sheet))
    assert merged.returncode == 0, merged.stderr
    # answer rows only: a group's row (no key) is not an answer
    unmarked = sum(1 for row in rows if row["key"] and row["identifier"] != "Participant 201")
    assert f"2 mark(s) stored; {unmarked} row(s) still unmarked" in merged.stderr
    assert read_sheet(out / "grades.csv")[0]["Grade"] == "95,50"
    assert [row["Grade"] for row in read_sheet(out / "grades.csv")[1:]] == ["", ""]  # still pending: left blank
    assert "not marked by hand yet" in merged.stderr
    regraded = run("grade", "week01", str(zip_path), "--out", str(out), "--json", "--regrade", "--jobs", "1")
    top = next(r for r in json.loads(regraded.stdout) if r["participant"]["participant_id"] == "201")
    assert top["score"] == 95.5 and top["tasks"][2]["comment"] == "Good example"


@pytest.mark.slow
def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path: Path):
    missing = run("grade", "week01", str(tmp_path / "nope.zip"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    wrong_week = run("grade", "week42", str(tmp_path))
    assert wrong_week.returncode == 2 and "week42" in wrong_week.stderr
    # a command of a nested group (export, moodle, i18n) says it the same way: one line, exit 2
    nested = run("export", "nbgrader", "week42", "--out", str(tmp_path / "out"))
    assert nested.returncode == 2 and nested.stderr.startswith("error: no week 'week42'"), nested.stderr
    assert "Traceback" not in nested.stderr and not (tmp_path / "out").exists()
    (tmp_path / "service.toml").write_text("[[sync]]\nweek = 1\n", encoding="utf-8")
    (tmp_path / "source").mkdir()
    bad_settings = run("serve", "--public-url", "https://grader.example.edu", "--course", str(tmp_path))
    assert bad_settings.returncode == 2 and "Traceback" not in bad_settings.stderr, bad_settings.stderr
    assert "[[sync]] entry 1 (week 1): week = 1 is not allowed here" in " ".join(bad_settings.stderr.split())


@pytest.mark.sandbox
def test_a_missing_sandbox_layer_is_said_once_and_grading_goes_on(tmp_path: Path):
    """Without bubblewrap on PATH the grader says so (once), never silently, and still grades."""
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap (nor anything else) on PATH
    result = subprocess.run([*AUTOGRADER, "grade", "week01", str(FIXTURES / "correct_loop_eta_y_x.ipynb"),
                             "--out", str(tmp_path / "out"), "--json", "--jobs", "1"],
                            cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("without these layers") == 1 and "bubblewrap" in result.stderr
    assert json.loads(result.stdout)[0]["score"] == 60


@pytest.mark.sandbox
def test_loose_notebooks_by_default_stay_out_of_the_moodle_results_folder(export, tmp_path: Path):
    import shutil

    course = tmp_path / "course"
    shutil.copytree(ROOT / "source" / "week01", course / "source" / "week01")
    shutil.copytree(ROOT / "assignments" / "week01", course / "assignments" / "week01")  # the given code
    zip_path, _ = export
    assert run("grade", "week01", str(zip_path), "--course", str(course), "--jobs", "1").returncode == 0
    moodle = course / "results" / "week01"
    before = sorted(p.name for p in moodle.iterdir())
    loose = run("grade", "week01", str(FIXTURES / "correct_loop_eta_y_x.ipynb"), "--course", str(course), "--jobs", "1")
    assert loose.returncode == 0, loose.stderr
    assert "60 / 100 (40 pending)" in loose.stdout and "pending/20" in loose.stdout  # not 0/20 as if final
    assert sorted(p.name for p in moodle.iterdir()) == before  # the Moodle batch's folder is untouched
    assert not (moodle / "correct_loop_eta_y_x.json").exists()
    loose_out = course / "results" / "week01-notebooks"
    assert (loose_out / "correct_loop_eta_y_x.json").is_file()
    own = (loose_out / "code" / "correct_loop_eta_y_x.py").read_text(encoding="utf-8")  # for the similarity section
    assert "def " in own and "load_iris()" not in own  # the student's code, not the given cells
    assert 'id="similarity"' in (loose_out / "report.html").read_text(encoding="utf-8")


@pytest.mark.sandbox
def test_merge_manual_finds_the_batch_its_sheet_came_from(tmp_path: Path):
    import shutil

    course = tmp_path / "course"
    shutil.copytree(ROOT / "source" / "week01", course / "source" / "week01")
    shutil.copytree(ROOT / "assignments" / "week01", course / "assignments" / "week01")
    graded = run("grade", "week01", str(FIXTURES / "correct_loop_eta_y_x.ipynb"), "--course", str(course),
                 "--jobs", "1")
    assert graded.returncode == 0, graded.stderr
    loose = course / "results" / "week01-notebooks"
    marking = loose / "manual-marking.csv"
    rows = list(csv.DictReader(io.StringIO(marking.read_text(encoding="utf-8-sig"))))
    for row in rows:
        row["points"] = "10"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0].keys()))
    writer.writeheader()
    writer.writerows(rows)
    marking.write_text(buffer.getvalue(), encoding="utf-8")

    merged = run("merge-manual", "week01", str(marking), "--course", str(course))
    assert merged.returncode == 0, merged.stderr
    assert f"{len(rows)} mark(s) stored; every row is marked" in merged.stderr
    assert not (course / "results" / "week01").exists()  # not a new, empty batch beside the real one
    assert json.loads((loose / "correct_loop_eta_y_x.json").read_text())["score"] == 60 + 10 * len(rows)

    downloaded = tmp_path / "Downloads" / "manual-marking.csv"  # the sheet moved away from its batch
    downloaded.parent.mkdir()
    shutil.copy(marking, downloaded)
    assert run("merge-manual", "week01", str(downloaded), "--course", str(course)).returncode == 0
    (course / "results" / "week01").mkdir()
    shutil.copy(loose / "gradebook.sqlite", course / "results" / "week01" / "gradebook.sqlite")
    ambiguous = run("merge-manual", "week01", str(downloaded), "--course", str(course))
    assert ambiguous.returncode == 2 and "--out FOLDER" in ambiguous.stderr, ambiguous.stderr


def test_a_name_that_is_no_week_says_how_week_names_are_written_without_naming_six_weeks() -> None:
    with pytest.raises(CourseError) as caught:
        normalise_week_name("week16v1")
    assert "week07" in str(caught.value) and "week06" not in str(caught.value)
    assert normalise_week_name("7") == "week07"


@pytest.mark.slow
def test_report_and_merge_manual_read_a_grading_services_database(tmp_path: Path, database_url: str | None):
    """``serve --database`` keeps the service's gradebook in that database: ``report --database``
    writes the outputs of its attempts into a folder, and ``merge-manual --database`` stores
    hand marks there (keys ``attempt-<id>``), as both do with the data folder's SQLite file."""
    from autograder.results import Participant, Status, SubmissionResult, TaskResult
    from autograder.service.policy import WeekPolicy
    from autograder.service.store import Store

    database = database_url or f"sqlite:///{tmp_path / 'service.sqlite'}"
    tasks = [TaskResult(task=1, score=40, max_score=40), TaskResult(task=2, score=20, max_score=20),
             TaskResult(task=3, score=0, max_score=20, manual=True, answer_sha256="a3"),
             TaskResult(task=4, score=0, max_score=20, manual=True, answer_sha256="a4")]
    with Store(tmp_path / "data", database=database) as store:
        attempt = store.submit(context="iss|1|course", user="ann", week="week01", content=b'{"x": 1}',
                               policy=WeekPolicy(), now=datetime.now(UTC))
        assert store.claim() is not None
        store.record_result(attempt.id, SubmissionResult(
            submission="week01 attempt 1", key="x", status=Status.GRADED, tasks=tasks, submission_sha256="h",
            tests_sha256="t", grader_version="v", participant=Participant(participant_id="ann", full_name="Ann")),
            week_title="week01: The perceptron")
    out = tmp_path / "service-report"
    reported = run("report", str(out), "--database", database)
    assert reported.returncode == 0, reported.stderr
    assert json.loads((out / f"{attempt.key}.json").read_text())["score"] == 60
    assert "Ann" in (out / "report.html").read_text(encoding="utf-8")

    sheet = out / "manual-marking.csv"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["key", "task", "points", "comment", "answer_sha256"])
        writer.writeheader()
        writer.writerow({"key": attempt.key, "task": "3", "points": "15", "comment": "Good.", "answer_sha256": "a3"})
    merged = run("merge-manual", "week01", str(sheet), "--database", database)
    assert merged.returncode == 0, merged.stderr
    assert "1 mark(s) stored; 1 row(s) still unmarked" in merged.stderr
    assert json.loads((out / f"{attempt.key}.json").read_text())["score"] == 75  # the outputs beside the sheet
    with Store(tmp_path / "data", database=database) as store:  # shown at once, its score noted at the next start
        assert store.attempt(attempt.id).score == 75 and store.refresh_scores() == 1  # type: ignore[union-attr]
    assert not (tmp_path / "data" / "gradebook.sqlite").exists()  # nothing went to a file of the data folder

    not_a_url = run("report", str(out), "--database", "service.db")
    assert not_a_url.returncode == 2 and "is not a database URL" in not_a_url.stderr
