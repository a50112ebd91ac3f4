"""The marking pages (``autograder/service/routes/marking.py``) on a real store: the week's
progress, a task's page with one answer in view (anonymous, nothing selected), its filters,
the student's code and outputs shown safely, and the numbers a page refuses."""

from __future__ import annotations

import base64
import re
from typing import Any

import httpx
import nbformat
import pytest

from autograder.results import Status, SubmissionResult, TaskResult
from autograder.service import markers
from tests.service.lms import Lms
from tests.service.web import Browser, forms

# the web app alone on a real store: notebooks are submitted and their results recorded straight
# into it, nothing is graded
pytestmark = pytest.mark.lms(grading=False)

ANSWERS = {"m-ana": "A linearly separable example: points (0,0) and (1,1), labels -1 and +1, the line x1 + x2 = 1.",
           "m-ben": "Linearly separable example: the points (0,0) and (1,1), labels -1 and +1, line x1 + x2 = 1.",
           "m-chi": "点(0,0)をクラス-1、点(2,2)をクラス+1とすると、直線x1+x2=2で分けられる。",
           "m-dan": "I did not have time for this one."}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def hand_in(answer: str) -> bytes:
    """A notebook with ``answer`` to task 3 and, in task 3's section, a code cell whose
    outputs are a text, a PNG, and HTML with a script (never to be shown)."""
    cells = [nbformat.v4.new_markdown_cell("## Task 3 (20 points, graded by hand)", metadata={"autograder": {
                 "task": 3, "manual": True, "points": 20}}),
             nbformat.v4.new_markdown_cell(answer, metadata={"autograder": {"answer": 3}}),
             nbformat.v4.new_code_cell("plot_the_line()", outputs=[
                 nbformat.v4.new_output("stream", text="separated: True\n"),
                 nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
                 nbformat.v4.new_output("display_data", data={"text/html": "<script>alert('x')</script>",
                                                              "text/plain": "<IPython.HTML object>"})])]
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells)).encode()


@pytest.fixture(scope="module")
def marked(lms: Lms) -> dict[str, Any]:
    """Four students' graded attempts at week01, task 3 by hand (20 points) still to mark."""
    store = lms.app.state.store
    teacher, _ = lms.launch("m-teacher", role="instructor")
    ids = {}
    for user, answer in ANSWERS.items():
        learner, _ = lms.launch(user)
        upload(lms, learner, hand_in(answer))
        attempt = store.claim()
        assert attempt is not None
        result = SubmissionResult("x", "x", Status.GRADED, week="week01", tasks=[
            TaskResult(1, 40, 40), TaskResult(3, 0, 20, manual=True, title="A real-world example")])
        store.record_result(attempt.id, result, week_title="week01")
        ids[user] = attempt.id
    return {"teacher": teacher, "ids": ids}


def upload(lms: Lms, learner: Browser, content: bytes) -> None:
    page = learner.get(f"{lms.tool_url}/week/week01")
    csrf = next(f for f in forms(page.text) if f["id"] == "upload")["fields"]["csrf"]
    reply: httpx.Response = learner.client.post(
        f"{lms.tool_url}/week/week01/upload", data={"csrf": csrf}, follow_redirects=False,
        files={"notebook": ("week01.ipynb", content, "application/x-ipynb+json")})
    assert reply.status_code == 303, reply.text


def marking_form(page: httpx.Response) -> dict[str, Any]:
    return next(f for f in forms(page.text) if f["id"] == "marking")


def test_a_task_page_shows_one_answer_by_number_with_nothing_selected(lms: Lms, marked: dict[str, Any]) -> None:
    teacher = marked["teacher"]
    page = teacher.get(f"{lms.tool_url}/instructor/week01/marking/3")
    assert page.status_code == 200, page.text
    assert "Student 1" in page.text and "User m-" not in page.text  # anonymous by default
    assert re.search(r"\d of 4 marked", page.text)  # the task's progress
    form = page.text[page.text.index('id="marking"'):page.text.index("</form>", page.text.index('id="marking"'))]
    assert " checked" not in form  # no answer, no item chosen for the marker
    assert "separated: True" in page.text and f"data:image/png;base64,{PNG}" in page.text  # the cell's outputs
    assert "<script>alert" not in page.text  # the student's HTML is never shown
    named = teacher.get(f"{lms.tool_url}/instructor/week01/marking/3?names=1")
    assert "(User m-" in named.text and 'name="names" value="1"' in named.text  # asked for: kept in the form


def test_marking_the_answer_in_view_counts_and_the_filters_follow(lms: Lms, marked: dict[str, Any]) -> None:
    store, teacher, ids = lms.app.state.store, marked["teacher"], marked["ids"]
    done = sum(store.attempt(attempt).pending == 0 for attempt in ids.values())  # marked by the other tests
    url = f"{lms.tool_url}/instructor/week01"
    page = teacher.get(f"{url}/marking/3?at={ids['m-ana']}")
    added = teacher.submit(page, "new-item-3", data={"points": "12", "comment": "Gives a separable example"})
    assert "Item added to task 3." in added.text and f'name="at" value="{ids["m-ana"]}"' in added.text
    fields = marking_form(added)["fields"]
    saved = teacher.client.post(f"{url}/marking/3", data={"csrf": fields["csrf"], "at": str(ids["m-ana"]),
                                                          "scope": "answer", "item": "1"}, follow_redirects=False)
    assert saved.status_code == 303 and f"after={ids['m-ana']}" in saved.headers["location"]
    after = teacher.get(lms.tool_url + saved.headers["location"])
    assert "1 answers marked." in after.text and f"{done + 1} of 4 marked" in after.text
    assert f'name="at" value="{ids["m-ana"]}"' not in after.text  # on to the next answer
    assert store.attempt(ids["m-ana"]).score == 52
    unmarked = teacher.get(f"{url}/marking/3?unmarked=1&at={ids['m-ana']}")
    assert f'name="at" value="{ids["m-ana"]}"' not in unmarked.text  # marked: not among the unmarked
    by_item = teacher.get(f"{url}/marking/3?with_item=1")
    assert re.findall(r'name="group" value="(\d+)"', by_item.text) == [str(ids["m-ana"])]
    week = teacher.get(f"{url}/marking")
    assert f"{done + 1} of 4 answers marked this week." in week.text and "12 of 20" in week.text  # mean, median


def test_bad_numbers_and_choices_are_refused_saying_what_to_fix(lms: Lms, marked: dict[str, Any]) -> None:
    teacher, ids = marked["teacher"], marked["ids"]
    url = f"{lms.tool_url}/instructor/week01/marking/3"
    for query in (f"at={2**70}", "at=abc", "with_item=-1"):
        reply = teacher.get(f"{url}?{query}")
        assert reply.status_code == 400 and "is not one of this page&#39;s numbers" in reply.text, query
    csrf = marking_form(teacher.get(url))["fields"]["csrf"]
    cases = [({"scope": "selected"}, "Select at least one answer to mark."),
             ({"scope": "selected", "attempt": str(2**70), "adjustment": "1"}, "is not one of this page"),
             ({"at": str(ids["m-dan"]), "points": "5", "item": "1"}, "not both"),
             ({"at": str(ids["m-dan"]), "points": "lots"}, "is not a number"),
             ({"at": str(ids["m-dan"])}, "Choose the rubric items"),
             ({"at": str(ids["m-dan"]), "points": "99"}, "99 points for task 3 of"),  # the gradebook's refusals
             ({"at": str(ids["m-dan"]), "adjustment": "99"}, "an adjustment of 99 for task 3")]
    for data, says in cases:
        reply = teacher.client.post(url, data={"csrf": csrf, **data})
        assert reply.status_code == 400 and says in reply.text.replace("&#39;", "'"), (data, reply.text[-800:])
        assert "gradebook.sqlite" not in reply.text  # the service's file is no business of the instructor's
    item = teacher.client.post(f"{lms.tool_url}/instructor/week01/rubric/3/items",
                               data={"csrf": csrf, "points": "2", "comment": " "})
    assert item.status_code == 400 and "a rubric item for task 3 needs a comment" in item.text
    assert "gradebook.sqlite" not in item.text
    assert lms.app.state.store.attempt(ids["m-dan"]).pending == 20  # nothing stored from a refused form
    assert teacher.get(f"{lms.tool_url}/instructor/week01/marking/4").status_code == 404  # no such hand-graded task
    learner, _ = lms.launch("m-ana")
    assert learner.get(url).status_code == 403


def test_a_markers_queue_shows_only_the_hand_ins_assigned_to_them(lms: Lms, marked: dict[str, Any]) -> None:
    store, teacher, ids = lms.app.state.store, marked["teacher"], marked["ids"]
    context = store.attempt(ids["m-ana"]).context
    plan = markers.split(store, context, "week01", ["m-teacher", "m-ta"])
    mine = sorted(ids[student] for student, marker in plan.items() if marker == "m-teacher")
    assert 0 < len(mine) < len(ids)
    url = f"{lms.tool_url}/instructor/week01/marking"
    page = teacher.get(f"{url}/3?marker=m-teacher")
    assert {int(n) for n in re.findall(r'name="group" value="(\d+)"', page.text)} <= set(mine)
    assert f"of {len(mine)} marked" in page.text and 'name="marker" value="m-teacher"' in page.text
    week = teacher.get(f"{url}?marker=m-teacher")
    assert f"of {len(mine)} answers marked this week." in week.text and "marking/3?marker=m-teacher" in week.text
    csrf = marking_form(page)["fields"]["csrf"]
    saved = teacher.client.post(f"{url}/3", data={"csrf": csrf, "at": str(ids["m-chi"]), "points": "12"})
    assert saved.status_code == 200, saved.text
    assert store.gradebook.manual_marks("week01")[f"attempt-{ids['m-chi']}"][3].marker == "m-teacher"  # who marked
    assert "(by User m-teacher)" in teacher.get(f"{url}/3?at={ids['m-chi']}").text


def test_the_page_opens_at_the_first_answer_still_to_mark(lms: Lms, marked: dict[str, Any]) -> None:
    store, teacher = lms.app.state.store, marked["teacher"]
    url = f"{lms.tool_url}/instructor/week01/marking/3"
    first = int(marking_form(teacher.get(url))["fields"]["at"])
    store.mark(first, context=store.attempt(first).context, task=3, points=12)
    opened = int(marking_form(teacher.get(url))["fields"]["at"])
    assert opened != first and store.attempt(opened).pending == 20
