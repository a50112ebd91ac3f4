"""``Student.call_checking_inputs``: the grader learns when student code changes its arguments.

Arguments are copied into the worker, so a function that modifies them in place leaves
the test's copies untouched and would pass unnoticed. These tests run real notebooks in
the real sandboxed worker (and, for the reply checks, feed ``check_reply`` forged replies).
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.exceptions import ProtocolError
from autograder.execution import Limits, SubmissionRun, ZygoteSlot
from autograder.testing.student import Student, check_reply, unchanged

CELLS = '''
import numpy as np
def centre(X, y=None):
    X -= X.mean(axis=0)          # in place: the caller's X changes
    return X
def centred_copy(X, y=None):
    return X - X.mean(axis=0)
def relabel(docs, labels):
    labels.append("extra")       # a list changed in place
    return len(docs)
def clip_weights(w, *, theta=None):
    theta += 1.0                 # a keyword argument changed in place
    return theta
class Model:
    def fit(self, X, y):
        y[y == 0] = -1           # labels rewritten in place
        self.y_ = y
        return self
def size(node):
    return 1
'''


@pytest.fixture(scope="module")
def student(slot: ZygoteSlot):
    slot.limits = Limits()
    run = SubmissionRun(slot, [CELLS], Limits())
    run.execute()
    yield Student(run)
    run.close()


def test_an_in_place_change_is_reported_and_the_value_still_returned(student):
    X = np.arange(6.0).reshape(3, 2)
    value, changed = student.call_checking_inputs(student.centre, X, y=np.ones(3))
    assert changed == ["argument 1"]
    assert value.tolist() == [[-2.0, -2.0], [0.0, 0.0], [2.0, 2.0]]
    assert X.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]  # ours never changed: it was copied


def test_a_function_that_works_on_a_copy_changes_nothing(student):
    value, changed = student.call_checking_inputs(student.centred_copy, np.arange(6.0).reshape(3, 2), y=np.ones(3))
    assert changed == [] and value.shape == (3, 2)


def test_lists_keywords_and_methods_are_checked(student):
    _, changed = student.call_checking_inputs(student.relabel, ["a b", "c"], ["x", "y"])
    assert changed == ["argument 2"]
    _, changed = student.call_checking_inputs(student.clip_weights, np.zeros(2), theta=np.zeros(2))
    assert changed == ["theta"]
    model = student.Model()
    fitted, changed = student.call_checking_inputs(model.fit, np.ones((3, 2)), np.array([0, 1, 0]))
    assert changed == ["argument 2"] and student.same(fitted, model)


def test_remote_arguments_pass_through(student):
    model = student.Model()
    value, changed = student.call_checking_inputs(student.size, model)
    assert value == 1 and changed == []


def test_unchanged_compares_bits_shape_and_dtype():
    a = np.array([1.0, np.nan])
    assert unchanged(a, a.copy())
    assert not unchanged(a, np.array([1.0, 2.0]))
    assert not unchanged(a, a.astype(np.float32))
    assert not unchanged(a, a.reshape(2, 1))
    assert not unchanged(np.array([0.0]), np.array([-0.0]))
    assert unchanged(np.float64(2.5), 2.5) and unchanged([1, (2, "a")], [1, (2, "a")])
    assert not unchanged([1, 2], [1, 2, 3]) and not unchanged({"a": 1}, {"a": 2})


@pytest.mark.parametrize("reply", [
    {"ok": True, "value": 1},
    {"ok": True, "value": 1, "inputs": "all unchanged"},
    {"ok": True, "value": 1, "inputs": [{"t": []}]},
])
def test_a_reply_without_the_arguments_is_a_protocol_error(reply):
    with pytest.raises(ProtocolError):
        check_reply({"op": "call", "obj": 1, "inputs": True}, reply)
