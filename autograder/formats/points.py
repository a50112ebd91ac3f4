"""Points as a person writes them, the same in every output (pages, worksheet, marking sheet)."""

from __future__ import annotations


def format_points(value: float, decimal: str = ".") -> str:
    """7.0 -> "7", 7.25 -> "7.25", 2/3 -> "0.67"; ``decimal`` is the sheet's decimal mark."""
    return f"{value:.2f}".rstrip("0").rstrip(".").replace(".", decimal)
