"""Plain data across the trust boundary, and nothing else.

Values are written as a tagged JSON tree. Scalars (None, bool, int, str, finite float)
are themselves; everything else is a one-key object:

    {"f": "nan" | "inf" | "-inf"}          non-finite float
    {"t": [...]}                          tuple
    {"d": [[key, value], ...]}            dict (keys: scalars or tuples of scalars)
    {"a": [dtype, shape, base64 bytes]}   numpy array of bool/int/uint/float/complex/str dtype
    {"h": [id, typename, is_callable]}    a handle to an object that stays in the worker

Decoding never unpickles, imports or evaluates anything: it builds Python scalars,
containers and fresh numpy arrays, and enforces caps on depth, item count and size, so a
hostile worker can waste at most one message's worth of the grader's time and memory.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.exceptions import NotPlain, ProtocolError
from autograder.text import scrub_tree

MAX_DEPTH = 32
MAX_ITEMS = 2_000_000  # scalars + containers + array elements, per message
MAX_STRING = 1 << 20  # characters in one string
# JSON values one message may hold before it is parsed (``prescan``): the items of its
# value plus the envelope's keys and tags. (A value of 2 M dict entries, 3 JSON values each, is
# refused here rather than by ``decode``: the same cap, counted more strictly.)
MAX_VALUES = MAX_ITEMS + 1000
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
ARRAY_KINDS = frozenset("biufcU")  # bool, int, uint, float, complex, unicode


@dataclass(frozen=True)
class HandleRef:
    """A handle as decoded: the worker's id for an object, its type name, callable or not."""

    id: int
    typename: str
    callable: bool


# ---------------------------------------------------------------------------- encoding


Memo = dict[int, tuple[Any, Any, int]]  # id(container) -> (the container, its tree, the items it holds)


def encode(value: Any, *, handle_for: Callable[[Any], HandleRef] | None = None, memo: Memo | None = None) -> Any:
    """Turn ``value`` into the tagged JSON tree.

    Without ``handle_for``, a non-plain value raises ``NotPlain``. With it, objects that
    are ``HandleRef`` (or any object ``handle_for`` accepts) are written as handles: the
    grader uses this to send handles back as arguments. ``memo``, kept by the caller across
    the values of one message: a container met again (the same training set or model passed
    to each of a batch's calls) is written as the tree made the first time, not walked
    again; the message still holds one copy for each place, so each call gets its own.
    """
    budget = [MAX_ITEMS]
    return _encode(value, 0, budget, handle_for, memo)


def _spend(budget: list[int], n: int) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise NotPlain("value too large")


def _encode(value: Any, depth: int, budget: list[int], handle_for: Callable[[Any], HandleRef] | None,
            memo: Memo | None = None) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain("value nested too deeply")
    if memo is not None and type(value) in (list, tuple, dict, np.ndarray):
        seen = memo.get(id(value))
        if seen is not None and seen[0] is value:
            _spend(budget, seen[2])
            return seen[1]
        before = budget[0]
        tree = _encode_fresh(value, depth, budget, handle_for, memo)
        memo[id(value)] = (value, tree, before - budget[0])
        return tree
    return _encode_fresh(value, depth, budget, handle_for, memo)


def _encode_fresh(value: Any, depth: int, budget: list[int], handle_for: Callable[[Any], HandleRef] | None,
                  memo: Memo | None) -> Any:
    _spend(budget, 1)
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isfinite(f):
            return f
        return {"f": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(value, (str, np.str_)):
        s = str.__str__(value)
        if len(s) > MAX_STRING:
            raise NotPlain("string too long")
        return s
    if isinstance(value, HandleRef):
        return {"h": [value.id, value.typename, value.callable]}
    if isinstance(value, np.ndarray):
        return _encode_array(value, budget)
    # Exact types only: a subclass (a namedtuple K-D tree node, a dict with a lying
    # __eq__) is the student's object and stays in the worker as a handle.
    if type(value) in (list, tuple):
        items = [_encode(v, depth + 1, budget, handle_for, memo) for v in value]
        return {"t": items} if type(value) is tuple else items
    if type(value) is dict:
        pairs = []
        for k, v in value.items():
            if not _is_key(k):
                raise NotPlain("dict key is not a scalar or a tuple of scalars")
            pairs.append([_encode(k, depth + 1, budget, None), _encode(v, depth + 1, budget, handle_for, memo)])
        return {"d": pairs}
    if handle_for is not None:
        ref = handle_for(value)
        return {"h": [ref.id, ref.typename, ref.callable]}
    raise NotPlain(f"{type(value).__name__} is not plain data")


def _is_key(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_is_key(k) for k in key)
    return key is None or isinstance(key, (bool, int, float, str, np.generic)) and not isinstance(key, np.void)


def _encode_array(arr: np.ndarray, budget: list[int]) -> Any:
    arr = np.asarray(arr)
    if arr.dtype.kind not in ARRAY_KINDS or arr.dtype.fields is not None:
        raise NotPlain(f"numpy array of dtype {arr.dtype} is not plain data")
    _spend(budget, int(arr.size))
    contiguous = np.ascontiguousarray(arr)
    return {"a": [contiguous.dtype.str, list(contiguous.shape), base64.b64encode(contiguous.tobytes()).decode("ascii")]}


# ---------------------------------------------------------------------------- decoding


def decode(tree: Any, *, resolve: Callable[[HandleRef], Any] | None = None) -> Any:
    """Rebuild a value from its tagged tree, checking every node.

    ``resolve`` maps a handle to an object (the worker resolves its own handles); without
    it handles come back as ``HandleRef``. Raises ``ProtocolError`` on anything malformed.
    """
    budget = [MAX_ITEMS]
    return _decode(tree, 0, budget, resolve)


def _decode(node: Any, depth: int, budget: list[int], resolve: Callable[[HandleRef], Any] | None) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    budget[0] -= 1
    if budget[0] < 0:
        raise ProtocolError("value has too many items")
    if node is None or type(node) in (bool, int):
        return node
    if type(node) is float:
        return node
    if type(node) is str:
        if len(node) > MAX_STRING:
            raise ProtocolError("string too long")
        return node
    if type(node) is list:
        return [_decode(v, depth + 1, budget, resolve) for v in node]
    if type(node) is not dict or len(node) != 1:
        raise ProtocolError("unexpected node in a value")
    (tag, body), = node.items()
    if tag == "t" and type(body) is list:
        return tuple(_decode(v, depth + 1, budget, resolve) for v in body)
    if tag == "d" and type(body) is list:
        out: dict[Any, Any] = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise ProtocolError("malformed dict entry")
            key = _decode(pair[0], depth + 1, budget, None)
            if isinstance(key, (list, dict, np.ndarray, HandleRef)) or (
                isinstance(key, tuple) and not _hashable_tuple(key)
            ):
                raise ProtocolError("dict key is not a scalar or a tuple of scalars")
            out[key] = _decode(pair[1], depth + 1, budget, resolve)
        return out
    if tag == "f" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "a":
        return _decode_array(body, budget)
    if tag == "h" and type(body) is list and len(body) == 3:
        hid, typename, is_callable = body
        if type(hid) is not int or type(typename) is not str or type(is_callable) is not bool or len(typename) > 200:
            raise ProtocolError("malformed handle")
        ref = HandleRef(hid, typename, is_callable)
        return resolve(ref) if resolve is not None else ref
    raise ProtocolError("unknown tag in a value")


def _hashable_tuple(key: tuple[object, ...]) -> bool:
    return all(
        item is None or type(item) in (bool, int, float, str) or (isinstance(item, tuple) and _hashable_tuple(item))
        for item in key
    )


def _decode_array(body: Any, budget: list[int]) -> np.ndarray:
    if type(body) is not list or len(body) != 3:
        raise ProtocolError("malformed array")
    dtype_str, shape, data = body
    if type(dtype_str) is not str or len(dtype_str) > 16 or type(shape) is not list or type(data) is not str:
        raise ProtocolError("malformed array")
    try:
        dtype = np.dtype(dtype_str)
    except TypeError as exc:
        raise ProtocolError("bad array dtype") from exc
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.hasobject:
        raise ProtocolError("array dtype is not plain data")
    if len(shape) > MAX_DEPTH or any(type(n) is not int or n < 0 for n in shape):
        raise ProtocolError("bad array shape")
    size = math.prod(shape)
    budget[0] -= size
    if budget[0] < 0:
        raise ProtocolError("array too large")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError as exc:
        raise ProtocolError("array data is not base64") from exc
    if len(raw) != size * dtype.itemsize:
        raise ProtocolError("array data does not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


# ---------------------------------------------------------------------------- messages


def dumps_message(message: dict[str, Any]) -> bytes:
    """Serialise a protocol envelope (already encoded values inside)."""
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")


def loads_message(raw: bytes) -> dict[str, Any]:
    """Parse a protocol envelope; any malformation is a ``ProtocolError``."""
    prescan(raw)
    try:
        message = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        if _ESCAPED_SURROGATE.search(raw):  # UTF-8 cannot hold one: only an escape makes it
            message = scrub_tree(message)  # a lone "\ud800" would break every later write
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
        # not the parser's message: it can quote the sender's bytes
        raise ProtocolError("message is not valid JSON") from exc
    if type(message) is not dict:
        raise ProtocolError("message is not an object")
    return message


def prescan(raw: bytes) -> None:
    """Refuse, before anything is built, a message with more JSON values than ``decode``
    would ever accept.

    ``json.loads`` builds the whole tree before ``decode`` counts its items: 60 MB of
    ``[],`` are 20 M lists, 1.75 GB of Python objects. Every JSON value after the first
    follows a ``[``, ``,`` or ``:``, so counting those bytes (in C, ~20 ms for 64 MB)
    bounds the number of objects the parser can make. Strings holding those characters
    only make the bound looser, never wrong; what passes is at most ``MAX_VALUES``
    objects, ~100 bytes each.
    """
    values = 1 + raw.count(b"[") + raw.count(b",") + raw.count(b":")
    if values > MAX_VALUES:
        raise ProtocolError(f"message has more than {MAX_VALUES} values")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"bare {name} is not allowed")
