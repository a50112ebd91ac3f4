"""The instructor's week routes (``autograder/service/routes/instructor.py``): results.zip's
``gradebook.csv``, the batch's sheet of the same name, filled from the service's store."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import httpx
import pytest

from autograder.database.clock import now
from autograder.results import Status, SubmissionResult, TaskResult
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
    assert list(csv.reader(io.StringIO(raw.decode("utf-8-sig")))) == [
        ["Name", "LMS id", "Email", "Task 1 (max 4)", "Task 2 (max 6)", "Total", "Maximum", "Status", "Pending points"],
        ["'=HYPERLINK(\"http://x.test\",\"e\")", "zip-eve", "", "2", "5", "7", "10", "graded", "0"],
        ["Bruno Araújo", "zip-bob", "", "0", "", "0", "10", "error", "6"],
        ["User zip-ann", "zip-ann", "", "4", "", "4", "10", "pending hand marks", "6"],
    ]
