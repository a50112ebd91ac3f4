"""Rubric marking in a real browser (Debian's chromium, headless, through Playwright), inside
the LMS's iframe, from the keyboard alone: an instructor opens task 3's marking page (one
answer in view, students by number, nothing chosen, axe clean), defines three rubric items,
applies one to the group of two similar answers with the page's keys, then changes its points;
both students' scores, feedback pages, rows of the results download and the scores the
LMS (the lti1p3platform stand-in) receives follow, and the other students' do not.
Screenshots go to tests/artefacts/ (not committed) for a person to look at."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest

from autograder.service import answer_groups
from tests.helpers import assert_accessible
from tests.service.keyboard import navigate, tab_to
from tests.service.lms import Lms
from tests.service.web import wait_until

pytestmark = pytest.mark.sandbox

ARTEFACTS = Path(__file__).resolve().parent.parent / "artefacts"
SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "week01" / "en" / "week01.ipynb"
ANSWERS = {  # task 3 of week01: a binary classification example, by hand
    "s-ana": "A linearly separable example: the points (0,0) and (1,1) with labels -1 and +1; the line "
             "x1 + x2 = 1 separates them.",
    "s-ben": "Linearly separable example: points (0,0) and (1,1), labels -1 and +1, separated by the line "
             "x1 + x2 = 1.",
    "s-chi": "点(0,0)をクラス-1、点(2,2)をクラス+1とすると、直線x1+x2=2で分けられる。",
    "s-dan": "I did not have time for this one.",
}
ITEMS = [("12", "Gives a linearly separable example"), ("8", "Draws the separating line"),
         ("-5", "The labels are not -1 and +1")]


def notebook(answer: str) -> bytes:
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("autograder", {}).get("answer") == 3:
            cell.source = answer
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def graded(lms: Lms) -> dict[str, dict[str, Any]]:
    """Each student uploads the model solution with their own answer to task 3; task 4 is
    marked full (20) one answer at a time, so the scores go to the LMS once task 3 is marked."""
    students = {}
    for user, answer in ANSWERS.items():
        browser, page = lms.launch(user)
        queued = browser.submit(page, "upload", files={"notebook": ("week01.ipynb", notebook(answer),
                                                                    "application/x-ipynb+json")})
        assert "/attempt/" in str(queued.url), queued.text
        url = str(queued.url)
        students[user] = {"browser": browser, "url": url, "id": int(url.rsplit("/", 1)[1])}
    store = lms.app.state.store
    for student in students.values():
        wait_until(lambda s=student: s["browser"].client.get(f"{s['url']}/state").json()["state"] == "graded")
        attempt = store.attempt(student["id"])
        store.mark(student["id"], context=attempt.context, task=4, points=20, comment="Complete.")
    return students


def scores(lms: Lms, user: str) -> list[dict[str, Any]]:
    return [s for s in lms.platform.scores if s["userId"] == user]


def results_rows(lms: Lms) -> dict[str, dict[str, str]]:
    """The rows of attempts.csv in the instructor's results download, by user."""
    browser, _ = lms.launch("t-rubric", role="instructor")
    download = browser.get(f"{lms.tool_url}/instructor/week01/results.zip")
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        text = archive.read("week01/attempts.csv").decode()
    return {row["user"]: row for row in csv.DictReader(io.StringIO(text))}


def test_an_instructor_marks_a_group_by_keyboard_then_edits_the_item_and_everything_follows(
        lms: Lms, graded: dict[str, dict[str, Any]], chromium: Any) -> None:
    ARTEFACTS.mkdir(exist_ok=True)
    ana, ben = graded["s-ana"]["id"], graded["s-ben"]["id"]
    # the posts after task 4's mark (PendingManual: task 3 is still to mark) have arrived
    wait_until(lambda: all(scores(lms, user) and scores(lms, user)[-1]["scoreGiven"] == 80 for user in ANSWERS))
    before = {user: len(scores(lms, user)) for user in ANSWERS}
    assert answer_groups.WORKER.idle(60)  # the runner grouped the answers as it recorded them

    context = chromium.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 1000})
    errors: list[str] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    page = lms.open_activity(context, "t-rubric", "instructor")
    tool = lms.tool_frame(page)
    tab_to(page, "#mark", tool)
    tool = navigate(lms, page)
    tab_to(page, "#task-3", tool)  # the week's page: each task's progress, a link to its page
    assert "0 of 4 marked" in tool.locator("#tasks").inner_text()
    tool = navigate(lms, page)
    tool.locator("#new-item-3-points").wait_for()
    assert tool.locator("html").get_attribute("lang") == "en"
    assert tool.locator("#grouping").count() == 0  # grouped, not "being grouped"

    for number, (points, comment) in enumerate(ITEMS, start=1):  # three items, typed and submitted from the keyboard
        tool.locator("#new-item-3-points").focus()
        page.keyboard.type(points)
        page.keyboard.press("Tab")
        page.keyboard.type(comment)
        tool = navigate(lms, page)
        # the page after this item's form: its row is there (the status line alone says the same
        # after every item, so the page before it would satisfy a wait for it)
        tool.locator(f"#item-3-{number}-points").wait_for()
        tool.locator("#status").filter(has_text="Item added to task 3.").wait_for()
    assert [tool.locator(f"#item-3-{n}-points").input_value() for n in (1, 2, 3)] == ["12", "8", "-5"]

    # one answer in view, anonymous, its group of two beside the rubric, nothing chosen
    in_view = tool.locator("#marking input[name=at]").input_value()
    assert int(in_view) == ana and tool.locator("#answer-title").inner_text().startswith("Student 1")
    assert "(0,0) and (1,1)" in tool.locator("#answer-text").inner_text()
    assert sorted(int(v) for v in tool.locator("#marking input[name=group]").evaluate_all(
        "fields => fields.map(field => field.value)")) == sorted([ana, ben])  # the two similar answers, one group
    body = tool.locator("main").inner_text()
    assert "User s-" not in body and "s-ana" not in body  # no name, no LMS id
    assert tool.locator("input[type=checkbox]:checked").count() == 0
    assert_accessible(page, "the marking page of a task", frames=lms.tool_url)

    tab_to(page, "#apply-1", tool)  # on a checkbox, in no text field: the keys are the page's
    page.keyboard.press("1")  # toggles rubric item 1
    assert tool.locator("#apply-1").is_checked() and not tool.locator("#apply-2").is_checked()
    outline = tool.locator("#apply-1").evaluate("element => getComputedStyle(element).outlineStyle")
    assert outline not in ("", "none")  # the focus is visible
    page.keyboard.press("2")
    page.keyboard.press("2")  # twice: off again
    assert not tool.locator("#apply-2").is_checked()
    page.screenshot(path=str(ARTEFACTS / "service-marking-group.png"), full_page=True)
    tool = navigate(lms, page, "g")  # the whole group: Ana's and Ben's answers
    tool.locator("#status").filter(has_text="2 answers marked.").wait_for()
    assert "2 of 4 marked" in tool.locator("#progress").inner_text()
    assert int(tool.locator("#marking input[name=at]").input_value()) not in (ana, ben)  # on to the next group

    final = wait_until(lambda: next((s for s in reversed(scores(lms, "s-ana"))
                                     if s["gradingProgress"] == "FullyGraded"), None))
    assert final["scoreGiven"] == 60 + 12 + 20
    assert lms.app.state.store.attempt(ben).score == 92

    tab_to(page, "#apply-1", tool)
    tool = navigate(lms, page, "p")  # back to the answer before: Ben's, Student 2
    assert int(tool.locator("#marking input[name=at]").input_value()) == ben
    assert tool.locator("#answer").inner_text().count("Marked: 12 of 20 points (items 1)") == 1
    tool.locator("#comment").focus()  # in a text field the keys are the marker's text, not the page's
    page.keyboard.type("np1g")
    assert tool.locator("#comment").input_value() == "np1g" and not tool.locator("#apply-1").is_checked()
    tab_to(page, "#keys-off", tool)  # the keys turned off (WCAG 2.1.4): "1" is no longer item 1
    page.keyboard.press("Space")
    tab_to(page, "#filters button", tool)
    tool = navigate(lms, page)
    tab_to(page, "#apply-1", tool)
    page.keyboard.press("1")
    assert not tool.locator("#apply-1").is_checked() and "keys=off" in tool.url

    tool.locator("#item-3-1-points").focus()  # the item's points change: 12 -> 15
    page.keyboard.press("Control+a")
    page.keyboard.type("15")
    tool = navigate(lms, page)
    status = tool.locator("#status")
    status.filter(has_text="2 marks updated").wait_for()
    assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
    assert tool.locator(f"#mark-{ana}").inner_text().startswith("Marked: 15 of 20 points (items 1)")
    assert "keys=off" in tool.url and int(tool.locator("#marking input[name=at]").input_value()) == ben  # kept

    tab_to(page, "#filter-names", tool)  # names on request, kept in the address
    page.keyboard.press("Space")
    tab_to(page, "#filters button", tool)
    tool = navigate(lms, page)
    assert "(User s-ben)" in tool.locator("#answer-title").inner_text()  # the same answer, now with names
    assert "(User s-ana)" in tool.locator("#marking").inner_text()
    page.screenshot(path=str(ARTEFACTS / "service-marking-names.png"), full_page=True)
    context.close()
    assert errors == []

    store = lms.app.state.store
    for user in ("s-ana", "s-ben"):
        attempt = store.attempt(graded[user]["id"])
        assert attempt.score == 60 + 15 + 20
        feedback = graded[user]["browser"].get(f"{graded[user]['url']}/feedback").text
        assert "Gives a linearly separable example (+15)" in feedback and "(+12)" not in feedback
        wait_until(lambda u=user: scores(lms, u)[-1]["scoreGiven"] == 95 or None)
        assert scores(lms, user)[-1]["gradingProgress"] == "FullyGraded"
    rows = results_rows(lms)
    assert float(rows["s-ana"]["score"]) == float(rows["s-ben"]["score"]) == 95
    for user in ("s-chi", "s-dan"):  # not in the group: untouched, still pending, nothing new sent
        assert store.attempt(graded[user]["id"]).pending == 20
        assert len(scores(lms, user)) == before[user]
        assert float(rows[user]["score"]) == 80
    assert lms.platform.refused_scores == []


def test_bad_rubric_input_is_refused_saying_what_to_fix(lms: Lms, graded: dict[str, dict[str, Any]]) -> None:
    browser, _ = lms.launch("t-rubric", role="instructor")
    task_page = browser.get(f"{lms.tool_url}/instructor/week01/marking/4")
    assert task_page.status_code == 200
    cases = [("new-item-4", {"points": "lots", "comment": "x"}, "is not a number"),
             ("new-item-4", {"points": "30", "comment": "Too generous"}, "outside -20..20"),
             ("new-item-4", {"points": "3", "comment": " "}, "needs a comment"),
             ("marking", {"adjustment": "", "comment": ""}, "Choose the rubric items"),
             ("marking", {"adjustment": "much", "comment": ""}, "Adjustment: &#39;much&#39; is not a number")]
    for form, data, says in cases:
        reply = browser.submit(task_page, form, data=data)
        assert reply.status_code == 400 and says in reply.text, (form, data, reply.text)
        assert 'href="/instructor/week01/marking/4' in reply.text  # the way back
    assert lms.app.state.store.gradebook.rubric("week01", 4) == []  # nothing stored from a refused form
    huge = browser.submit(task_page, "marking", data={"scope": "selected", "attempt": str(2**70), "adjustment": "1"})
    assert huge.status_code == 400 and "is not one of this page&#39;s numbers" in huge.text
    added = browser.submit(task_page, "new-item-4", data={"points": "2", "comment": "Names a remedy"})
    assert added.status_code == 200 and "Item added to task 4." in added.text
    forged = browser.client.post(f"{lms.tool_url}/instructor/week01/rubric/4/items",
                                 data={"points": "3", "comment": "x", "csrf": "forged"})
    assert forged.status_code == 403
    assert [i.comment for i in lms.app.state.store.gradebook.rubric("week01", 4)] == ["Names a remedy"]
    assert browser.get(f"{lms.tool_url}/instructor/week01/rubric").url.path == "/instructor/week01/marking"
    learner, _ = lms.launch("s-ana")
    assert learner.get(f"{lms.tool_url}/instructor/week01/marking/4").status_code == 403
