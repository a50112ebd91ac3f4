"""The ``student`` fixture's object: the hidden tests' remote view of a submission.

Attribute access, calls and constructors go to the worker as requests; plain data comes
back as values, everything else as ``Remote`` objects that can be called, inspected and
passed back. Nothing the worker sends is evaluated here.
"""

from __future__ import annotations

from typing import Any, Protocol

from autograder.exceptions import (
    MissingName,
    NotAttempted,
    NotPlainData,
    ProtocolError,
    StudentCodeError,
)
from autograder.worker.codec import HandleRef, NotPlain, decode, encode


class Channel(Protocol):
    """Where requests go: a sandboxed worker, or the in-process reference."""

    generation: int

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Send one request, return the reply (raising StudentTimeout/WorkerCrashed)."""


class Remote:
    """An object that stays in the worker. Usable as a callable or attribute holder, never
    as data: comparing it or turning it into an array raises ``NotPlainData``."""

    __slots__ = ("_student", "_ref", "_generation")

    def __init__(self, student: "Student", ref: HandleRef, generation: int) -> None:
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

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _not_data  # type: ignore[assignment]
    __array__ = __iter__ = __len__ = __float__ = __int__ = __index__ = __getitem__ = _not_data
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __neg__ = _not_data
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<remote {self._ref.typename}>"


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
        caught = reply.get("warnings", [])
        return value, [str(w)[:500] for w in caught[:20]] if isinstance(caught, list) else []

    def same(self, a: Any, b: Any) -> bool:
        """Whether two remote objects are the same object in the worker (``a is b``)."""
        return isinstance(a, Remote) and isinstance(b, Remote) and a._ref.id == b._ref.id \
            and a._generation == b._generation

    # -- plumbing ----------------------------------------------------------------------
    def _encode_args(self, value: Any) -> Any:
        def handle_for(obj: Any) -> HandleRef:
            if isinstance(obj, Remote):
                if obj._generation != self._channel.generation:
                    raise StudentCodeError("StaleObject", "an object from before the worker was restarted")
                return obj._ref
            raise TypeError(f"only plain data and remote objects can be passed to student code, not {type(obj).__name__}")

        try:
            return encode(value, handle_for=handle_for)
        except NotPlain as exc:
            raise TypeError(f"argument is not plain data: {exc}") from None

    def _ask(self, message: dict[str, Any], target: Remote | None, *, reply_out: dict[str, Any] | None = None) -> Any:
        if target is not None and target._generation != self._channel.generation:
            raise StudentCodeError("StaleObject", "an object from before the worker was restarted")
        reply = self._channel.request(message, timeout=self._timeout)
        if reply_out is not None:
            reply_out.update(reply)
        if reply.get("ok") is True:
            generation = self._channel.generation
            return decode(reply.get("value"), resolve=lambda ref: Remote(self, ref, generation))
        kind = reply.get("kind")
        if kind == "missing":
            raise MissingName(str(reply.get("name", message.get("name", "?")))[:100])
        if kind == "exception":
            ename, evalue = str(reply.get("ename", "Exception"))[:100], str(reply.get("evalue", ""))[:500]
            if reply.get("not_implemented") is True:
                raise NotAttempted(ename, evalue)
            raise StudentCodeError(ename, evalue)
        raise ProtocolError(f"unexpected reply kind {str(kind)[:30]!r}")
