"""autograder/grouping.py: the grouping's work is bounded whatever a student wrote, and a set
of answers has a fingerprint the service keeps its groups by. (How the groups come out, in
four languages and whatever the order: tests/test_rubric.py; how well they match a
marker's: benchmarks/grouping_quality.py.)"""

from __future__ import annotations

import tracemalloc

from autograder.grouping import ANSWER_CHARS, fingerprint, group_answers, normalise

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


def test_a_set_of_answers_has_one_fingerprint_whatever_its_order_and_another_for_any_change() -> None:
    """The service keeps a set's groups by its fingerprint (``service/answer_groups.py``):
    computed once per change of the answers, not per view of the page."""
    answers = {"a": "It converges if the data are separable.", "b": "Converges on separable data.",
               "c": "The learning rate is too large."}
    same = fingerprint(answers)
    assert fingerprint(dict(reversed(answers.items()))) == same
    assert fingerprint({**answers, "c": "The learning rate is too small."}) != same  # an answer changed
    assert fingerprint({**answers, "d": "Another answer arrived."}) != same
    assert fingerprint({"a": answers["a"], "b": answers["c"], "c": answers["b"]}) != same  # who wrote what
    long = "x" * ANSWER_CHARS
    assert fingerprint({**answers, "a": long + " beyond"}) == fingerprint({**answers, "a": long + " compared"})
