"""`autograder moodle sync` against the stand-in Moodle (conftest.py) over loopback HTTP.

The example class is graded once (module fixture, about a minute); each test starts from a
copy of that run's results folder and of the site's state after it, so it pays only for
what it changes.
"""

from __future__ import annotations

import copy
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from autograder.batch import GradingOptions
from autograder.cli import app
from autograder.course import Course
from autograder.exceptions import AutograderError, MoodleServiceError
from autograder.gradebook import FILENAME, Gradebook
from autograder.moodle_ws.sync import FILES_DIR, SyncReport, _held_by_hand, read_token, sync, watch
from autograder.moodle_ws.sync_state import SyncState
from autograder.moodle_ws.webservice import MoodleClient, RemoteGrade, flatten
from tests.helpers import marks_its_users

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "0123456789abcdef0123456789abcdef"  # any token, for the tests that need no server
FIXTURES = ROOT / "tests" / "fixtures" / "week01"
GRADED = {101, 102, 103, 104, 105, 106, 107, 108, 110, 111}  # 109's notebook is broken, 112 handed in online text


@pytest.fixture(scope="module")
@marks_its_users(pytest.mark.sandbox)
def first(server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, SyncReport]:
    """The example class synced once: the site after it, the results folder, the report."""
    site = server.example()
    out = tmp_path_factory.mktemp("first") / "out"
    report = run(server, out)
    return copy.deepcopy(site), out, report


def run(server: Any, out: Path, *, dry_run: bool = False) -> SyncReport:
    week = Course.locate(ROOT).week("week01")
    with MoodleClient(server.url, server.token) as client:
        return sync(week, client, 7, GradingOptions(out_dir=out), dry_run=dry_run)


def after_first(server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> tuple[Any, Path]:
    """A copy of the site and the results folder as the first sync left them."""
    site, out, _ = first
    copied = tmp_path / "out"
    shutil.copytree(out, copied)
    fresh = server.use(copy.deepcopy(site))
    fresh.calls.clear()
    return fresh, copied


def never_synced(server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> tuple[Any, Path]:
    """A site nobody graded, and a results folder whose gradebook knows the grades but not the
    sync (so grading is taken from the gradebook and everything else happens again)."""
    _, copied = after_first(server, first, tmp_path)
    with sqlite3.connect(copied / FILENAME) as db:
        db.execute("DELETE FROM moodle_sync")
    shutil.rmtree(copied / FILES_DIR)
    return server.example(), copied


def test_full_sync_of_the_example_class(first: tuple[Any, Path, SyncReport]) -> None:
    site, out, report = first
    assert report.complete and report.graded == 11  # 112 has nothing to grade
    assert {p.userid for p in report.pushed} == GRADED
    assert set(site.grades) == GRADED
    assert site.calls.count("mod_assign_save_grades") == 1  # one call for the batch
    for userid in GRADED:  # week 1's tasks 3 and 4 are marked by hand: no grade yet, and the comment says so
        grade = site.grades[userid]
        assert grade.grade == -1
        assert grade.comment is not None and grade.comment[1] == 1  # HTML
        assert "Task 3, 4 (40 points) is marked by hand and not marked yet" in grade.comment[0]
        assert set(grade.files) == {"feedback.html"} and b"<html" in grade.files["feedback.html"].lower()
    assert "status error" in report.left["Αλέξανδρος Παπαδόπουλος"]
    assert "no .ipynb notebook handed in" in report.left["Mary O'Brien"]
    with Gradebook.open(out / FILENAME) as book:  # the same gradebook `grade` keeps, with names
        names = {r.participant.full_name for r in book.results("week01") if r.participant}
    assert "山田 太郎" in names and len(names) == 12


def test_a_second_sync_pushes_nothing(server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    before = copy.deepcopy(site.grades)
    report = run(server, out)
    assert report.complete and report.pushed == [] and report.graded == 0 and report.fetched == []
    assert report.unchanged == len(GRADED)
    assert "mod_assign_save_grades" not in site.calls and site.grades == before


def written(out: Path) -> dict[str, int]:
    """Each output file's modification time (not the gradebook, nor the sync's lock)."""
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*")
            if p.is_file() and not p.name.startswith((FILENAME, ".moodle-sync"))}


def test_a_sync_with_nothing_new_rewrites_no_output(server: Any, first: tuple[Any, Path, SyncReport],
                                                    tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    before = written(out)
    assert "report.html" in before and "feedback/moodle-user-101.html" in before
    report = run(server, out)
    assert report.complete and report.pushed == [] and report.graded == 0
    assert written(out) == before


def test_marks_complete_push_the_grade_scaled_to_the_maximum(server: Any, first: tuple[Any, Path, SyncReport],
                                                             tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    with Gradebook.open(out / FILENAME) as book:
        book.set_manual("week01", "moodle-user-101", 3, points=20, comment="clear")
        book.set_manual("week01", "moodle-user-101", 4, points=10, comment="")
        score = next(r for r in book.results("week01") if r.key == "moodle-user-101").score
    before = written(out)
    report = run(server, out)
    assert [p.userid for p in report.pushed] == [101]
    assert site.grades[101].grade == pytest.approx(score * 10 / 100)  # the week is out of 100, Moodle's of 10
    assert site.grades[101].comment and "not marked yet" not in site.grades[101].comment[0]
    assert written(out)["report.html"] != before["report.html"]  # pushed: the outputs show the marks too


def test_a_changed_submission_is_fetched_graded_and_pushed(server: Any, first: tuple[Any, Path, SyncReport],
                                                           tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    old_page = site.grades[110].files["feedback.html"]
    site.hand_in(110, {"week01.ipynb": (FIXTURES / "correct_fresh_notebook.ipynb").read_bytes()})
    report = run(server, out)
    assert report.fetched == ["110"] and report.graded == 1
    assert [p.userid for p in report.pushed] == [110]
    assert site.grades[110].files["feedback.html"] != old_page


def test_a_grade_changed_by_hand_is_never_overwritten(server: Any, first: tuple[Any, Path, SyncReport],
                                                      tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    site.grade_by_hand(101, 7.5)
    with Gradebook.open(out / FILENAME) as book:  # something new to push for 101
        book.set_manual("week01", "moodle-user-101", 3, points=20)
        book.set_manual("week01", "moodle-user-101", 4, points=20)
    report = run(server, out)
    assert report.pushed == [] and site.grades[101].grade == 7.5
    assert "7.5 set in Moodle by Ana Lima (user 3)" in report.kept["José Álvarez"]
    assert "after our last push: not overwritten" in report.kept["José Álvarez"]


def marks_for(out: Path, *userids: int) -> None:
    """Hand marks stored for these users: something new to push for each."""
    with Gradebook.open(out / FILENAME) as book:
        for userid in userids:
            book.set_manual("week01", f"moodle-user-{userid}", 3, points=20)
            book.set_manual("week01", f"moodle-user-{userid}", 4, points=10)


def test_a_grade_changed_by_hand_in_the_same_second_as_the_push_is_kept(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    """Moodle's times are whole seconds: the grader (mod_assign_get_grades) tells the two apart."""
    site, out = after_first(server, first, tmp_path)
    pushed_at = site.grades[101].timemodified
    site.grade_by_hand(101, 7.5, same_second=True)
    assert site.grades[101].timemodified == pushed_at
    marks_for(out, 101, 102)
    report = run(server, out)
    assert [p.userid for p in report.pushed] == [102] and site.grades[101].grade == 7.5
    assert "7.5 set in Moodle by Ana Lima (user 3)" in report.kept["José Álvarez"]


def test_without_the_user_function_the_teacher_is_named_by_id_and_how_to_see_names(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    site.service.discard("core_user_get_users_by_field")
    site.grade_by_hand(101, 6)
    report = run(server, out)
    assert report.complete and "by user 3 (add core_user_get_users_by_field to the token's service" in \
        report.kept["José Álvarez"]


def test_a_push_keeps_the_marking_workflow_state_the_teacher_set(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    """mod_assign_save_grades stores the workflowstate sent, '' included: a released grade
    would go back to "not marked" and vanish from the student's view."""
    site, out = after_first(server, first, tmp_path)
    site.marking_workflow = True
    site.release(101)
    site.flags[102] = "inmarking"
    marks_for(out, 101, 102, 103)
    report = run(server, out)
    assert {p.userid for p in report.pushed} == {101, 102, 103}
    assert site.flags[101] == "released" and site.student_sees_grade(101)
    assert site.flags[102] == "inmarking" and site.flags[103] == "notmarked"
    assert site.grades[101].grade == pytest.approx(site.max_grade * 0.01 * sum(
        r.score for r in Gradebook.open(out / FILENAME).results("week01") if r.key == "moodle-user-101"))


def test_a_reply_of_the_wrong_shape_is_refused_naming_the_function_and_the_field(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)

    def bad_id(reply: Any) -> Any:
        reply["courses"][0]["assignments"][0]["id"] = "x"
        return reply

    site.rewrite["mod_assign_get_assignments"] = bad_id
    with pytest.raises(MoodleServiceError) as caught:
        run(server, out)
    assert "mod_assign_get_assignments" in str(caught.value)
    assert "courses[0].assignments[0].id" in str(caught.value) and "'x'" in str(caught.value)
    site.rewrite = {"mod_assign_get_submissions": lambda reply: {**reply, "assignments": None}}
    with pytest.raises(MoodleServiceError, match=r"mod_assign_get_submissions .*\(assignments: .*got None"):
        run(server, out)
    assert "mod_assign_save_grades" not in site.calls


def test_one_unreadable_submission_entry_leaves_the_others_graded(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    site, out = never_synced(server, first, tmp_path)

    def bad_entry(reply: Any) -> Any:
        for item in reply["assignments"][0]["submissions"]:
            if item["userid"] == 105:
                item["timemodified"] = "soon"
        return reply

    site.rewrite["mod_assign_get_submissions"] = bad_entry
    report = run(server, out)
    assert report.complete and {p.userid for p in report.pushed} == GRADED - {105}
    assert "assignments[0].submissions[" in report.left["Søren Kierkegård"]
    assert "timemodified" in report.left["Søren Kierkegård"] and "'soon'" in report.left["Søren Kierkegård"]


def test_an_unreadable_grade_entry_leaves_that_grade_alone(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)

    def bad_grade(reply: Any) -> Any:
        for item in reply["assignments"][0]["grades"]:
            if item["userid"] == 101:
                item["grade"] = "ten"
        return reply

    site.rewrite["mod_assign_get_grades"] = bad_grade
    marks_for(out, 101, 102)
    report = run(server, out)
    assert [p.userid for p in report.pushed] == [102]
    assert "grades[0].grade" in report.left["José Álvarez"] and "left alone" in report.left["José Álvarez"]


def test_a_file_name_of_seventy_emoji_is_stored_under_a_bounded_name(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    """Moodle allows 100 characters; 70 emoji and ".ipynb" are 286 bytes, over the 255 of a file system."""
    site, out = after_first(server, first, tmp_path)
    long_name = "\U0001F600" * 70 + ".ipynb"
    assert len(long_name) <= 100 and len(long_name.encode()) == 286
    site.hand_in(104, {long_name: (FIXTURES / "correct_fresh_notebook.ipynb").read_bytes()})
    site.hand_in(106, {"week01.ipynb": (FIXTURES / "correct_fresh_notebook.ipynb").read_bytes()})
    report = run(server, out)
    assert report.complete and report.graded == 2 and {p.userid for p in report.pushed} == {104, 106}
    [stored] = (out / FILES_DIR / "u_104_assignsubmission_file").glob("*.ipynb")
    assert len(stored.name.encode()) <= 255 and stored.name.endswith(".ipynb")
    with Gradebook.open(out / FILENAME) as book:
        [result] = [r for r in book.results("week01") if r.key == "moodle-user-104"]
    assert result.submission.endswith(long_name)  # shown as the student named it


@pytest.mark.parametrize("debugging", [True, False])
def test_an_expired_token_says_so_and_where_to_write_a_new_one(server: Any, first: tuple[Any, Path, SyncReport],
                                                               tmp_path: Path, debugging: bool) -> None:
    """Moodle deletes an expired token as it refuses it (accessexception; the reason only as
    debuginfo with debugging on), and knows it no more on the next call (invalidtoken)."""
    site, out = after_first(server, first, tmp_path)
    site.debugging = debugging
    site.valid_until[server.token] = site.clock - 1
    week = Course.locate(ROOT).week("week01")
    with MoodleClient(server.url, server.token, token_source="/srv/ml101/moodle-token") as client, \
            pytest.raises(MoodleServiceError) as caught:
        sync(week, client, 7, GradingOptions(out_dir=out))
    message = str(caught.value)
    assert message.startswith("the Moodle token expired: ") and "refused it as expired on 20" in message
    assert "create a new one in Site administration > Server > Web services > Manage tokens" in message
    assert message.endswith("write it to /srv/ml101/moodle-token") and not caught.value.retryable
    assert server.token not in site.tokens and "mod_assign_save_grades" not in site.calls
    with pytest.raises(MoodleServiceError, match="does not know this token .*or expired .*Manage tokens"):
        run(server, out)


def test_a_function_missing_from_the_service_is_not_taken_for_an_expired_token(
        server: Any, first: tuple[Any, Path, SyncReport], tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    site.service.discard("mod_assign_get_grades")
    with pytest.raises(MoodleServiceError, match="does not let this token call mod_assign_get_grades"):
        run(server, out)
    assert server.token in site.tokens


def test_a_missing_capability_names_it_and_the_course(server: Any, first: tuple[Any, Path, SyncReport],
                                                      tmp_path: Path) -> None:
    site, out = never_synced(server, first, tmp_path)
    site.capabilities.discard("mod/assign:grade")
    with pytest.raises(MoodleServiceError, match="lacks mod/assign:grade in course 12"):
        run(server, out)
    assert site.grades == {}


def test_a_course_module_id_is_told_apart(server: Any, first: tuple[Any, Path, SyncReport],
                                          tmp_path: Path) -> None:
    after_first(server, first, tmp_path)
    week = Course.locate(ROOT).week("week01")
    with MoodleClient(server.url, server.token) as client, pytest.raises(MoodleServiceError, match="pass --assignment 7"):
        sync(week, client, 57, GradingOptions(out_dir=tmp_path / "x"))


def test_a_participant_no_longer_enrolled_is_reported(server: Any, first: tuple[Any, Path, SyncReport],
                                                      tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    site.enrolled.discard(105)
    report = run(server, out)
    assert "no longer a participant" in report.left["Søren Kierkegård"]


def test_a_file_moodle_will_not_serve_fails_that_student_only(server: Any, first: tuple[Any, Path, SyncReport],
                                                              tmp_path: Path) -> None:
    site, out = never_synced(server, first, tmp_path)
    site.gone.add((104, "week01.ipynb"))
    report = run(server, out)
    assert "gone or not readable by the token's user (404)" in report.left["Chloé Dubois"]
    assert {p.userid for p in report.pushed} == GRADED - {104}


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_dropped_connection_mid_push_loses_nothing(server: Any, first: tuple[Any, Path, SyncReport],
                                                     tmp_path: Path, when: str) -> None:
    """The connection drops during save_grades, before or after Moodle applied it."""
    site, out = never_synced(server, first, tmp_path)
    site.drop = when
    cut = run(server, out)
    assert cut.interrupted and "could not be reached" in cut.interrupted and cut.pushed == []
    rerun = run(server, out)
    assert rerun.complete and rerun.graded == 0
    if when == "after":  # it landed: read back and adopted, not sent again
        assert rerun.pushed == [] and rerun.unchanged == len(GRADED)
    else:
        assert {p.userid for p in rerun.pushed} == GRADED
    assert set(site.grades) == GRADED
    assert all(g.comment and g.files for g in site.grades.values())
    assert run(server, out).pushed == []


def test_dry_run_shows_what_would_be_pushed_and_pushes_nothing(server: Any, first: tuple[Any, Path, SyncReport],
                                                               tmp_path: Path) -> None:
    site, out = never_synced(server, first, tmp_path)
    site.grade_by_hand(103, 4)  # graded in Moodle before any sync: kept too
    dry = run(server, out, dry_run=True)
    assert {p.userid for p in dry.pushed} == GRADED - {103}
    assert "before the sync ever pushed: not overwritten" in dry.kept["Zoë Müller"]
    assert set(site.grades) == {103} and site.drafts == {} and "mod_assign_save_grades" not in site.calls
    assert {p.userid for p in run(server, out).pushed} == GRADED - {103}
    assert site.grades[103].grade == 4


def test_the_cli_runs_a_sync_with_the_token_from_the_environment(server: Any,
                                                                 first: tuple[Any, Path, SyncReport],
                                                                 tmp_path: Path) -> None:
    site, out = after_first(server, first, tmp_path)
    site.grade_by_hand(102, 9)
    result = CliRunner().invoke(app, ["moodle", "sync", "week01", "--url", server.url, "--assignment", "7",
                                      "--out", str(out), "--course", str(ROOT)], env={"MOODLE_TOKEN": server.token})
    assert result.exit_code == 0, result.output
    assert "not overwritten" in result.output and "unchanged" in result.output


def test_the_token_is_never_taken_from_the_command_line() -> None:
    result = CliRunner().invoke(app, ["moodle", "sync", "week01", "--url", "https://m.example.edu",
                                      "--assignment", "7", "--token", TOKEN])
    assert result.exit_code != 0 and "No such option: --token" in result.output


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    os.chmod(path, 0o644)
    with pytest.raises(AutograderError, match=f"run `chmod 600 {path}`"):
        read_token(path)
    os.chmod(path, 0o600)
    assert read_token(path) == TOKEN
    assert read_token(None, {"MOODLE_TOKEN": " t "}) == "t"
    with pytest.raises(AutograderError, match="set MOODLE_TOKEN, or pass --token-file"):
        read_token(None, {})


def test_array_parameters_are_flattened_as_php_reads_them() -> None:
    fields = flatten({"assignmentids": [7], "applytoall": False, "grades": [
        {"userid": 5, "plugindata": {"assignfeedbackcomments_editor": {"text": "<p>a</p>", "format": 1}}}]})
    assert fields == {"assignmentids[0]": "7", "applytoall": "0", "grades[0][userid]": "5",
                      "grades[0][plugindata][assignfeedbackcomments_editor][text]": "<p>a</p>",
                      "grades[0][plugindata][assignfeedbackcomments_editor][format]": "1"}


def test_plain_http_to_another_host_is_refused() -> None:
    with pytest.raises(MoodleServiceError, match="use https://"):
        MoodleClient("http://moodle.example.edu", TOKEN)


def test_watch_retries_after_a_network_failure_and_stops_on_a_refusal() -> None:
    outcomes: list[object] = [MoodleServiceError("down", retryable=True), "report",
                              MoodleServiceError("token rejected")]
    reports: list[object] = []
    errors: list[str] = []

    def once() -> Any:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(MoodleServiceError, match="token rejected"):
        watch(once, every_s=0, on_report=reports.append, on_error=lambda e: errors.append(str(e)))
    assert reports == ["report"] and errors == ["down", "token rejected"]


def test_a_sync_state_from_before_graders_were_kept_is_read_and_compared_by_time(tmp_path: Path) -> None:
    """A results folder synced by an older version: its table gains the columns, its rows
    (no grader recorded) are judged by time alone, as they were."""
    book = tmp_path / FILENAME
    with sqlite3.connect(book) as db:
        db.execute("CREATE TABLE moodle_sync (site TEXT NOT NULL, assignment INTEGER NOT NULL, userid INTEGER "
                   "NOT NULL, week TEXT NOT NULL, fullname TEXT, attemptnumber INTEGER NOT NULL, modified INTEGER "
                   "NOT NULL, downloaded INTEGER, files TEXT NOT NULL DEFAULT '[]', pushed TEXT, pushed_attempt "
                   "INTEGER, pushed_modified INTEGER, inflight TEXT, inflight_grade REAL, "
                   "PRIMARY KEY (site, assignment, userid))")
        db.execute("INSERT INTO moodle_sync (site, assignment, userid, week, attemptnumber, modified, pushed, "
                   "pushed_attempt, pushed_modified) VALUES ('https://m', 7, 101, 'week01', 0, 5, 'sig', 0, 9)")
    with SyncState(book, site="https://m", assignment=7, week="week01") as state:
        user = state.users()[101]
        assert user.pushed_grader is None and user.pushed_modified == 9
        same_time = RemoteGrade(userid=101, attemptnumber=0, timemodified=9, grader=3, grade=7.5)
        assert not _held_by_hand(user, same_time, state)  # nothing to tell it by: the time says ours
        state.confirmed(101, "sig2", attempt=0, moodle_modified=9, grader=2, grade=None)
        user = state.users()[101]
        assert user.pushed_grader == 2 and _held_by_hand(user, same_time, state)
