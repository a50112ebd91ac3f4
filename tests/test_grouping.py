"""autograder/grouping.py: the grouping's work is bounded whatever a student wrote, and a set
of answers is clustered once however often its page is shown. (How the groups come out, in
four languages and whatever the order: tests/test_rubric.py; how well they match a
marker's: benchmarks/grouping_quality.py.)"""

from __future__ import annotations

import tracemalloc
from collections import OrderedDict

import pytest

from autograder import grouping
from autograder.grouping import ANSWER_CHARS, group_answers, normalise

# NFKC makes U+FDFA (one Arabic ligature, 3 bytes of UTF-8) 18 characters: this 1.5 MB answer
# became 9 million characters and cost 26-36 s and 2.2 GB per view of the rubric page
LIGATURES = "\ufdfa" * 500_000


def test_an_answer_nfkc_lengthens_18_times_is_cut_before_and_after_normalising() -> None:
    assert len(normalise(LIGATURES)) <= ANSWER_CHARS
    assert len(normalise("ß" * 10 * ANSWER_CHARS)) == ANSWER_CHARS  # case folding doubles it: cut again
    tracemalloc.start()
    try:
        groups = group_answers({"a": LIGATURES, "b": LIGATURES + " and more", "c": "The data are separable."})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert groups == [["a", "b"], ["c"]]  # alike in the compared part: proposed as one group
    assert peak < 20_000_000, f"grouping two 1.5 MB answers allocated {peak / 1e6:.0f} MB at its peak"


def test_the_same_answers_are_clustered_once_however_often_they_are_grouped(monkeypatch: pytest.MonkeyPatch) -> None:
    clustered: list[list[str]] = []
    labels = grouping._labels

    def counting(texts: list[str], distance: float) -> list[int]:
        clustered.append(texts)
        return labels(texts, distance)

    monkeypatch.setattr(grouping, "_labels", counting)
    monkeypatch.setattr(grouping, "_clusterings", OrderedDict())  # nothing kept from another test
    answers = {"a": "It converges if the data are separable (cached test).", "b": "Converges on separable data.",
               "c": "The learning rate is too large."}
    first = group_answers(answers)
    assert {frozenset(keys) for keys in group_answers(dict(reversed(answers.items())))} == set(map(frozenset, first))
    assert group_answers(answers) == first
    assert len(clustered) == 1  # the page shown three times, the answers clustered once
    group_answers({**answers, "d": "Another answer arrived."})
    assert len(clustered) == 2  # a new answer: clustered again
