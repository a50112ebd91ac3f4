"""The marking pages' groups of similar answers (``autograder/service/answer_groups.py``):
computed in the background once per change of a task's answers, never while a page waits,
kept in the data folder where a second replica finds them. The runner's hook that starts
them after a hand-in is in ``test_regrade_e2e.py`` (it needs the graders)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from autograder.grouping import group_answers
from autograder.service.answer_groups import WORKER, groups, groups_path, regroup
from autograder.service.store import Store

ANSWERS = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "grouping_answers.json").read_text())
TEXTS = {f"attempt-{i}": answer["text"] for i, answer in enumerate(ANSWERS["answers"][:40], start=1)}
CONTEXT, WEEK, TASK = "https://moodle.example|3|course-1", "week01", 3


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "data") as s:
        yield s


def test_the_page_gets_none_at_once_and_the_groups_once_computed_for_those_very_answers(
        tmp_path: Path, store: Store) -> None:
    assert groups(store, CONTEXT, WEEK, TASK, TEXTS) is None  # not computed: the page shows them ungrouped
    assert WORKER.idle(60)
    computed = groups(store, CONTEXT, WEEK, TASK, TEXTS)
    assert computed == group_answers(TEXTS) and len(computed) < len(TEXTS)
    backwards = dict(reversed(TEXTS.items()))  # the same answers in another order: the same groups, ordered anew
    assert groups(store, CONTEXT, WEEK, TASK, backwards) == group_answers(backwards)
    with Store(tmp_path / "data") as replica:  # another replica on the folder: no second computation
        assert groups(replica, CONTEXT, WEEK, TASK, TEXTS) == computed
    assert groups(store, "https://moodle.example|3|course-2", WEEK, TASK, TEXTS) is None  # another course's

    changed = {**TEXTS, "attempt-41": "A new hand-in: the perceptron stops when nothing is misclassified."}
    assert groups(store, CONTEXT, WEEK, TASK, changed) is None
    assert WORKER.idle(60)
    assert groups(store, CONTEXT, WEEK, TASK, changed) == group_answers(changed)


def test_a_rush_of_changes_costs_one_computation_per_waiting_set_not_one_each(store: Store) -> None:
    """While the worker groups one task's answers, 20 hand-ins each ask for the week again:
    the requests that wait are one, run with the last answers."""
    started: list[int] = []

    def texts_of(n: int) -> dict[int, dict[str, str]]:
        started.append(n)
        return {TASK: dict(list(TEXTS.items())[:n])}

    running = threading.Event()

    def first() -> dict[int, dict[str, str]]:
        running.set()
        time.sleep(0.3)  # still at it while the others come
        return texts_of(20)

    regroup(store, CONTEXT, WEEK, first)
    assert running.wait(10)
    for n in range(21, 41):
        regroup(store, CONTEXT, WEEK, lambda n=n: texts_of(n))
    assert WORKER.idle(60)
    assert started == [20, 40]
    assert groups(store, CONTEXT, WEEK, TASK, TEXTS) == group_answers(TEXTS)
    kept = json.loads(groups_path(store, CONTEXT, WEEK, TASK).read_text())
    assert sorted(key for group in kept["groups"] for key in group) == sorted(TEXTS)
