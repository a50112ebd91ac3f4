"""The translatable text of a notebook, and the notebook rewritten in another language.

What a student reads is translated; what Python runs is not. So:

- a markdown cell is split into blocks at blank lines (a paragraph, a heading, a list, a
  table), each one message, so a changed sentence makes one block stale, not the cell;
  a display-math block (``$$ ... $$``) or a fenced code block alone is left as it is;
- in a code cell: comments, docstrings, and the string literal that is an ``assert``'s
  message, a ``print`` argument or an exception's message. Identifiers, other strings
  and solution markers stay as written. A cell Python cannot tokenize (IPython magics)
  keeps its code text untouched.

``notebook_messages`` and ``translate_notebook`` walk the cells the same way, so every
message found is exactly one replacement made.
"""

from __future__ import annotations

import ast
import copy
import inspect
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from nbformat import NotebookNode

from autograder.authoring.markers import BEGIN, END

Lookup = Callable[[str], str]

_BLANK = re.compile(r"(\n[ \t]*\n)")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Message:
    """One translatable text and where it was found (for the catalog's location comments)."""

    text: str
    cell: int  # 0-based index of the cell
    kind: str  # "markdown", "comment", "docstring" or "string"


def notebook_messages(nb: NotebookNode) -> list[Message]:
    """Every translatable text of ``nb``, in cell order (a text may repeat)."""
    found: list[Message] = []

    def record(cell: int, kind: str) -> Lookup:
        def lookup(text: str) -> str:
            found.append(Message(text, cell, kind))
            return text

        return lookup

    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            translate_markdown(cell.source, record(index, "markdown"))
        elif cell.cell_type == "code":
            for kind in ("comment", "docstring", "string"):
                translate_code(cell.source, record(index, kind), kinds=(kind,))
    return found


def translate_notebook(nb: NotebookNode, lookup: Lookup) -> NotebookNode:
    """A copy of ``nb`` with every translatable text replaced by ``lookup(text)``."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, lookup)
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, lookup)
    return nb


# -- markdown ---------------------------------------------------------------------------


def markdown_blocks(source: str) -> list[str]:
    """``source`` cut at blank lines into blocks and the separators between them, such that
    ``"".join`` gives it back; a fenced code block or display math spanning blank lines is
    kept whole. Blocks are at even indexes, separators at odd ones."""
    pieces = _BLANK.split(source)
    merged: list[str] = [pieces[0]]
    for separator, block in zip(pieces[1::2], pieces[2::2]):
        if _open(merged[-1]):
            merged[-1] += separator + block
        else:
            merged += [separator, block]
    return merged


def _open(block: str) -> bool:
    """Whether ``block`` ends inside a fenced code block or a ``$$`` display."""
    fences = sum(1 for line in block.split("\n") if line.lstrip().startswith("```"))
    return fences % 2 == 1 or block.count("$$") % 2 == 1


def _translatable_block(block: str) -> bool:
    text = block.strip()
    if not text or not _LETTER.search(text):
        return False
    if text.startswith("```") and text.endswith("```"):
        return False
    return not (text.startswith("$$") and text.endswith("$$") and text.count("$$") == 2)


def translate_markdown(source: str, lookup: Lookup) -> str:
    """``source`` with each translatable block replaced; leading and trailing whitespace of
    a block (its indentation, a final newline) is kept around the translation."""
    pieces = markdown_blocks(source)
    for i in range(0, len(pieces), 2):
        block = pieces[i]
        if _translatable_block(block):
            text = block.strip()
            start = block.index(text)
            pieces[i] = block[:start] + lookup(text) + block[start + len(text):]
    return "".join(pieces)


# -- code -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    """A piece of a cell's source to replace: 0-based (line, column) start and end."""

    start: tuple[int, int]
    end: tuple[int, int]
    kind: str
    text: str  # the message
    render: Callable[[str], str]  # translated message -> source text for the span


def translate_code(source: str, lookup: Lookup, *, kinds: tuple[str, ...] = ("comment", "docstring", "string")) -> str:
    """``source`` with its comments and student-facing strings replaced (see the module
    docstring); code Python cannot read is returned unchanged."""
    spans = [span for span in _code_spans(source) if span.kind in kinds]
    if not spans:
        return source
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    out = source
    for span in sorted(spans, key=lambda s: s.start, reverse=True):
        begin = offsets[span.start[0]] + span.start[1]
        end = offsets[span.end[0]] + span.end[1]
        out = out[:begin] + span.render(lookup(span.text)) + out[end:]
    return out


def _code_spans(source: str) -> Iterator[_Span]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        tree = ast.parse(source)
    except (SyntaxError, tokenize.TokenError, IndentationError, ValueError):
        return
    for token in tokens:
        if token.type == tokenize.COMMENT:
            span = _comment_span(token)
            if span is not None:
                yield span
    strings = {(t.start[0], t.start[1]): t for t in tokens if t.type == tokenize.STRING}
    for node, kind in _student_strings(tree):
        literal = strings.get((node.lineno, node.col_offset))
        if literal is None or literal.end != (node.end_lineno, node.end_col_offset):
            continue  # implicit concatenation or an f-string: not one literal
        span = _string_span(literal, str(node.value), kind)
        if span is not None:
            yield span


def _comment_span(token: tokenize.TokenInfo) -> _Span | None:
    raw = token.string
    body = raw.lstrip("#")
    text = body.strip()
    if raw.strip() in (BEGIN, END) or not _LETTER.search(text):
        return None
    if re.match(r"(noqa|type:|pragma|fmt:|!)", text):
        return None
    prefix = raw[: len(raw) - len(body)] + body[: len(body) - len(body.lstrip())]
    line, col = token.start[0] - 1, token.start[1]
    return _Span((line, col), (line, col + len(raw)), "comment", text, lambda t: prefix + t.replace("\n", " "))


def _student_strings(tree: ast.AST) -> Iterator[tuple[ast.Constant, str]]:
    """String constants a student reads: docstrings, assert messages, print and exception
    arguments."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and _is_str(body[0].value):
                yield body[0].value, "docstring"  # type: ignore[misc]
        elif isinstance(node, ast.Assert) and node.msg is not None and _is_str(node.msg):
            yield node.msg, "string"  # type: ignore[misc]
        elif isinstance(node, ast.Call) and _prints_or_raises(node):
            for arg in node.args:
                if _is_str(arg):
                    yield arg, "string"  # type: ignore[misc]


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(_LETTER.search(node.value))


def _prints_or_raises(call: ast.Call) -> bool:
    name = call.func.id if isinstance(call.func, ast.Name) else None
    return name == "print" or (name is not None and (name.endswith("Error") or name.endswith("Exception")))


def _string_span(token: tokenize.TokenInfo, value: str, kind: str) -> _Span | None:
    literal = token.string
    match = re.match(r"([rRuUbB]*)('''|\"\"\"|'|\")", literal)
    if match is None or "b" in match.group(1).lower():
        return None
    prefix, quote = match.groups()
    start = (token.start[0] - 1, token.start[1])
    end = (token.end[0] - 1, token.end[1])
    if kind == "docstring":
        indent = " " * token.start[1]
        text = inspect.cleandoc(value)
        tail = value[len(value.rstrip()):]  # a newline and indentation before the closing quotes
        closing = "\n" + indent if "\n" in tail else ""

        def render_doc(t: str) -> str:
            first, *rest = t.split("\n")
            body = first + "".join("\n" + (indent + line if line.strip() else "") for line in rest)
            return _literal(prefix, quote, body + closing)

        return _Span(start, end, kind, text, render_doc)
    return _Span(start, end, kind, value, lambda t: _literal(prefix, quote, t))


def _literal(prefix: str, quote: str, text: str) -> str:
    """A literal with the original prefix and quotes holding ``text``, or ``repr`` where
    the text cannot be written inside them unchanged."""
    raw = "r" in prefix.lower()
    fits = quote not in text and not text.endswith(quote[0]) and (len(quote) == 3 or "\n" not in text)
    if raw and fits and "\\" not in text[-1:]:
        return prefix + quote + text + quote
    if not raw:
        escaped = text.replace("\\", "\\\\")
        if quote not in escaped and not escaped.endswith(quote[0]) and (len(quote) == 3 or "\n" not in escaped):
            return prefix + quote + escaped + quote
    return repr(text)
