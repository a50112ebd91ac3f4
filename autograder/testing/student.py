"""The ``student`` fixture's object: the hidden tests' remote view of a submission.

Attribute access, calls and constructors go to the worker as requests; plain data comes
back as values, everything else as ``Remote`` objects that can be called, inspected and
passed back. Nothing the worker sends is evaluated here, and nothing it sends becomes
feedback text: errors carry the name the test asked for, or a built-in exception type.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from autograder.exceptions import (
    MissingName,
    NotAttempted,
    NotPlain,
    NotPlainData,
    ProtocolError,
    StudentCodeError,
)
from autograder.worker.codec import HandleRef, Memo, decode, encode

MAX_NAME = 100  # characters of an exception type name
MAX_TEXT = 500  # characters of an exception message or a warning
MAX_WARNINGS = 20


class Channel(Protocol):
    """Where requests go: a sandboxed worker, or the in-process reference."""

    @property
    def generation(self) -> int:
        """Bumped whenever the code behind the channel restarts: older handles are stale."""

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Send one request, return the reply (raising StudentTimeout/WorkerCrashed)."""


class Remote:
    """An object that stays in the worker. Usable as a callable or attribute holder, never
    as data: comparing it or turning it into an array raises ``NotPlainData``."""

    __slots__ = ("_student", "_ref", "_generation")
    _student: Student
    _ref: HandleRef
    _generation: int

    def __init__(self, student: Student, ref: HandleRef, generation: int) -> None:
        object.__setattr__(self, "_student", student)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_generation", generation)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._student._ask({"op": "getattr", "obj": self._ref.id, "name": name}, self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        student = self._student
        message = {"op": "call", "obj": self._ref.id,
                   "args": student._encode_args(args), "kwargs": student._encode_args(kwargs)}
        return student._ask(message, self)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("remote objects are read-only from the tests")

    def _not_data(self, *_: Any, **__: Any) -> Any:
        raise NotPlainData(self._ref.typename)

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _not_data
    __array__ = __iter__ = __len__ = __float__ = __int__ = __index__ = __getitem__ = _not_data
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __neg__ = _not_data
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<remote {self._ref.typename}>"


class Call:
    """``function(*args, **kwargs)``, to be made in the worker by ``Student.build``: an argument that
    is itself a ``Call`` is made first and passed as the object it returns, so a whole
    structure (``KDNode(0, 5.5, KDLeaf(a), KDLeaf(b))``) costs one request."""

    __slots__ = ("function", "args", "kwargs")

    def __init__(self, function: Remote, /, *args: Any, **kwargs: Any) -> None:
        if not isinstance(function, Remote):
            raise TypeError("Call needs a remote callable, such as student.KDLeaf")
        self.function = function
        self.args = args
        self.kwargs = kwargs


class Student:
    """The remote view of one submission (the ``student`` fixture)."""

    def __init__(self, channel: Channel, *, call_timeout: float | None = None) -> None:
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_timeout", call_timeout)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask({"op": "get", "name": name}, None)

    def __contains__(self, name: str) -> bool:
        return bool(self._ask({"op": "has", "name": name}, None))

    def module(self, name: str) -> Any:
        """The module ``name`` as the worker had loaded it before the notebook ran (``None``
        if it had not): what the notebook's own names point to cannot stand in for it, so
        a test reads NumPy's global random state from the real NumPy."""
        return self._ask({"op": "module", "name": name}, None)

    def typename(self, obj: Any) -> str:
        """The class name of a remote object (``"KDLeaf"``), or of a plain value."""
        if isinstance(obj, Remote):
            return obj._ref.typename
        return type(obj).__name__

    def call_with_warnings(self, function: Remote, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
        """Call ``function`` and also return the warnings it raised in the worker, as
        ``"Category: message"`` strings (e.g. numpy's ``RuntimeWarning: overflow ...``)."""
        if not isinstance(function, Remote):
            raise TypeError("call_with_warnings needs a remote callable, such as student.sigmoid")
        message = {"op": "call", "obj": function._ref.id, "warnings": True,
                   "args": self._encode_args(args), "kwargs": self._encode_args(kwargs)}
        reply: dict[str, Any] = {}
        value = self._ask(message, function, reply_out=reply)
        return value, list(reply.get("warnings", []))

    def call_checking_inputs(self, function: Remote, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
        """Call ``function`` and also say which of its arguments it changed.

        The arguments are copied into the worker, so the caller's arrays here can never
        change; a function that modifies its inputs in place (``X -= X.mean(0)``) would
        go unnoticed. The worker sends the arguments back as the call left them and they
        are compared here, bit for bit, with what was sent. Returns the call's value and
        the changed arguments, named ``"argument 2"`` (positional, from 1) or ``"y"``.
        """
        if not isinstance(function, Remote):
            raise TypeError("call_checking_inputs needs a remote callable, such as student.gradient")
        message = {"op": "call", "obj": function._ref.id, "inputs": True,
                   "args": self._encode_args(args), "kwargs": self._encode_args(kwargs)}
        reply: dict[str, Any] = {}
        value = self._ask(message, function, reply_out=reply)
        generation = self._channel.generation
        after_args, after_kwargs = (decode(tree, resolve=lambda ref: Remote(self, ref, generation))
                                    for tree in reply["inputs"])
        if type(after_args) is not tuple or len(after_args) != len(args) \
                or type(after_kwargs) is not dict or set(after_kwargs) != set(kwargs):
            raise ProtocolError("the worker sent back arguments that do not match the call")
        changed = [f"argument {i}" for i, (sent, now) in enumerate(zip(args, after_args), start=1)
                   if not unchanged(sent, now)]
        changed += [name for name, sent in kwargs.items() if not unchanged(sent, after_kwargs[name])]
        return value, changed

    def build(self, call: Call) -> Any:
        """Make ``call`` and every ``Call`` among its arguments (innermost first) in the
        worker, in one request; what the outermost returns, as a call would give it.

        The arguments are sent as plain data, the steps' results stay in the worker: the
        reply is the one value, decoded like any other. An exception in any step is that
        step's, reported as a call's would be; the call limit covers the whole build."""
        steps: list[dict[str, Any]] = []
        self._flatten(call, steps, {})
        return self._ask({"op": "calls", "steps": steps}, call.function)

    def each(self, calls: list[Call]) -> list[Any]:
        """Make ``calls`` one after the other in the worker, in one request; their values,
        in order, as the calls one by one would give them (``[student.knn_classify(X, y, q)
        for q in queries]`` as one round trip). The first exception ends the batch and is
        raised as that call's would be; the call limit covers the whole batch, so keep a
        batch to calls that are quick each (a loop over queries, not over fits)."""
        if not calls:
            return []
        steps: list[dict[str, Any]] = []
        memo: Memo = {}  # an argument passed to every call (a model, a training set) is encoded once
        wanted = [self._flatten(call, steps, memo) for call in calls]
        values = self._ask({"op": "calls", "steps": steps, "results": wanted}, calls[0].function)
        if type(values) is not tuple or len(values) != len(calls):
            raise ProtocolError("the worker sent back another number of values than calls were made")
        return list(values)

    def walk(self, root: Remote, fields: dict[str, list[str]], links: dict[str, list[str]], *,
             max_nodes: int, max_depth: int, max_items: int | None = None) -> Iterator[tuple[str, list[Any]]]:
        """Read the structure under ``root`` in one request: ``(type name, values)`` for each
        object in pre-order, its ``fields[type name]`` attributes as a ``getattr`` would give
        them, then the objects its ``links[type name]`` attributes hold, walked the same way
        (``fields={"KDNode": ["dim", "split"], "KDLeaf": ["indices"]}, links={"KDNode":
        ["left", "right"]}``). An object of another type comes with no values and is not
        walked into.

        The worker stops after ``max_nodes + 1`` objects and below depth ``max_depth + 1``,
        so a test that checks it has read at most ``max_nodes`` objects and none deeper
        than ``max_depth`` sees a structure too big or too deep without more of it being
        sent; the codec's item limit bounds the reply. With ``max_items`` the list, tuple and
        array values may hold that many items in all: the first that would go past it comes
        cut to one item more than was left, and the walk ends with it, so a test that
        counts the items it has read fails on that value instead of on a reply too large
        to send. The listing is checked for shape
        here (type names are strings, each with as many values as its type has fields);
        an iterator that runs out early (the worker sent less than a pre-order walk
        needs) raises ``ProtocolError``."""
        message = {"op": "walk", "obj": root._ref.id, "fields": fields, "links": links,
                   "max_nodes": max_nodes, "max_depth": max_depth, "max_items": max_items}
        listed = self._ask(message, root)
        if type(listed) is not list or len(listed) > max_nodes + 1:
            raise ProtocolError("the worker's walk is not a list of at most the nodes asked for")
        for entry in listed:
            if type(entry) is not tuple or len(entry) != 2 or type(entry[0]) is not str \
                    or type(entry[1]) is not list or len(entry[1]) != len(fields.get(entry[0], [])):
                raise ProtocolError("the worker's walk lists a node of another shape than asked for")
        return _until_complete(listed)

    def _flatten(self, call: Call, steps: list[dict[str, Any]], memo: Memo) -> int:
        """Append ``call``'s steps (its ``Call`` arguments first) to ``steps``; its step number."""
        if call.function._generation != self._channel.generation:
            raise StudentCodeError("StaleObject", "an object from before the worker was restarted")
        args = tuple(HandleRef(-self._flatten(a, steps, memo), "step", False) if isinstance(a, Call) else a
                     for a in call.args)
        kwargs = {k: HandleRef(-self._flatten(a, steps, memo), "step", False) if isinstance(a, Call) else a
                  for k, a in call.kwargs.items()}
        steps.append({"obj": call.function._ref.id, "args": self._encode_args(args, memo),
                      "kwargs": self._encode_args(kwargs, memo)})
        return len(steps)

    def same(self, a: Any, b: Any) -> bool:
        """Whether two remote objects are the same object in the worker (``a is b``)."""
        return isinstance(a, Remote) and isinstance(b, Remote) and a._ref.id == b._ref.id \
            and a._generation == b._generation

    # -- plumbing ----------------------------------------------------------------------
    def _encode_args(self, value: Any, memo: Memo | None = None) -> Any:
        def handle_for(obj: Any) -> HandleRef:
            if isinstance(obj, Remote):
                if obj._generation != self._channel.generation:
                    raise StudentCodeError("StaleObject", "an object from before the worker was restarted")
                return obj._ref
            raise TypeError(
                f"only plain data and remote objects can be passed to student code, not {type(obj).__name__}"
            )

        try:
            return encode(value, handle_for=handle_for, memo=memo)
        except NotPlain as exc:
            raise TypeError(f"argument is not plain data: {exc}") from None

    def _ask(self, message: dict[str, Any], target: Remote | None, *, reply_out: dict[str, Any] | None = None) -> Any:
        if target is not None and target._generation != self._channel.generation:
            raise StudentCodeError("StaleObject", "an object from before the worker was restarted")
        reply = self._channel.request(message, timeout=self._timeout)
        checked = check_reply(message, reply)
        if reply_out is not None:
            reply_out.update(checked)
        if checked["ok"]:
            generation = self._channel.generation
            value = decode(checked["value"], resolve=lambda ref: Remote(self, ref, generation))
            if message["op"] == "has" and type(value) is not bool:
                raise ProtocolError("the worker answered a name check with something other than true/false")
            return value
        if checked["kind"] == "missing":
            # the name the test asked for, never one the worker names
            raise MissingName(str(message["name"]))
        if checked["not_implemented"]:
            raise NotAttempted(checked["ename"], checked["evalue"])
        raise StudentCodeError(checked["ename"], checked["evalue"], checked["builtin"], where=checked["where"])


def _until_complete(listed: list[tuple[str, list[Any]]]) -> Iterator[tuple[str, list[Any]]]:
    """``listed``, then ``ProtocolError`` for a reader that needs more of the walk."""
    yield from listed
    raise ProtocolError("the worker's walk ended before the structure did")


def check_reply(request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """The reply reduced to what ``request`` could legitimately produce, or ``ProtocolError``.

    The worker is the student's: a patched ``WorkerCore.handle`` can answer anything. So
    the shape of every reply is checked against the request: a value for any request, a
    "missing" only for a name lookup and naming exactly the requested name, an exception
    with a type name that is an identifier. Protocol errors are worded by the grader and
    never quote what the worker sent.
    """
    ok = reply.get("ok")
    if ok is True:
        if "value" not in reply:
            raise ProtocolError("the worker's reply has no value")
        checked: dict[str, Any] = {"ok": True, "value": reply["value"]}
        if request.get("warnings"):
            caught = reply.get("warnings", [])
            if type(caught) is not list or len(caught) > MAX_WARNINGS or any(type(w) is not str for w in caught):
                raise ProtocolError("the worker's warnings are not a short list of strings")
            checked["warnings"] = [w[:MAX_TEXT] for w in caught]
        if request.get("inputs"):
            inputs = reply.get("inputs")
            if type(inputs) is not list or len(inputs) != 2:
                raise ProtocolError("the worker did not send back the call's arguments")
            checked["inputs"] = inputs
        return checked
    if ok is not False:
        raise ProtocolError("the worker's reply is neither a value nor an error")
    kind = reply.get("kind")
    if kind == "missing":
        if request.get("op") != "get" or reply.get("name") != request.get("name"):
            raise ProtocolError("the worker reported a missing name the test did not look up")
        return {"ok": False, "kind": "missing"}
    if kind == "exception":
        ename, evalue, stub = reply.get("ename"), reply.get("evalue", ""), reply.get("not_implemented", False)
        if type(ename) is not str or not ename.isidentifier() or len(ename) > MAX_NAME \
                or type(evalue) is not str or type(stub) is not bool:
            raise ProtocolError("the worker's exception report is malformed")
        # the nearest built-in base class (``class E(ValueError)`` satisfies ``except ValueError``):
        # kept only when it names one of Python's own exceptions
        base = reply.get("builtin")
        known = type(base) is str and isinstance(getattr(builtins, base, None), type) \
            and issubclass(getattr(builtins, base), BaseException)
        return {"ok": False, "kind": "exception", "ename": ename, "evalue": evalue[:MAX_TEXT], "not_implemented": stub,
                "builtin": base if known else None, "where": reply.get("where")}  # checked where it is shown
    raise ProtocolError("the worker's reply is of an unknown kind")


def unchanged(sent: Any, now: Any) -> bool:
    """Whether an argument came back from a call as it was sent: same type, same shape and
    dtype, same values bit for bit (NaN equals NaN); containers compared item by item.
    Remote objects (a tree the test built in the worker) are not data and always count as
    unchanged."""
    if isinstance(sent, Remote):
        return True
    if isinstance(sent, np.ndarray):
        return isinstance(now, np.ndarray) and now.shape == sent.shape and now.dtype == sent.dtype \
            and now.tobytes() == sent.tobytes()
    if isinstance(sent, dict):
        return (isinstance(now, dict) and sent.keys() == now.keys()
                and all(unchanged(v, now[k]) for k, v in sent.items()))
    if isinstance(sent, (list, tuple)):
        return type(now) is type(sent) and len(now) == len(sent) and all(unchanged(a, b) for a, b in zip(sent, now))
    # scalars: the codec may turn numpy scalars into Python ones, so compare values (NaN equals NaN)
    try:
        return bool(sent == now) or bool(np.isnan(sent) and np.isnan(now))
    except (TypeError, ValueError):
        return False
