"""The markers page (``autograder/service/routes/markers.py``): the teachers who launched the
activity, a split of the week's hand-ins among those ticked and each one's progress; only
markers open it and its form carries the page's CSRF token."""

from __future__ import annotations

import pytest

from autograder.database.clock import now
from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service.markers import assignments
from autograder.service.policy import WeekPolicy
from tests.service.lms import Lms
from tests.service.lti_platform import COURSE
from tests.service.web import forms

pytestmark = pytest.mark.lms(grading=False)  # the web app alone on a real store: results recorded straight into it


def hand_in(task_marked: bool = False) -> SubmissionResult:
    tasks = [TaskResult(1, 2.0, 4.0), TaskResult(2, 0.0, 6.0, manual=True, marked=task_marked, answer_sha256="a")]
    return SubmissionResult("x", "x", Status.GRADED, tasks=tasks, week="week01")


@pytest.mark.slow  # three launches through the LMS: 4 s on a loaded machine
def test_the_markers_page_splits_the_week_among_the_teachers_and_shows_each_ones_progress(lms: Lms) -> None:
    store = lms.app.state.store
    tess, _ = lms.launch("mk-tess", role="instructor")
    abe, _ = lms.launch("mk-abe", role="instructor")
    learner, _ = lms.launch("mk-sam")
    context = f"{lms.platform.base}|{lms.platform.registration().get_deployment_id()}|{COURSE}"
    page_url = f"{lms.tool_url}/instructor/week01/markers"
    assert learner.get(page_url).status_code == 403
    page = tess.get(page_url)
    assert page.status_code == 200, page.text
    assert "User mk-tess" in page.text and "User mk-abe" in page.text and "User mk-sam" not in page.text
    csrf = next(f for f in forms(page.text) if f["id"] == "split")["fields"]["csrf"]
    user = "mk-tess"  # the LMS's id for them (the stand-in LMS uses the name it is given)
    for student in ("mk-s1", "mk-s2", "mk-s3", "mk-s4", "mk-s5"):
        store.remember_user(context, student, f"Student {student}", None)
        store.submit(context=context, user=student, week="week01", content=student.encode(),
                     policy=WeekPolicy(), now=now())
    while (attempt := store.claim()) is not None:
        store.record_result(attempt.id, hand_in(), week_title="week01")
    assert "5 of 5 hand-ins to mark have no marker" in tess.get(page_url).text
    markers = ["mk-abe", "mk-tess"]
    refused = tess.client.post(page_url, data={"marker": markers}, follow_redirects=False)  # no token
    assert refused.status_code == 403 and not assignments(store, context, "week01")
    stranger = tess.client.post(page_url, data={"csrf": csrf, "marker": ["mk-sam"]}, follow_redirects=False)
    assert stranger.status_code == 400 and "is not a marker of this course" in stranger.text
    split = tess.client.post(page_url, data={"csrf": csrf, "marker": markers}, follow_redirects=False)
    assert split.status_code == 303
    shown = tess.get(lms.tool_url + split.headers["location"])
    plan = assignments(store, context, "week01")
    assert sorted(plan.values()).count(user) in (2, 3) and "5 hand-ins is split among the markers" in shown.text
    mine = sorted(student for student, marker in plan.items() if marker == user)
    first = next(a for a in store.week_attempts(context=context, week="week01") if a.user == mine[0])
    store.mark(first.id, context=context, task=2, points=4.0, marker=user)
    shown = abe.get(page_url)
    assert f"1 of {len(mine)} marked" in shown.text and f"0 of {5 - len(mine)} marked" in shown.text
    assert f'href="/instructor/week01/marking?marker={user}"' in shown.text

