"""The instructor's background work end to end, on the real graders and the stand-in LMS.
A regrade: a learner's weaker first attempt is graded again before her better second one
(the queue's order); while it runs her counted score stays, so the LMS receives no score at
all: none lower in between, none for the same score at the end. The groups of similar
answers: computed by the runner's hook once a hand-in with hand-graded tasks is recorded,
ready before the marking page asks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autograder.service.answer_groups import WORKER, groups, groups_path
from autograder.service.runner import week_answers
from tests.service.lms import Lms
from tests.service.web import Browser, wait_until

pytestmark = [pytest.mark.lms(), pytest.mark.sandbox]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "week01"
CORRECT = (FIXTURES / "correct_fresh_notebook.ipynb").read_bytes()
WRONG = (FIXTURES / "wrong_counts_every_sample.ipynb").read_bytes()


def upload(browser: Browser, content: bytes, lms: Lms) -> str:
    page = browser.get(f"{lms.tool_url}/week/week01")
    queued = browser.submit(page, "upload", files={"notebook": ("week01.ipynb", content, "application/x-ipynb+json")})
    assert "/attempt/" in str(queued.url), queued.text
    return str(queued.url)


def test_a_regrade_sends_the_lms_nothing_while_it_runs_nor_when_the_scores_stay(lms: Lms) -> None:
    store = lms.app.state.store
    student, _ = lms.launch("rg-e2e")
    urls = [upload(student, WRONG, lms)]
    wait_until(lambda: student.client.get(f"{urls[0]}/state").json()["state"] == "graded")
    urls.append(upload(student, CORRECT, lms))
    wait_until(lambda: student.client.get(f"{urls[1]}/state").json()["state"] == "graded")
    weak, best = (store.attempt(int(url.rsplit("/", 1)[1])) for url in urls)
    assert weak.score < best.score  # the second counts ("best")
    wait_until(lambda: [s for s in lms.platform.scores if s["userId"] == "rg-e2e"
                        and s["scoreGiven"] == pytest.approx(best.score)] or None)
    hers = (lambda: [s for s in lms.platform.scores if s["userId"] == "rg-e2e"],
            lambda: [p for p in store.posts(context=weak.context, week="week01") if p.user == "rg-e2e"])
    received, enqueued = (len(found()) for found in hers)
    regradable = store.regrade_status(context=weak.context, week="week01").regradable  # hers, and any other test's

    teacher, _ = lms.launch("rg-e2e-teacher", role="instructor")
    confirm = teacher.get(f"{lms.tool_url}/instructor/week01/regrade")
    progress = teacher.submit(confirm, "confirm-regrade")
    assert f"Regrading: 0 of {regradable} attempts graded again." in progress.text  # nothing graded yet
    counted = []
    while (status := store.regrade_status(context=weak.context, week="week01")).running:
        counted.append(store.counted_score(context=weak.context, user="rg-e2e", week="week01"))
        time.sleep(0.05)
    assert status.done == status.total == regradable
    assert set(counted) <= {best.score}  # never "–", never the weaker attempt's score
    assert [store.attempt(a.id).score for a in (weak, best)] == [weak.score, best.score]  # type: ignore[union-attr]
    assert [len(found()) for found in hers] == [received, enqueued]  # none sent, none even waiting to be sent
    assert lms.platform.refused_scores == []


def test_a_hand_in_with_hand_graded_tasks_has_the_weeks_groups_ready_before_the_page_asks(lms: Lms) -> None:
    store = lms.app.state.store
    handed_in = []
    for user, notebook in (("rg-e2e-groups-1", CORRECT), ("rg-e2e-groups-2", WRONG)):
        student, _ = lms.launch(user)
        handed_in.append((student, upload(student, notebook, lms)))
    wait_until(lambda: all(student.client.get(f"{url}/state").json()["state"] == "graded"
                           for student, url in handed_in))
    attempt = store.attempt(int(handed_in[0][1].rsplit("/", 1)[1]))
    assert WORKER.idle(120)
    answers = week_answers(store, attempt.context, "week01")
    assert sorted(answers) == [3, 4] and all(len(texts) >= 2 for texts in answers.values())  # theirs, and others'
    for task, texts in answers.items():
        assert groups_path(store, attempt.context, "week01", task).is_file()
        assert groups(store, attempt.context, "week01", task, texts) is not None  # no wait, no computation
