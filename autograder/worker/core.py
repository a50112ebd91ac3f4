"""What the worker does with a request: run a cell, look up a name, call, read an attribute.

The same ``WorkerCore`` serves the sandboxed worker (over pipes) and the in-process
reference run of the hidden tests, so the tests see identical behaviour in both. Values
leave as plain data when they are plain data and as handles otherwise.
"""

from __future__ import annotations

import builtins
import re
import sys
import warnings
from types import TracebackType
from typing import Any

from IPython.core.compilerop import CachingCompiler
from IPython.core.interactiveshell import InteractiveShell
from traitlets import Type

from autograder.exceptions import NotPlain
from autograder.worker.codec import HandleRef, decode, encode
from autograder.worker.display import TextOnly

MAX_MESSAGE_TEXT = 500
MAX_WARNINGS = 20


def _safe_text(obj: Any) -> str:
    """``str(obj)`` for reporting, surviving a hostile ``__str__``."""
    try:
        text = str(obj)
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything
        return "<unprintable>"
    return text if isinstance(text, str) else "<unprintable>"


def _no_input(*_args: Any, **_kwargs: Any) -> str:
    raise EOFError("input() is not available while the notebook is graded")


def _no_shell(*_args: Any, **_kwargs: Any) -> None:
    print("shell commands (! and %%bash) are disabled while the notebook is graded", file=sys.stderr)


DISABLED_CELL_MAGICS = ("bash", "sh", "script", "perl", "ruby", "python", "python2", "python3", "pypy", "system", "sx")


_CELL_NAME = re.compile(r"<cell (\d{1,6})>")


class CellCompiler(CachingCompiler):
    """Names a cell's code after the cell's place in the notebook (``<cell 3>``) while
    ``cell`` is set, so a traceback frame says which cell it runs in."""

    cell: int | None = None

    def get_code_name(self, raw_code: str, transformed_code: str, number: int) -> str:
        if self.cell is None:
            return super().get_code_name(raw_code, transformed_code, number)
        return f"<cell {self.cell}>"


def position(exc: BaseException) -> list[int] | None:
    """Where in the notebook ``exc`` was raised: ``[cell, line]`` of the innermost frame
    that runs a cell's code (frames in libraries are passed over), or of a SyntaxError in a
    cell; None when no frame is a cell's. Only a position: the grader shows the line from
    its own copy of the notebook, and checks the position against it."""
    found: list[int] | None = None
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        match = _CELL_NAME.fullmatch(tb.tb_frame.f_code.co_filename)
        if match:
            found = [int(match.group(1)), tb.tb_lineno]
        tb = tb.tb_next
    if found is None and isinstance(exc, SyntaxError) and isinstance(exc.filename, str) and exc.lineno:
        match = _CELL_NAME.fullmatch(exc.filename)
        found = [int(match.group(1)), exc.lineno] if match else None
    return found


class GradingShell(InteractiveShell):
    """A headless shell: ``%matplotlib inline`` and friends select a backend, no GUI loop;
    cells compiled under their place in the notebook (``CellCompiler``); displayed values
    formatted as text only, figures drawn but never rendered (``worker/display.py``)."""

    compiler_class = Type(CellCompiler)

    def init_display_formatter(self) -> None:
        """The grading shell's formatter: nobody looks at a cell's pictures."""
        self.display_formatter = TextOnly(parent=self)
        self.configurables.append(self.display_formatter)  # type: ignore[arg-type]  # IPython's own annotation is too narrow

    def enable_gui(self, gui: str | None = None) -> None:
        """There is no event loop to integrate with; plots render on Agg."""

    # `!cmd`, `x = !cmd` and the shell-running methods IPython's magics call
    system = system_raw = system_piped = getoutput = staticmethod(_no_shell)


def make_shell() -> InteractiveShell:
    """An IPython shell configured for grading: no history file, no shell escapes, no input."""
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.xmode = "Plain"
    shell = GradingShell.instance(config=config)
    cell_magics = shell.magics_manager.magics["cell"]
    line_magics = shell.magics_manager.magics["line"]
    for name in DISABLED_CELL_MAGICS:
        cell_magics.pop(name, None)
        line_magics.pop(name, None)
    for name in ("pip", "conda", "mamba", "uv", "sx", "system"):
        line_magics[name] = _no_shell
    return shell


class WorkerCore:
    """The request handler. Holds the student's namespace and the handle table."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.handles: dict[int, Any] = {}
        self._by_identity: dict[int, int] = {}  # id(obj) -> handle: one object, one handle
        self._next_handle = 1
        # the modules loaded before any of the notebook's code ran: a test reads NumPy (its
        # global random state) from here, never from a name the notebook could rebind
        self._modules = dict(sys.modules)
        builtins.input = _no_input
        shell.user_ns["input"] = _no_input

    # -- the student's namespace --------------------------------------------------------
    @property
    def namespace(self) -> dict[str, Any]:
        """The student's global namespace."""
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def run_cell(self, source: str, cell: int | None = None) -> dict[str, Any]:
        """Run one cell with IPython semantics; errors are reported, never raised.
        ``cell``: its 1-based place among the notebook's code cells, named in errors' positions."""
        compiler = self.shell.compile
        if isinstance(compiler, CellCompiler):
            compiler.cell = cell
        try:
            result = self.shell.run_cell(source, store_history=False)
        finally:
            if isinstance(compiler, CellCompiler):
                compiler.cell = None
        sys.stdout.flush()
        sys.stderr.flush()
        error = result.error_before_exec or result.error_in_exec
        if error is None:
            return {"ok": True, "error": None}
        return {"ok": True, "error": {"ename": type(error).__name__, "evalue": _safe_text(error)[:MAX_MESSAGE_TEXT],
                                      "where": position(error)}}

    # -- handles ------------------------------------------------------------------------
    def _handle_for(self, obj: Any) -> HandleRef:
        hid = self._by_identity.get(id(obj))
        if hid is None:  # handles keep their objects alive, so id() is never reused here
            hid = self._next_handle
            self._next_handle += 1
            self.handles[hid] = obj
            self._by_identity[id(obj)] = hid
        try:
            typename = type(obj).__name__
        except BaseException:  # noqa: BLE001 - hostile metaclass
            typename = "object"
        return HandleRef(hid, str(typename)[:200], callable(obj))

    def _resolve(self, ref: HandleRef) -> Any:
        try:
            return self.handles[ref.id]
        except KeyError:
            raise LookupError(f"unknown handle {ref.id}") from None

    def _value(self, value: Any) -> dict[str, Any]:
        try:
            return {"ok": True, "value": encode(value)}
        except NotPlain:
            return {"ok": True, "value": encode(self._handle_for(value))}

    def _calls(self, steps: list[dict[str, Any]]) -> list[Any]:
        """Make ``steps`` in order (``Student.build``, ``Student.each``): each calls a handle
        with arguments in which ``HandleRef(-k)`` stands for what step ``k`` (from 1)
        returned; what every step returned. One request for a structure the tests assemble
        from the notebook's classes (a K-D tree, node by node), or for a loop of calls,
        instead of one per node or call."""
        results: list[Any] = []

        def resolve(ref: HandleRef) -> Any:
            if ref.id >= 0:
                return self._resolve(ref)
            if -ref.id > len(results):
                raise LookupError(f"step {-ref.id} has not been made yet")
            return results[-ref.id - 1]

        for step in steps:
            target = self._resolve(HandleRef(int(step["obj"]), "", False))
            args = decode(step.get("args", {"t": []}), resolve=resolve)
            kwargs = decode(step.get("kwargs", {"d": []}), resolve=resolve)
            results.append(target(*args, **kwargs))
        if not results:
            raise LookupError("no steps to make")
        return results

    def _walk(self, root: Any, fields: dict[str, list[str]], links: dict[str, list[str]],
              max_nodes: int, max_depth: int, max_items: int | None = None) -> list[tuple[str, list[Any]]]:
        """The structure under ``root`` as a list of ``(type name, field values)`` in
        pre-order (``Student.walk``): each object's ``fields[type name]`` read in order,
        then its ``links[type name]`` walked the same way, left to right. An object whose
        type has no entry in ``fields`` is listed with no values and not walked into. The
        walk stops after ``max_nodes + 1`` objects or below ``max_depth``: one more than
        the grader accepts, so it sees that the structure is too big or too deep without it all being
        sent. With ``max_items``, the field values that are lists, tuples or arrays may hold
        that many items in all: the one that goes past it is sent cut to one item more than
        was left, and the walk ends there, so the grader sees the first value too long
        (a tree of huge leaves) and not a reply the codec must refuse. One request for a
        tree the test reads back (a K-D tree: 2n nodes) instead of one per attribute."""
        listed: list[tuple[str, list[Any]]] = []
        pending: list[tuple[Any, int]] = [(root, 0)]
        while pending and len(listed) <= max_nodes:
            obj, depth = pending.pop()
            kind = str(type(obj).__name__)[:200]
            names = fields.get(kind)
            if names is None:
                listed.append((kind, []))
                continue
            values = [getattr(obj, str(name)) for name in names]
            listed.append((kind, values))
            if max_items is not None:
                for place, value in enumerate(values):
                    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
                        if len(value) > max_items:
                            values[place] = value[:max_items + 1]
                            return listed
                        max_items -= len(value)
            if depth <= max_depth:
                children = [getattr(obj, str(name)) for name in links.get(kind, [])]
                pending.extend((child, depth + 1) for child in reversed(children))
        return listed

    @staticmethod
    def _exception(exc: BaseException) -> dict[str, Any]:
        return {
            "ok": False,
            "kind": "exception",
            "ename": type(exc).__name__,
            "evalue": _safe_text(exc)[:MAX_MESSAGE_TEXT],
            "not_implemented": isinstance(exc, NotImplementedError),
            "builtin": _builtin_base(exc),
            "where": position(exc),
        }

    # -- requests -----------------------------------------------------------------------
    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one request; the student's exceptions become replies, not crashes."""
        op = request.get("op")
        try:
            if op == "cell":
                cell = request.get("cell")
                return self.run_cell(str(request["src"]), cell if type(cell) is int else None)
            if op == "has":
                return {"ok": True, "value": str(request["name"]) in self.namespace}
            if op == "get":
                name = str(request["name"])
                if name not in self.namespace:
                    return {"ok": False, "kind": "missing", "name": name}
                return self._value(self.namespace[name])
            if op == "calls":
                made = self._calls(request["steps"])
                wanted = request.get("results")
                if wanted is None:
                    return self._value(made[-1])
                # several calls' values at once (``Student.each``): each as data or a handle
                return {"ok": True, "value": {"t": [self._value(made[int(k) - 1])["value"] for k in wanted]}}
            if op == "walk":
                listed = self._walk(self._resolve(HandleRef(int(request["obj"]), "", False)),
                                    dict(request["fields"]), dict(request["links"]),
                                    int(request["max_nodes"]), int(request["max_depth"]),
                                    None if request.get("max_items") is None else int(request["max_items"]))
                return {"ok": True, "value": encode(listed, handle_for=self._handle_for)}
            if op == "module":
                return self._value(self._modules.get(str(request["name"])))
            if op == "typename":
                return {"ok": True, "value": type(self._resolve(HandleRef(int(request["obj"]), "", False))).__name__}
            target = self._resolve(HandleRef(int(request["obj"]), "", False))
            if op == "getattr":
                return self._value(getattr(target, str(request["name"])))
            if op == "call":
                args = decode(request.get("args", {"t": []}), resolve=self._resolve)
                kwargs = decode(request.get("kwargs", {"d": []}), resolve=self._resolve)
                if not request.get("warnings"):
                    reply = self._value(target(*args, **kwargs))
                else:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        reply = self._value(target(*args, **kwargs))
                    reply["warnings"] = [f"{w.category.__name__}: {_safe_text(w.message)}"[:MAX_MESSAGE_TEXT]
                                         for w in caught[:MAX_WARNINGS]]
                if request.get("inputs"):
                    # the arguments as the call left them: the grader compares them with what
                    # it sent, to tell whether the student's code changed its caller's data
                    reply["inputs"] = [encode(args, handle_for=self._handle_for),
                                       encode(kwargs, handle_for=self._handle_for)]
                return reply
            return {"ok": False, "kind": "protocol", "evalue": f"unknown op {str(op)[:30]!r}"}
        except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
            return self._exception(exc)


def _builtin_base(exc: BaseException) -> str:
    """The nearest of Python's own exception classes ``exc`` derives from (``ValueError``
    for ``class ZeroVectorError(ValueError)``), so a test's ``except ValueError`` matches
    as it would in the student's kernel; "Exception" when none can be read."""
    try:
        for klass in type(exc).__mro__:
            if getattr(builtins, klass.__name__, None) is klass:
                return str(klass.__name__)
    except BaseException:  # noqa: BLE001 - a hostile metaclass
        pass
    return "Exception"
