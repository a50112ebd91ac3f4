"""Last check on the student notebook: no line of a solution or model answer survives.

The guard does not trust the steps before it. It re-reads the source and collects the
secret lines: lines inside solution regions or model-answer cells that appear nowhere
else in the source (a line the source also shows in the open, such as a ``return self``
after a region, gives nothing away). Any secret line in any cell of the student notebook
is refused: a region that was skipped, half-replaced or copied into another cell.

Lines compare with all whitespace removed, so re-indented or re-spaced code still counts.
Lines that carry no solution are never secret: blank ones, punctuation, and lines made
only of keywords and ``self``/``cls`` (``else:``, ``return self``, ``pass``, ``)``).
Without that, a step that legitimately writes such a line (as the stub does) would trip it.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from pathlib import Path

from nbformat import NotebookNode

from autograder.authoring.markers import find_regions, lines_of, split_regions
from autograder.exceptions import GenerationError
from autograder.generate.steps.base import Context, Preprocessor

_WORD = re.compile(r"[^\W\d]\w*|\d+")
_EMPTY_WORDS = frozenset(keyword.kwlist) | {"self", "cls"}


class LeakGuard(Preprocessor):
    """Refuse a student notebook that holds a secret line or any output."""

    def __init__(self, *, generated: Iterable[str] = ()) -> None:
        # lines the steps themselves write (the stub), allowed even if a solution has them
        self.generated = frozenset(_key(line) for line in generated)

    def preprocess(self, nb: NotebookNode, context: Context) -> NotebookNode:
        """Refuse a student notebook that still carries a solution line or a reference output."""
        public: set[str] = set()
        hidden: set[str] = set()
        for index, cell in enumerate(context.source.cells):
            shown, kept_back = _public_and_secret(cell, context.path, index)
            public.update(_key(line) for line in shown)
            hidden.update(_key(line) for line in kept_back if _tells(line))
        secret = hidden - public - self.generated
        for index, cell in enumerate(nb.cells):
            if cell.get("outputs"):
                raise GenerationError.at(
                    context.path, index + 1, "the student notebook would carry the reference's outputs"
                )
            for number, line in enumerate(lines_of(cell.source), start=1):
                if _key(line) in secret:
                    raise GenerationError.at(
                        context.path,
                        index + 1,
                        "refusing to write the student notebook: it repeats a line of a solution or model answer: "
                        f"{line.strip()!r}",
                        line=number,
                    )
        return nb


def _public_and_secret(cell: NotebookNode, path: Path, index: int) -> tuple[list[str], list[str]]:
    """A source cell's (lines shown to students, lines kept back)."""
    if "answer" in cell.get("metadata", {}).get("autograder", {}):
        return [], lines_of(cell.source)
    if cell.cell_type != "code":
        return lines_of(cell.source), []
    inside, outside = split_regions(cell.source, find_regions(cell.source, path=path, cell=index))
    return outside, inside


def _key(line: str) -> str:
    return "".join(line.split())


def _tells(line: str) -> bool:
    """Whether a line could reveal anything: it has a word that is not a keyword."""
    return any(word not in _EMPTY_WORDS for word in _WORD.findall(line))
