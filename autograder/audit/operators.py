"""Mutation operators: one small change to the code between a cell's solution markers.

Written here rather than borrowed, after looking at the engines: mutmut 3 generates
mutants only as "trampolined" copies of whole modules for its own pytest runner (its
operators are internal and it pulls in a terminal UI), and cosmic-ray's operators (parso
based, behind a database/git/web stack) have no dropped statement, swapped argument,
off-by-one slice or in-place-vs-copy operator, the kinds an ML notebook gets wrong. The
operators below find their node with ``ast`` and edit the cell's *text* at the node's
position, so a mutant differs from the reference by exactly the change it makes
(comments, layout and the markers are kept, and its diff is one line or so).

Kinds (``Mutation.operator``):
- ``arithmetic``: ``+ -``, ``* /``, ``** *``, ``// /``, ``@ *``, in expressions and in
  ``+=``-style assignments; a unary ``-`` or ``not`` dropped;
- ``comparison``: ``< <=``, ``> >=``, ``== !=``, ``in`` / ``not in``, ``is`` / ``is not``,
  and ``and`` / ``or``;
- ``constant``: an int ``n`` to ``n + 1`` and ``n - 1``, a float ``x`` to ``2x`` and
  ``x / 2`` (``0.0`` to ``1.0``), ``True`` / ``False``;
- ``drop``: a statement replaced by ``pass`` (not a ``return``: dropping one is caught by
  every test, and teaches nothing);
- ``swap``: two adjacent positional arguments of a call exchanged; a keyword argument
  dropped (``axis=1``, ``kind="stable"``);
- ``slice``: a slice bound moved by one, a missing one added (``[:k]`` to ``[1:k]``,
  ``[1:]`` to ``[1:-1]``), a step of ``-1`` made ``1``;
- ``copy``: ``a += b`` to ``a = a + b`` and back, ``x.copy()`` to ``x``,
  ``np.array(x)`` to ``np.asarray(x)``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("arithmetic", "comparison", "constant", "drop", "swap", "slice", "copy")

_ARITHMETIC: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"), ast.Pow: ("**", "*"), ast.MatMult: ("@", "*"), ast.Mod: ("%", "//"),
}
_COMPARISON: dict[type[ast.cmpop], tuple[str, tuple[str, ...]]] = {
    ast.Lt: ("<", ("<=",)), ast.LtE: ("<=", ("<",)), ast.Gt: (">", (">=",)), ast.GtE: (">=", (">",)),
    ast.Eq: ("==", ("!=",)), ast.NotEq: ("!=", ("==",)),
}
_DROPPABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Break, ast.Continue, ast.If, ast.For,
              ast.While, ast.With, ast.Raise)


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` (character offsets in the cell) by ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Mutation:
    """One small change: its kind, what it does in words, and the text edits making it."""

    operator: str
    description: str
    edits: tuple[Edit, ...]

    def apply(self, source: str) -> str:
        """The source with this mutation's edits made (edits never overlap)."""
        for edit in sorted(self.edits, key=lambda e: e.start, reverse=True):
            source = source[: edit.start] + edit.text + source[edit.end :]
        return source


class _Positions:
    """ast positions (1-based line, UTF-8 byte column) to character offsets in the source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0]
        for line in source.split("\n"):
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.lines = source.split("\n")

    def offset(self, line: int, col: int) -> int:
        text = self.lines[line - 1].encode("utf-8")[:col].decode("utf-8", errors="replace")
        return self.starts[line - 1] + len(text)

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]


def parsable(source: str) -> str:
    """The cell with IPython-only lines (``%magic``, ``!command``) turned into comments, same
    length, so ``ast`` reads the rest with every position unchanged."""
    return "\n".join("#" + line[1:] if line[:1] in ("%", "!") else line for line in source.split("\n"))


def mutations(source: str, first_line: int, last_line: int) -> Iterator[Mutation]:
    """Every mutation of the nodes lying wholly within lines ``first_line``..``last_line``
    (1-based, inclusive) of a cell's source, in source order; the cell must parse."""
    tree = ast.parse(parsable(source))
    at = _Positions(source)
    docstrings = {id(n.body[0]) for n in ast.walk(tree)
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
                  and isinstance(n.body[0].value.value, str)}
    negated = {id(n.operand) for n in ast.walk(tree) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)
               and isinstance(n.operand, ast.Constant) and type(n.operand.value) in (int, float)}
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr, ast.keyword))
             and n.end_lineno is not None and first_line <= n.lineno and n.end_lineno <= last_line]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:
        yield from _arithmetic(node, at)
        yield from _comparison(node, at)
        yield from _constant(node, at, negated)
        if isinstance(node, _DROPPABLE) and id(node) not in docstrings:
            start, end = at.span(node)
            yield Mutation("drop", f"statement dropped: {_first_line(at.text(node))}", (Edit(start, end, "pass"),))
        yield from _swap(node, at)
        yield from _slice(node, at)
        yield from _copy(node, at)


def _first_line(text: str) -> str:
    line = text.split("\n", 1)[0].strip()
    return line + " ..." if "\n" in text else line


def _token(at: _Positions, left: ast.AST, right: ast.AST, pattern: str) -> tuple[int, int] | None:
    """Where the operator matching ``pattern`` (a regex) is between two nodes: the text
    between them holds only it, brackets, spaces and line breaks."""
    gap_start, gap_end = at.span(left)[1], at.span(right)[0]
    found = re.search(pattern, at.source[gap_start:gap_end])
    return None if found is None else (gap_start + found.start(), gap_start + found.end())


def _arithmetic(node: ast.AST, at: _Positions) -> Iterator[Mutation]:
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        old, new = _ARITHMETIC[type(node.op)]
        where = _token(at, node.left, node.right, re.escape(old))
        if where is not None:
            yield Mutation("arithmetic", f"{old} -> {new}", (Edit(*where, new),))
    elif isinstance(node, ast.AugAssign) and type(node.op) in _ARITHMETIC:
        old, new = _ARITHMETIC[type(node.op)]
        where = _token(at, node.target, node.value, re.escape(old + "="))
        if where is not None:
            yield Mutation("arithmetic", f"{old}= -> {new}=", (Edit(*where, new + "="),))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return  # a negative literal: the constant operator changes it
        yield Mutation("arithmetic", f"unary {'-' if isinstance(node.op, ast.USub) else 'not'} dropped",
                       (Edit(at.span(node)[0], at.span(node.operand)[0], ""),))


_WORD_OPERATORS: dict[type[ast.cmpop], tuple[str, str]] = {  # a regex for it, and its negation
    ast.In: (r"\bin\b", "not in"), ast.NotIn: (r"\bnot\s+in\b", "in"),
    ast.Is: (r"\bis\b", "is not"), ast.IsNot: (r"\bis\s+not\b", "is"),
}


def _comparison(node: ast.AST, at: _Positions) -> Iterator[Mutation]:
    if isinstance(node, ast.Compare):
        for op, left, right in zip(node.ops, [node.left, *node.comparators[:-1]], node.comparators):
            if type(op) in _COMPARISON:
                old, news = _COMPARISON[type(op)]
                where = _token(at, left, right, re.escape(old))
                if where is not None:
                    for new in news:
                        yield Mutation("comparison", f"{old} -> {new}", (Edit(where[0], where[1], new),))
            elif type(op) in _WORD_OPERATORS:
                pattern, new = _WORD_OPERATORS[type(op)]
                where = _token(at, left, right, pattern)
                if where is not None:
                    yield Mutation("comparison", f"{at.source[where[0]:where[1]]} -> {new}", (Edit(*where, new),))
    elif isinstance(node, ast.BoolOp):
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in zip(node.values, node.values[1:]):
            where = _token(at, left, right, rf"\b{old}\b")
            if where is not None:
                yield Mutation("comparison", f"{old} -> {new}", (Edit(*where, new),))


def _constant(node: ast.AST, at: _Positions, negated: set[int]) -> Iterator[Mutation]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and id(node.operand) in negated:
        value = -node.operand.value  # type: ignore[attr-defined]
    elif isinstance(node, ast.Constant) and id(node) not in negated:
        value = node.value
    else:
        return
    start, end = at.span(node)
    if isinstance(value, bool):
        yield Mutation("constant", f"{value} -> {not value}", (Edit(start, end, str(not value)),))
    elif isinstance(value, int):
        for new in (value + 1, value - 1):
            yield Mutation("constant", f"{value} -> {new}", (Edit(start, end, str(new)),))
    elif isinstance(value, float):
        for changed in ((value * 2, value / 2) if value else (1.0,)):
            yield Mutation("constant", f"{value!r} -> {changed!r}", (Edit(start, end, repr(changed)),))


def _swap(node: ast.AST, at: _Positions) -> Iterator[Mutation]:
    if not isinstance(node, ast.Call):
        return
    args = node.args
    if not any(isinstance(a, ast.Starred) for a in args):
        for first, second in zip(args, args[1:]):
            a, b = at.text(first), at.text(second)
            if a != b:
                yield Mutation("swap", f"arguments {a} and {b} swapped",
                               (Edit(*at.span(first), b), Edit(*at.span(second), a)))
    for index, keyword in enumerate(node.keywords):
        if keyword.arg is None:
            continue
        start, end = at.offset(keyword.lineno, keyword.col_offset), at.span(keyword.value)[1]
        # take the separating comma with it: the one before, or the one after for the first argument
        previous = node.keywords[index - 1].value if index else (args[-1] if args else None)
        if previous is not None:
            start = at.span(previous)[1]
        elif index + 1 < len(node.keywords):
            nxt = node.keywords[index + 1]
            end = at.offset(nxt.lineno, nxt.col_offset)
        yield Mutation("swap", f"argument {keyword.arg}= dropped", (Edit(start, end, ""),))


def _slice(node: ast.AST, at: _Positions) -> Iterator[Mutation]:
    if not isinstance(node, ast.Slice):
        return
    start, end = at.span(node)
    text = at.source[start:end]
    for name, bound in (("lower", node.lower), ("upper", node.upper)):
        if bound is None:
            continue
        literal = _int_literal(bound)
        s, e = at.span(bound)
        for delta in (1, -1):
            new = str(literal + delta) if literal is not None else f"{at.text(bound)} {'+' if delta > 0 else '-'} 1"
            yield Mutation("slice", f"{name} bound {at.text(bound)} -> {new}", (Edit(s, e, new),))
    if node.lower is None and node.upper is not None:
        yield Mutation("slice", "lower bound 1 added", (Edit(start, start, "1"),))
    if node.upper is None and node.lower is not None:
        colon = start + text.index(":")
        yield Mutation("slice", "upper bound -1 added", (Edit(colon + 1, colon + 1, "-1"),))
    if node.step is not None and _int_literal(node.step) == -1:
        yield Mutation("slice", "step -1 -> 1", (Edit(*at.span(node.step), "1"),))


_PRECEDENCE = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.FloorDiv: 2, ast.Mod: 2, ast.MatMult: 2, ast.Pow: 3}


def _operand(value: ast.expr, op: ast.operator, at: _Positions) -> str:
    """``value`` as the right operand of ``op``: in brackets unless it binds tighter."""
    text = at.text(value)
    atomic = isinstance(value, (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Call))
    tighter = isinstance(value, ast.BinOp) and _PRECEDENCE.get(type(value.op), 0) > _PRECEDENCE.get(type(op), 0)
    return text if atomic or tighter else f"({text})"


def _int_literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    return None


def _copy(node: ast.AST, at: _Positions) -> Iterator[Mutation]:
    if isinstance(node, ast.AugAssign) and type(node.op) in _ARITHMETIC:
        target = at.text(node.target)
        symbol = _ARITHMETIC[type(node.op)][0]
        yield Mutation("copy", f"{target} {symbol}= ... -> {target} = {target} {symbol} ... (a copy)",
                       (Edit(*at.span(node), f"{target} = {target} {symbol} {_operand(node.value, node.op, at)}"),))
    elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp)
          and type(node.value.op) in _ARITHMETIC and at.text(node.targets[0]) == at.text(node.value.left)):
        target = at.text(node.targets[0])
        symbol = _ARITHMETIC[type(node.value.op)][0]
        yield Mutation("copy", f"{target} = {target} {symbol} ... -> {target} {symbol}= ... (in place)",
                       (Edit(*at.span(node), f"{target} {symbol}= {at.text(node.value.right)}"),))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "copy" and not node.args and not node.keywords:
            owner = at.text(node.func.value)
            yield Mutation("copy", f"{owner}.copy() -> {owner}", (Edit(*at.span(node), owner),))
        elif (node.func.attr == "array" and isinstance(node.func.value, ast.Name)
              and node.func.value.id in ("np", "numpy")):
            start = at.span(node.func)[0]
            yield Mutation("copy", "np.array -> np.asarray (no copy)",
                           (Edit(start, at.span(node.func)[1], f"{node.func.value.id}.asarray"),))
