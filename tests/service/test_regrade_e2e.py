"""The instructor's background work end to end, on the real graders and the stand-in LMS.
A regrade: a learner's weaker first attempt is graded again before her better second one
(the queue's order); while it runs her counted score stays, so the LMS receives no score at
all: none lower in between, none for the same score at the end."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

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
    received, enqueued = len(lms.platform.scores), len(store.posts(context=weak.context, week="week01"))

    teacher, _ = lms.launch("rg-e2e-teacher", role="instructor")
    confirm = teacher.get(f"{lms.tool_url}/instructor/week01/regrade")
    progress = teacher.submit(confirm, "confirm-regrade")
    assert "Regrading: 0 of 2 attempts graded again." in progress.text  # nothing graded yet
    counted = []
    while (status := store.regrade_status(context=weak.context, week="week01")).running:
        counted.append(store.counted_score(context=weak.context, user="rg-e2e", week="week01"))
        time.sleep(0.05)
    assert status.done == status.total == 2
    assert set(counted) <= {best.score}  # never "–", never the weaker attempt's score
    assert [store.attempt(a.id).score for a in (weak, best)] == [weak.score, best.score]  # type: ignore[union-attr]
    assert len(store.posts(context=weak.context, week="week01")) == enqueued  # none even waiting to be sent
    assert len(lms.platform.scores) == received and lms.platform.refused_scores == []

