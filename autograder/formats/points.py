"""Points as a person writes them, the same in every output (pages, worksheet, marking sheet,
the command line's tables): the one points formatter. Two decimals at most, none when whole.

Seconds, counts and sizes are not points; the service's pages format them with the same
filter only to write every number of a page in its language's form.
"""

from __future__ import annotations

from babel.numbers import format_decimal

NO_POINTS = "–"  # where a page shows points that do not exist yet (no score, no mean)


def format_points(value: float, decimal: str = ".") -> str:
    """7.0 -> "7", 7.25 -> "7.25", 2/3 -> "0.67"; ``decimal`` is the sheet's decimal mark."""
    return f"{value:.2f}".rstrip("0").rstrip(".").replace(".", decimal)


def format_grade(value: float, decimals: int, decimal: str = ".") -> str:
    """Points as a spreadsheet's grade column writes them: always ``decimals`` decimals (Moodle's
    worksheet: ``85.00``, ``85,00``), ``decimal`` its decimal mark."""
    return f"{value:.{decimals}f}".replace(".", decimal)


def format_points_in(value: float, locale: str) -> str:
    """Points as ``locale`` writes a number (Babel: ``12.5``, ``12,5``; ``1,234.5`` in English),
    to the same two decimals as ``format_points``: a service page in the student's language."""
    return format_decimal(round(value, 2), locale=locale)
