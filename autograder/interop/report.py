"""What an import did to the original notebook, told to the instructor line by line.

An import never changes a course silently: every construct it drops, rewrites or cannot
carry over is a ``Note`` naming the cell and line it came from, and every reason the week
could not be written is a problem in the one ``InteropError`` that refuses the import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from autograder.exceptions import InteropError

Kind = Literal["dropped", "changed", "instructor"]
HEADINGS: dict[Kind, str] = {
    "dropped": "dropped",
    "changed": "changed",
    "instructor": "needs you",
}


@dataclass(frozen=True)
class Note:
    """One thing the import did not carry over as it was."""

    kind: Kind
    where: str  # "cell 7, line 3" of the original notebook
    text: str

    def __str__(self) -> str:
        return f"{HEADINGS[self.kind]}: {self.where}: {self.text}"


@dataclass
class ImportReport:
    """The notes of one import, and the problems that refuse it."""

    origin: str
    notes: list[Note] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def note(self, kind: Kind, where: str, text: str) -> None:
        self.notes.append(Note(kind, where, text))

    def refuse_if_any(self) -> None:
        """Raise one InteropError listing every problem found so far; nothing is written."""
        if self.problems:
            listing = "\n".join(f"  - {p}" for p in self.problems)
            raise InteropError(f"{self.origin}: not imported, nothing was written; fix these and import again:\n"
                               f"{listing}")


def where(cell: int, line: int | None = None) -> str:
    """A 1-based place in the original notebook, as an editor shows it."""
    return f"cell {cell + 1}" + (f", line {line + 1}" if line is not None else "")
