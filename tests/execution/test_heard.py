"""The echo guard withholds a failure message only where it would disclose a hidden input.

A hidden test's message is replaced by "the check did not hold" when it repeats, as a
whole word, a string the test sent to the student's code, outside the instructor's own
text (the ``_("...")`` template it was formatted from). What the student's code sent
back (its class's name, its dictionary's keys) is the student's own and never hides a
hint: week 1's scikit-learn hint reaches a student whose class is ``Perceptron``, week 5's
smoothing hint one whose vocabulary holds "spam" and "today" (both once replaced).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.course import Course
from autograder.execution import Sandboxed, ZygoteSlot
from autograder.execution.heard import Heard
from autograder.grading.grader import grade
from autograder.submission import Submission
from autograder.worker.codec import HandleRef, encode
from tests.helpers import notebook_bytes, throwaway_course

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WITHHELD = "the check did not hold"


def sent(*args: object, **kwargs: object) -> Heard:
    """A record of one call the test made, as ``Student`` sends it."""
    heard = Heard()
    heard.note({"op": "call", "obj": 1, "args": encode(args), "kwargs": encode(kwargs)})
    return heard


def test_only_whole_words_the_test_sent_withhold_a_message():
    heard = sent("dict", "Secret offer")
    assert not heard.disclosed_in("predict should return a dictionary of scores")  # words inside longer words
    assert heard.disclosed_in("got dict") and heard.disclosed_in("the message was SECRET")


def test_handles_type_names_and_keyword_names_are_not_inputs_string_arrays_are():
    heard = sent(HandleRef(3, "Perceptron", False), np.array(["quokka", "zebra"]), smoothing=True)
    assert not heard.disclosed_in("the weights should point the same way as scikit-learn's Perceptron")
    assert not heard.disclosed_in("smoothing should add one to every count")
    assert heard.disclosed_in("the word zebra")


def test_the_templates_own_words_are_the_instructors():
    heard = sent(["today", "is", "secret"], "spam")
    template = 'P(spam) for "today is secret" is not {value}: check (count + 1)'
    assert not heard.disclosed_in('P(spam) for "today is secret" is not 0.0007: check (count + 1)', template)
    assert heard.disclosed_in('P(spam) for "today is secret" is not today: check (count + 1)', template)
    assert heard.disclosed_in('P(spam) for "today is secret" is 0.0007', template)  # not made from it


def graded(course: Course, slot: ZygoteSlot, week: str, *notebooks: tuple[str, bytes]) -> dict[str, dict[str, str]]:
    """Each notebook's failed tests and what they said."""
    subs = [Submission(origin=key, key=key, content=content, seed=1) for key, content in notebooks]
    return {r.key: {t.name: t.output for t in r.tests if t.score < t.max_score}
            for r in grade(course.week(week), subs, isolation=Sandboxed(slot=slot))}


def in_language(path: Path, language: str) -> bytes:
    nb = nbformat.read(path, as_version=4)
    nb.metadata.setdefault("autograder", {})["language"] = language
    return nbformat.writes(nb).encode()


@pytest.mark.sandbox
def test_week1_and_week5_hints_reach_students_whose_objects_carry_their_words(course: Course, slot: ZygoteSlot):
    week01 = graded(course, slot, "week01", ("no_bias", (FIXTURES / "week01" / "wrong_no_bias.ipynb").read_bytes()))
    assert "the weights should point the same way as scikit-learn's Perceptron" \
        in week01["no_bias"]["test_agrees_with_scikit_learn"]
    notebook = FIXTURES / "week05" / "wrong_no_unknown_word.ipynb"  # its model: a dict of words, "spam" and "today"
    week05 = graded(course, slot, "week05", ("en", notebook.read_bytes()), ("ja", in_language(notebook, "ja")))
    assert 'P(spam) times the smoothed word_probability of each word of "today is secret" is not 0.0007324' \
        in week05["en"]["test_spam_example_smoothed"]
    assert "counts only when word_probability also gives the smoothed probabilities right" \
        in week05["en"]["test_scoring_leaves_the_model_unchanged"]
    assert WITHHELD not in week05["ja"]["test_spam_example_smoothed"]
    assert "0.0007324" in week05["ja"]["test_spam_example_smoothed"]  # the translated template, placeholders and all


ECHO_CELLS = [
    ("markdown", "# Week 7: Echo (3 points)"),
    ("markdown", "## Task 1 (3 points): echo\n\nWrite `echo(word)` and a class `Perceptron`."),
    ("code", "def echo(word):\n    ### BEGIN SOLUTION\n    return 'never'\n    ### END SOLUTION\n\n\n"
             "class Perceptron:\n    pass"),
]
ECHO_TESTS = '''import pytest

from autograder.i18n import _


@pytest.mark.task(1)
@pytest.mark.points(1)
def test_echo_of_a_hidden_word(student):
    """echo never says the hidden word"""
    got = student.echo("quokkazebra")
    assert got == "never", _("echo gave {got}").format(got=got)


@pytest.mark.task(1)
@pytest.mark.points(1)
def test_echo_of_a_short_word(student):
    """echo answers dict with never"""
    got = student.echo("dict")
    assert got == "never", _("echo gave {got}").format(got=got)


@pytest.mark.task(1)
@pytest.mark.points(1)
def test_the_class_name(student):
    """the class is called Plain"""
    assert student.typename(student.Perceptron()) == "Plain", _("your Perceptron should be called Plain")
'''


@pytest.mark.sandbox
def test_a_message_is_withheld_only_when_it_repeats_what_the_test_sent(tmp_path: Path, slot: ZygoteSlot):
    course = throwaway_course(tmp_path, "week07", ECHO_CELLS, "test_week07_echo.py", ECHO_TESTS)
    echoes = notebook_bytes("def echo(word):\n    return word.upper() if len(word) > 4 else word + 'ionary'",
                            "class Perceptron:\n    pass")
    failed = graded(course, slot, "week07", ("echoes", echoes))["echoes"]
    assert failed["test_echo_of_a_hidden_word"].endswith(f"({WITHHELD})")  # QUOKKAZEBRA: the input, case aside
    assert failed["test_echo_of_a_short_word"].endswith("(echo gave dictionary)")  # "dict" sent, inside a longer word
    assert failed["test_the_class_name"].endswith("(your Perceptron should be called Plain)")  # the class's own name
