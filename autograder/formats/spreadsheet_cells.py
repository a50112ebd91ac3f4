"""The one rule for a cell of a CSV file the project writes: it shows, it never runs.

A spreadsheet runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` as a formula (and
some strip a leading tab or carriage return first): a Moodle full name such as
``=HYPERLINK(CHAR(104)&...)``, which survives Moodle's file-name cleaning, or a file name
a student chose would run on the instructor's machine when the sheet is opened (OWASP,
"CSV Injection"). Every CSV writer passes each cell that comes from a student or the LMS
through ``spreadsheet_cell``; a sheet read back passes it through ``from_spreadsheet_cell``.
"""

from __future__ import annotations

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+([.,]\d*)?|[.,]\d+)")


def spreadsheet_cell(value: str) -> str:
    """``value`` with a leading quote when a spreadsheet would run it: shown as text. A plain
    number (a negative adjustment such as ``-2.5``) runs nothing and is left a number."""
    return "'" + value if value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(value) else value


def from_spreadsheet_cell(value: str) -> str:
    """The text ``spreadsheet_cell`` escaped, so a cell read back and written again keeps one quote."""
    return value[1:] if value.startswith("'") and value[1:].startswith(FORMULA_STARTS) else value
