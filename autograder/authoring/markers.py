"""Solution regions in a code cell: where they are, and rewriting a cell around them.

A region is the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, each marker
alone on its line and indented like the code it wraps. Anything that looks like a marker
but is not spelled exactly so is refused rather than ignored: a marker the parser skips
would ship its solution to every student (otter's failure mode).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from autograder.exceptions import MarkerError

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"

# "begin/end solution(s)" in any case, joined by spaces, underscores or hyphens. It is
# marker text when written in capitals or after a "#" (any number of them, code before or
# after it on the line); "the end solution" in prose is not.
_WORDS = re.compile(r"\b(?:begin|end)[\s_-]*solutions?\b", re.IGNORECASE)
# A comment line "#... BEGIN|END <word>": the word is checked for a misspelt "solution".
_TYPO = re.compile(r"^\s*#+\s*(?:begin|end)[\s_-]*([a-z]+)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Region:
    """One solution region: the 0-based line indexes of its two markers."""

    begin: int
    end: int
    indent: str  # the BEGIN marker's leading whitespace, where the stub goes


def lines_of(source: str) -> list[str]:
    """Split a cell source so that ``"\\n".join`` gives it back unchanged."""
    return source.split("\n")


def has_marker_text(line: str) -> bool:
    """Whether a line holds a marker or something a hurried author meant as one: the
    marker's words, or a comment opening with BEGIN or END and a misspelt SOLUTION
    (``### END SOLUTON``), which would otherwise pass for an ordinary comment."""
    if any(m.group().isupper() or "#" in line[: m.start()] for m in _WORDS.finditer(line)):
        return True
    typo = _TYPO.match(line)
    return typo is not None and SequenceMatcher(None, typo.group(1).lower(), "solution").ratio() >= 0.8


def find_regions(source: str, *, path: Path | str, cell: int) -> tuple[Region, ...]:
    """The regions of one code cell, in order; ``cell`` is the 0-based cell index.

    Raises MarkerError (1-based cell and line) for an unbalanced, nested, mis-indented or
    malformed marker.
    """
    lines = lines_of(source)
    regions: list[Region] = []
    opened: int | None = None
    for index, line in enumerate(lines):
        text = line.strip()
        if text == BEGIN:
            if opened is not None:
                raise _error(
                    path, cell, index, f"{BEGIN} inside the region opened on line {opened + 1}: regions may not nest"
                )
            opened = index
        elif text == END:
            if opened is None:
                raise _error(path, cell, index, f"{END} without a {BEGIN} before it in this cell")
            indent = _indent(lines[opened])
            if _indent(line) != indent:
                raise _error(path, cell, index, f"{END} is indented differently from the {BEGIN} on line {opened + 1}")
            regions.append(Region(begin=opened, end=index, indent=indent))
            opened = None
        elif has_marker_text(line):
            raise _error(path, cell, index, _malformed(text))
    if opened is not None:
        raise _error(path, cell, opened, f"{BEGIN} is never closed by {END} in this cell")
    return tuple(regions)


def refuse_marker_text(source: str, *, path: Path | str, cell: int) -> None:
    """Refuse marker text in a cell that is not code: regions exist only in code cells."""
    for index, line in enumerate(lines_of(source)):
        if has_marker_text(line):
            raise _error(
                path,
                cell,
                index,
                "solution markers work only in code cells; a free-text model answer goes in a "
                'markdown cell with metadata "autograder": {"answer": N}',
            )


def rewrite(source: str, regions: tuple[Region, ...], body: Callable[[Region, list[str]], list[str]]) -> str:
    """The source with each region, markers included, replaced by ``body(region, inner_lines)``."""
    lines = lines_of(source)
    out: list[str] = []
    start = 0
    for region in regions:
        out.extend(lines[start : region.begin])
        out.extend(body(region, lines[region.begin + 1 : region.end]))
        start = region.end + 1
    out.extend(lines[start:])
    return "\n".join(out)


def split_regions(source: str, regions: tuple[Region, ...]) -> tuple[list[str], list[str]]:
    """(lines inside regions, lines outside them); the marker lines are in neither."""
    lines = lines_of(source)
    inside_at = {i for r in regions for i in range(r.begin + 1, r.end)}
    markers = {i for r in regions for i in (r.begin, r.end)}
    inside = [line for i, line in enumerate(lines) if i in inside_at]
    outside = [line for i, line in enumerate(lines) if i not in inside_at and i not in markers]
    return inside, outside


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _malformed(text: str) -> str:
    return f"malformed solution marker {text!r}: write {BEGIN!r} or {END!r} exactly, on a line of its own"


def _error(path: Path | str, cell: int, line: int, what: str) -> MarkerError:
    return MarkerError.at(path, cell + 1, line + 1, what)
