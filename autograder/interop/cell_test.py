"""Running an imported nbgrader or otter test cell as one of our hidden tests.

The cell's code runs here, in the grader, never in the worker: the trust boundary stays
where it is. The names the cell uses and does not define come first from the notebook's
own imports (``prelude``, run here too), then from the submission through ``student``:
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
from typing import Any

from autograder.exceptions import StudentCodeError
from autograder.testing.student import Remote, Student


class Translated:
    """A remote object whose calls raise the student's built-in exceptions as themselves
    (``ValueError``, not ``StudentCodeError``), so a cell's ``except ValueError`` works.
    ``NotImplementedError`` stays ``NotAttempted``: the task then counts as not attempted."""

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


def free_names(source: str) -> list[str]:
    """Names the cell reads but never binds, in first-use order (builtins excluded)."""
    tree = ast.parse(source)
    bound: set[str] = set()
    used: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                used.append(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    seen: set[str] = set()
    free = []
    for name in used:
        if name not in bound and name not in seen and not hasattr(builtins, name):
            seen.add(name)
            free.append(name)
    return free


def _run_prelude(prelude: str, namespace: dict[str, Any]) -> None:
    """The notebook's imports, one statement at a time; one the grader cannot import is
    skipped, and its name then comes from the submission like any other."""
    for statement in ast.parse(prelude).body:
        with contextlib.suppress(ImportError):
            exec(compile(ast.Module([statement], []), "<notebook imports>", "exec"), namespace)  # noqa: S102


def run_cell(student: Student, prelude: str, source: str, *, expected_output: str | None = None) -> None:
    """Run a test cell's ``source`` against the submission; raise when it fails.

    ``expected_output`` (otter's doctest-style cells) is the output the cell printed in
    the master notebook: what the cell prints here, plus the repr of a final expression,
    must equal it (trailing whitespace ignored), as otter's doctest compares it.
    """
    namespace: dict[str, Any] = {"__name__": "__test_cell__"}
    _run_prelude(prelude, namespace)
    for name in free_names(source):
        if name not in namespace:
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


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
