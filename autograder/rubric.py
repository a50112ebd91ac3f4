"""Rubric items: what a mark given with them is worth and what it says.

An item belongs to one hand-graded task of one week: a number within the task (1, 2, ...,
what the marker writes on the sheet and sees on the form), points and a comment. A mark
that uses items is defined as

    points  = the sum of the applied items' points, plus the marker's adjustment,
              clipped to 0 .. the task's points
    comment = each applied item's comment with its points, one a line, in item order,
              then the marker's own comment

so an item may be a deduction (negative points), and editing an item's points or comment
changes every mark that uses it (the gradebook recomputes them; ``Gradebook.edit_rubric_item``).
The gradebook stores the result with the mark, so everything that reads marks (totals,
feedback, worksheet, LMS posts) reads a plain number and comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from autograder.formats.points import format_points


@dataclass(frozen=True)
class RubricItem:
    """One rubric item of a week's hand-graded task, as the gradebook holds it."""

    week: str
    task: int
    number: int    # within the task, from 1: what the sheet's ``rubric`` column and the form name
    points: float  # negative for a deduction
    comment: str


def rubric_points(items: Iterable[RubricItem], adjustment: float, maximum: float) -> float:
    """A rubric mark's points: the items' sum plus ``adjustment``, clipped to 0..``maximum``."""
    return min(maximum, max(0.0, sum(item.points for item in items) + adjustment))


def rubric_comment(items: Iterable[RubricItem], note: str) -> str:
    """A rubric mark's comment: each item's comment and points, one a line, then ``note``."""
    lines = [f"{item.comment} ({signed_points(item.points)})" for item in sorted(items, key=lambda i: i.number)]
    return "\n".join([*lines, note] if note.strip() else lines)


def signed_points(value: float) -> str:
    """+5, -2, +0.5: an item's points as its comment shows them."""
    return ("+" if value >= 0 else "-") + format_points(abs(value))


_SEPARATORS = re.compile(r"[\s,;+]+")


def parse_item_numbers(text: str) -> tuple[int, ...] | None:
    """The item numbers a marker wrote (``"1 3"``, ``"1;3"``, ``"1, 3"``), sorted and once
    each; None when something else than numbers is there."""
    parts = [part.lstrip("#Rr") for part in _SEPARATORS.split(text.strip()) if part]
    if not all(part.isdigit() for part in parts):
        return None
    return tuple(sorted({int(part) for part in parts}))


def format_item_numbers(numbers: Iterable[int]) -> str:
    """Item numbers as the sheet's ``rubric`` column writes them: ``"1 3"``."""
    return " ".join(str(n) for n in sorted(numbers))
