"""A worker that answers every request with whatever it likes changes no word of feedback.

The worker belongs to the student: a notebook can replace ``WorkerCore.handle`` and answer
each hidden test's request with any reply (a forged ``missing`` name carrying the call's
arguments, exception names and messages, handles with invented type names, values that
are not what was asked). Hypothesis draws those replies; each draw is a real notebook
graded through the real sandbox and grading loop. Nothing the worker chose may appear in
the result document or the student's feedback page: only the grader's own words.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.course import Course
from autograder.execution import Limits, Sandboxed, ZygoteSlot
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.report.feedback import render_feedback
from autograder.submission import Submission
from tests.helpers import notebook_bytes

pytestmark = pytest.mark.sandbox

SECRET = "zq7xsecretzq7x"

# Strings a forged reply is made of: the secret, the call's own arguments (what a real
# attack echoes), and names of built-in exceptions (which the feedback may name).
texts = st.one_of(st.just(SECRET), st.sampled_from(["ARGS", "ValueError", "KeyError", "__class__"]),
                  st.text(max_size=20).map(lambda t: t + SECRET))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=False), texts)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.fixed_dictionaries({"t": st.lists(inner, max_size=3)}),
    st.fixed_dictionaries({"h": st.tuples(st.integers(0, 5), texts, st.booleans()).map(list)}),
    st.fixed_dictionaries({"d": st.lists(st.tuples(texts, inner).map(list), max_size=3)}),
), max_leaves=8)
replies = st.one_of(
    st.fixed_dictionaries({"ok": st.just(False), "kind": st.just("missing"), "name": texts}),
    st.fixed_dictionaries({"ok": st.just(False), "kind": st.just("exception"), "ename": texts, "evalue": texts},
                          optional={"not_implemented": st.booleans()}),
    st.fixed_dictionaries({"ok": st.just(True), "value": values}, optional={"warnings": st.lists(texts, max_size=3)}),
    st.fixed_dictionaries({"ok": st.booleans(), "kind": texts, "evalue": texts, "name": texts}),
)

HOSTILE_CELL = '''
import json
from autograder.worker import core as _core
REPLIES = json.loads({replies!r})

def _forged(self, request, _count=[0]):
    if request.get("op") == "cell":
        return {{"ok": True}}
    reply = json.loads(json.dumps(REPLIES[_count[0] % len(REPLIES)]).replace("ARGS", json.dumps(request)[:300]))
    _count[0] += 1
    return reply

_core.WorkerCore.handle = _forged
'''


@pytest.fixture(scope="module")
def week(course: Course):
    return course.week("week01")


@pytest.fixture(scope="module")
def forged_slot():
    fresh = ZygoteSlot(Limits()).start()
    yield fresh
    fresh.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(st.lists(replies, min_size=1, max_size=6))
def test_no_string_a_worker_chooses_reaches_the_feedback(week, forged_slot, draws):
    cell = HOSTILE_CELL.format(replies=json.dumps(draws))
    submission = Submission(origin="forged.ipynb", key="forged", content=notebook_bytes(cell))
    [result] = grade(week, [submission], isolation=Sandboxed(slot=forged_slot))
    document = json.dumps(to_dict(result))
    assert SECRET not in document
    assert SECRET not in render_feedback(result, week_title=week.title)
    # the call's arguments (hidden inputs) never come back either
    assert '"op": "call"' not in document and "args" not in document.lower().replace("arguments", "")
