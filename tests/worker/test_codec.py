"""The value codec: plain data crosses, nothing else does, and the decoder survives garbage."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.exceptions import NotPlain, ProtocolError
from autograder.worker.codec import (
    MAX_DEPTH,
    MAX_ITEMS,
    HandleRef,
    decode,
    dumps_message,
    encode,
    loads_message,
)


def roundtrip(value):
    return decode(loads_message(dumps_message({"v": encode(value)}))["v"])


def test_plain_values_round_trip_with_their_types():
    value = {"a": [1, 2.5, True, None, "x"], (1, "k"): (3, [4]), 7: np.arange(6).reshape(2, 3)}
    back = roundtrip(value)
    assert back["a"] == [1, 2.5, True, None, "x"]
    assert back[(1, "k")] == (3, [4]) and isinstance(back[(1, "k")], tuple)
    assert back[7].dtype == np.arange(1).dtype and back[7].shape == (2, 3)


def test_numpy_scalars_become_python_scalars_and_nonfinite_floats_survive():
    back = roundtrip([np.int64(3), np.float32(0.5), np.bool_(True), np.str_("s"), float("nan"), -math.inf])
    assert [type(v) for v in back[:4]] == [int, float, bool, str]
    assert math.isnan(back[4]) and back[5] == -math.inf


@pytest.mark.parametrize("bad", [
    np.array([1, "a"], dtype=object),
    object(),
    {frozenset(): 1},
    np.zeros(2, dtype=[("a", "i4")]),
    lambda: 0,
])
def test_non_plain_values_are_refused(bad):
    with pytest.raises(NotPlain):
        encode(bad)


def test_too_deep_is_refused_both_ways():
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(NotPlain):
        encode(deep)
    with pytest.raises(ProtocolError):
        decode(json.loads(json.dumps(deep)))


def test_handles_decode_to_refs_or_resolve():
    tree = encode(HandleRef(4, "KDLeaf", False))
    assert decode(tree) == HandleRef(4, "KDLeaf", False)
    assert decode(tree, resolve=lambda ref: ("obj", ref.id)) == ("obj", 4)


@pytest.mark.parametrize("tree", [
    {"a": ["|O8", [1], "AAAAAAAAAAA="]},  # object dtype
    {"a": ["<f8", [2], "AAAAAAAAAAA="]},  # 8 bytes for 2 float64
    {"a": ["<f8", [-1], ""]},
    {"a": ["<f8", [1], "not base64!"]},
    {"x": 1},
    {"t": 1},
    {"d": [[[1], 2]]},  # list as a key
    {"h": ["1", "x", True]},
    {"a": 1, "b": 2},
])
def test_malformed_trees_are_protocol_errors(tree):
    with pytest.raises(ProtocolError):
        decode(tree)


@pytest.mark.parametrize("raw", [b"", b"\xff\xfe", b"[1]", b"NaN", b"{" * 100_000, b'{"a": Infinity}'])
def test_malformed_messages_are_protocol_errors(raw):
    with pytest.raises(ProtocolError):
        loads_message(raw)


json_trees = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["a", "t", "d", "f", "h"]), children, max_size=2),
    max_leaves=30,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(json_trees)
def test_decoder_never_fails_other_than_with_protocol_error(tree):
    """Whatever JSON a hostile worker sends, decoding ends in a value or a ProtocolError."""
    try:
        decode(tree)
    except ProtocolError:
        pass


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(plain_values)
def test_every_plain_value_round_trips(value):
    back = roundtrip(value)
    assert repr(back) == repr(value) or _nan_equal(back, value)


def _nan_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isnan(a) and math.isnan(b) or a == b
    if isinstance(a, (list, tuple)) and type(a) is type(b):
        return len(a) == len(b) and all(_nan_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_nan_equal(a[k], b[k]) for k in a)
    return a == b


def test_container_subclasses_are_not_plain_data():
    """A namedtuple node or a dict subclass is the student's object: it stays remote."""
    from collections import OrderedDict, namedtuple

    Node = namedtuple("Node", "left right")
    for value in (Node(1, 2), OrderedDict(a=1), type("MyList", (list,), {})([1])):
        with pytest.raises(NotPlain):
            encode(value)


def test_a_container_met_again_in_one_message_is_encoded_once_as_the_same_tree_and_still_counted():
    """``Student.each`` passes one model or training set to every call of a batch: with a memo
    it is walked once, and the message is the same as without one (each call still gets a
    copy of its own); the items it holds still count against the message's cap each time."""
    model = {"spam": {"free": 3, "win": (1, 2.5)}, "ham": [np.arange(4), "meeting"]}
    calls = [(model, word) for word in ("free", "win", "meeting")]
    memo: dict = {}
    with_memo = [encode(call, memo=memo) for call in calls]
    assert with_memo == [encode(call) for call in calls]
    assert with_memo[0]["t"][0] is with_memo[1]["t"][0]  # the same tree, not walked again
    big = list(range(MAX_ITEMS // 2))
    memo = {}
    encode(big, memo=memo)
    with pytest.raises(NotPlain):
        encode((big, big, big), memo=memo)
