"""The instructor's week routes (``autograder/service/routes/instructor.py``): the live report,
the batch report's body with a row per student; results.zip's ``gradebook.csv``, the batch's
sheet of the same name, filled from the service's store."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from autograder.course import Course
from autograder.database.clock import now
from autograder.report import write_report
from autograder.results import Participant, Status, SubmissionResult, TaskResult
from autograder.service.policy import WeekPolicy
from tests.service.lms import Lms
from tests.service.web import forms

# the web app alone on a real store: attempts are submitted and their results recorded straight
# into it (one learner through the LMS, the others without a launch's round trips), nothing is graded
pytestmark = pytest.mark.lms(grading=False)


def upload(lms: Lms, user: str, times: int) -> None:
    """``user`` launches week01 from the LMS (which names them "User <user>") and uploads
    ``times`` notebooks (each a different file: the same one twice is refused)."""
    browser, page = lms.launch(user)
    csrf = next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]
    for number in range(times):
        content = json.dumps({"cells": [], "metadata": {"n": number}, "nbformat": 4, "nbformat_minor": 5}).encode()
        reply: httpx.Response = browser.client.post(
            f"{lms.tool_url}/week/week01/upload", data={"csrf": csrf}, follow_redirects=False,
            files={"notebook": ("week01.ipynb", content, "application/x-ipynb+json")})
        assert reply.status_code == 303, reply.text


def a_result(auto: float, *, status: Status = Status.GRADED, marked: bool = True) -> SubmissionResult:
    tasks = [TaskResult(1, auto, 4.0), TaskResult(2, 5.0 if marked else 0.0, 6.0, manual=True, marked=marked)]
    return SubmissionResult("x", "x", status, tasks=tasks, week="week01")


def test_the_results_zip_holds_the_gradebook_csv_with_each_learners_name_and_counted_attempt(lms: Lms) -> None:
    store = lms.app.state.store
    results = {"zip-ann": [a_result(0.0, marked=False), a_result(4.0, marked=False)],  # the best (4) counts
               "zip-bob": [a_result(0.0, status=Status.ERROR, marked=False)], "zip-eve": [a_result(2.0)]}
    upload(lms, "zip-ann", 2)  # through the LMS: the name is the launch's
    first = store.claim()
    assert first is not None
    store.record_result(first.id, results[first.user].pop(0), week_title="week01")
    context = first.context
    for user, name in (("zip-bob", "Bruno Araújo"), ("zip-eve", '=HYPERLINK("http://x.test","e")')):
        store.remember_user(context, user, name, None)  # as a launch would, without its round trips
        store.submit(context=context, user=user, week="week01", content=user.encode(), policy=WeekPolicy(), now=now())
    while (attempt := store.claim()) is not None:
        store.record_result(attempt.id, results[attempt.user].pop(0), week_title="week01")
    teacher, _ = lms.launch("zip-teacher", role="instructor")
    reply = teacher.get(f"{lms.tool_url}/instructor/week01/results.zip")
    archive = zipfile.ZipFile(io.BytesIO(reply.content))
    assert "week01/attempts.csv" in archive.namelist()  # kept as it was, for scripts that read it
    raw = archive.read("week01/gradebook.csv")
    assert raw.startswith("\ufeff".encode())
    header, *rows = csv.reader(io.StringIO(raw.decode("utf-8-sig")))
    assert [header, *(row for row in rows if row[1].startswith("zip-"))] == [  # the module's other tests' too
        ["Name", "LMS id", "Email", "Task 1 (max 4)", "Task 2 (max 6)", "Total", "Maximum", "Status", "Pending points"],
        ["'=HYPERLINK(\"http://x.test\",\"e\")", "zip-eve", "", "2", "5", "7", "10", "graded", "0"],
        ["Bruno Araújo", "zip-bob", "", "0", "", "0", "10", "error", "6"],
        ["User zip-ann", "zip-ann", "", "4", "", "4", "10", "pending hand marks", "6"],
    ]


@dataclass
class TableRow:
    status: str
    link: str = ""
    name: str = ""
    cells: list[str] = field(default_factory=list)


class ReportTable(HTMLParser):
    """The report's table of students (``table#results``) of a page: its headings, and each
    row's status (``data-status``), link, the link's text (the name) and cells' text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.rows: list[TableRow] = []
        self._inside = self._cell = self._link = False
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "table":
            self._inside = values.get("id") == "results"
        elif self._inside and tag == "tr" and "data-status" in values:
            self.rows.append(TableRow(status=values["data-status"] or ""))
        elif self._inside and tag in ("td", "th"):
            self._cell, self._text = True, []
        elif self._inside and tag == "a" and self.rows:
            self.rows[-1].link, self._link = values["href"] or "", True

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._inside = False
        elif tag == "a":
            self._link = False
        elif self._inside and tag in ("td", "th") and self._cell:
            self._cell = False
            text = " ".join("".join(self._text).split())
            if tag == "th":
                self.headings.append(text)
            else:
                self.rows[-1].cells.append(text)

    def handle_data(self, data: str) -> None:
        if self._cell:
            self._text.append(data)
        if self._link:
            self.rows[-1].name += data


@pytest.mark.slow  # two launches through the LMS, and the plots drawn
def test_the_live_report_is_the_batch_reports_body_a_row_per_student_by_name(lms: Lms, tmp_path: Path,
                                                                            course: Course) -> None:
    """One renderer: the live page's table has the batch report's columns (a column per task)
    and cells for the same results, with the live page's own columns (attempts, counted score)
    after the score; a row per student sorted by the LMS's name (not by user id), linking to
    the attempt whose result it shows; a hand-in with points still to mark is pending, not
    graded; one still queued is shown as queued, and a newer upload still on its way is named
    under the result shown."""
    store = lms.app.state.store
    upload(lms, "live-1", 1)  # "User live-1" in the LMS: its context is the course's
    first = store.claim()
    assert first is not None
    context = first.context
    store.remember_user(context, "live-1", "Zoë Müller", None)
    for user, name in (("live-2", "ana Lima"), ("live-3", "Bruno Costa"), ("live-4", "Chen Wei")):
        store.remember_user(context, user, name, None)
    for user, number in (("live-2", 0), ("live-2", 1), ("live-3", 0)):
        store.submit(context=context, user=user, week="week01", content=f"{user}-{number}".encode(),
                     policy=WeekPolicy(), now=now())
    recorded = {"live-1": [a_result(4.0, marked=False)],  # 6 points still to mark
                "live-2": [a_result(3.0), a_result(1.0)],  # the best, the first, counts
                "live-3": [a_result(0.0, status=Status.ERROR, marked=False)]}
    shown: dict[str, int] = {}
    attempt = first
    while attempt is not None:
        store.record_result(attempt.id, recorded[attempt.user].pop(0), week_title="week01")
        shown.setdefault(attempt.user, attempt.id)
        attempt = store.claim()
    for user in ("live-4", "live-2"):  # live-4's first, live-2's third: both queued
        store.submit(context=context, user=user, week="week01", content=f"{user}-new".encode(), policy=WeekPolicy(),
                     now=now())
    queued = next(a for a in store.week_attempts(context=context, week="week01") if a.user == "live-4")
    teacher, _ = lms.launch("live-teacher", role="instructor")
    reply = teacher.client.get(f"{lms.tool_url}/instructor/week01")
    unchanged = teacher.client.get(f"{lms.tool_url}/instructor/week01", headers={"If-None-Match": reply.headers["ETag"]})
    assert (unchanged.status_code, unchanged.content) == (304, b"")  # the 15-second refresh: nothing new
    live = ReportTable(reply.text)
    live.rows = [row for row in live.rows if row.name in ("Zoë Müller", "ana Lima", "Bruno Costa", "Chen Wei")]
    while (left := store.claim()) is not None:  # graded now, so the module's other tests find none queued
        store.record_result(left.id, a_result(1.0), week_title="week01")
    changed = teacher.client.get(f"{lms.tool_url}/instructor/week01", headers={"If-None-Match": reply.headers["ETag"]})
    assert changed.status_code == 200 and changed.headers["ETag"] != reply.headers["ETag"]  # new results: the page

    assert live.headings[:5] == ["Student", "Status", "Score", "Attempts", "Counted"]
    assert [row.name for row in live.rows] == ["ana Lima", "Bruno Costa", "Chen Wei", "Zoë Müller"]
    assert [row.link for row in live.rows] == [f"/attempt/{shown['live-2']}", f"/attempt/{shown['live-3']}",
                                               f"/attempt/{queued.id}", f"/attempt/{shown['live-1']}"]
    assert [row.status for row in live.rows] == ["graded", "error", "queued", "graded"]
    ana, bruno, chen, zoe = (row.cells for row in live.rows)
    assert zoe[1] == "pending marks" and "+6 pending" in zoe[2] and zoe[6] == "pending"
    assert ana[1] == "graded" and ana[3:5] == ["3", "8"]  # three attempts, the first's 3 + 5 counted
    assert ana[0] == "ana Lima attempt 1 · attempt 3: queued"  # the one shown, and the one on its way
    assert bruno[1] == "error" and bruno[3:5] == ["1", "0"]
    assert chen[1] == "queued" and chen[2] == "–"

    batch = [a_result(4.0, marked=False), a_result(3.0), a_result(0.0, status=Status.ERROR, marked=False)]
    named = [SubmissionResult(f"s{i}", f"s{i}", r.status, tasks=r.tasks, week="week01",
                              participant=Participant(full_name=name))
             for i, (r, name) in enumerate(zip(batch, ("Zoë Müller", "ana Lima", "Bruno Costa"), strict=True))]
    written = write_report(named, tmp_path, week_title="week01", week=course.week("week01"))  # its tasks' titles
    report = ReportTable(written.read_text(encoding="utf-8"))
    assert live.headings[:3] + live.headings[5:] == report.headings
    without_extras = {row.name: row.cells[1:3] + row.cells[5:] for row in live.rows if row.status != "queued"}
    assert without_extras == {row.name: row.cells[1:] for row in report.rows}
