"""Running an imported nbgrader or otter test cell as one of our hidden tests.

The cell's code runs here, in the grader, never in the worker: the trust boundary stays
where it is. The global names the cell reads (``cell_names``: scoped as Python scopes
them) come first from the notebook's own imports (``prelude``, run here too), then from
the submission through ``student``:
plain data as values, everything else (the student's functions, classes, fitted
objects) as remote objects the cell can call. Limits, documented in docs/INTEROP.md:
a cell that compares a remote object as data (``model == other``), reads the student's
printed output, or mutates student objects in place gets ``NotPlainData`` or sees
copies, and fails.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import re
import symtable
from typing import Any

from autograder.exceptions import RemoteAsData, StudentCodeError
from autograder.testing.student import Remote, Student


class Translated:
    """A remote object as a test cell sees it (a student's function, figure, model: any
    value that is not plain data). Its calls raise the student's built-in exceptions as
    themselves (``ValueError``, not ``StudentCodeError``), so a cell's ``except ValueError``
    works; ``NotImplementedError`` stays ``NotAttempted``: the task then counts as not
    attempted. Using it as data raises ``RemoteAsData``, which says what to check instead."""

    __slots__ = ("_remote",)

    def __init__(self, remote: Remote) -> None:
        object.__setattr__(self, "_remote", remote)

    def __getattr__(self, name: str) -> Any:
        return _translate(lambda: getattr(self._remote, name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(_unwrap(a) for a in args)
        kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        return _translate(lambda: self._remote(*args, **kwargs))

    def __repr__(self) -> str:
        return repr(self._remote)

    def _as_data(self, *_: Any, **__: Any) -> Any:
        raise RemoteAsData(self._remote._ref.typename)

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _as_data
    __getitem__ = __iter__ = __next__ = __len__ = __contains__ = __array__ = __float__ = __int__ = __index__ = _as_data
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __neg__ = _as_data
    __hash__ = object.__hash__


def _unwrap(value: Any) -> Any:
    return value._remote if isinstance(value, Translated) else value


def _translate(action: Any) -> Any:
    try:
        value = action()
    except StudentCodeError as error:
        builtin = getattr(builtins, error.builtin, None) if type(error) is StudentCodeError else None
        if isinstance(builtin, type) and issubclass(builtin, Exception):
            raise builtin(error.evalue) from None
        raise
    return Translated(value) if isinstance(value, Remote) else value


def cell_names(source: str) -> tuple[list[str], list[str]]:
    """(required, optional): the global names the cell reads, in first-use order.

    Scopes as Python resolves them (``symtable``): a test function's parameter ``x`` is its
    own, not the student's ``x``, while the cell's module-level ``x`` still is. A name the
    cell also binds at module level (``orig = squares; del squares; ...; squares = orig``)
    may be read before the cell binds it, so it is *optional*: fetched when the submission
    has it, as in the student's kernel. Names only the cell imports, and builtins, are
    never fetched.
    """
    table = symtable.symtable(source, "<test cell>", "exec")
    read: list[str] = []

    def visit(scope: symtable.SymbolTable) -> None:
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (scope is table or symbol.is_global()):
                read.append(symbol.get_name())
        for child in scope.get_children():
            visit(child)

    visit(table)
    module = {s.get_name(): s for s in table.get_symbols()}
    required, optional = [], []
    for name in dict.fromkeys(read):
        symbol = module.get(name)
        if symbol is not None and symbol.is_imported():
            continue
        if symbol is not None and symbol.is_assigned():
            optional.append(name)
        elif not hasattr(builtins, name):
            required.append(name)
    return required, optional


def _run_prelude(prelude: str, namespace: dict[str, Any]) -> None:
    """The notebook's imports, one statement at a time; one the grader cannot import is
    skipped, and its name then comes from the submission like any other."""
    for statement in ast.parse(prelude).body:
        with contextlib.suppress(ImportError):
            exec(compile(ast.Module([statement], []), "<notebook imports>", "exec"), namespace)  # noqa: S102


def run_cell(student: Student, prelude: str, source: str, *, expected_output: str | None = None,
             failure_message: str | None = None) -> None:
    """Run a test cell's ``source`` against the submission; raise when it fails.

    ``expected_output`` (otter's doctest-style cells) is the output the cell printed in
    the master notebook: what the cell prints here, plus the repr of a final expression,
    must equal it (trailing whitespace ignored), as otter's doctest compares it.
    ``failure_message`` (otter's test config) replaces the message of a failed check.
    """
    try:
        _run(student, prelude, source, expected_output)
    except AssertionError as error:
        if failure_message is None:
            raise
        raise AssertionError(failure_message) from error


def _run(student: Student, prelude: str, source: str, expected_output: str | None) -> None:
    namespace: dict[str, Any] = {"__name__": "__test_cell__"}
    _run_prelude(prelude, namespace)
    required, optional = cell_names(source)
    for name in required + optional:
        if name not in namespace and (name in required or name in student):
            value = getattr(student, name)
            namespace[name] = Translated(value) if isinstance(value, Remote) else value
    tree = ast.parse(source)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) and expected_output is not None else None
    body = tree.body[:-1] if last is not None else tree.body
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(ast.Module(body, []), "<test cell>", "exec"), namespace)  # noqa: S102
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<test cell>", "eval"), namespace)  # noqa: S307
            if value is not None:
                print(repr(value))
    if expected_output is not None and _normal(printed.getvalue()) != _normal(expected_output):
        raise AssertionError("the test cell's output differs from the expected output")


NUMPY_SCALAR = re.compile(r"\bnp\.(?:True_|False_)|\bnp\.(?:float|int|uint|complex|bool_?|str_)\d*\(([^()]*)\)")


def _normal(text: str) -> str:
    """Output as compared: trailing whitespace ignored, and numpy 2's scalar reprs
    (``np.True_``, ``np.float64(2.5)``) read as the Python values they hold, since values
    reach a test cell here as plain Python data (docs/INTEROP.md)."""
    text = NUMPY_SCALAR.sub(lambda m: m[1] if m[1] is not None else m[0][3:-1], text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
