"""Fill Moodle's offline grading worksheet ("Upload grading worksheet"), or write a new one.

Moodle's importer (``importgradeslib.php``) reads ``Identifier``, ``Grade``,
``Last modified (grade)`` and optionally ``Feedback comments``, and skips a row whose grade
was changed in Moodle after that row's timestamp. So the worksheet the instructor
downloaded is filled in place: only the ``Grade`` and ``Feedback comments`` cells of graded
participants change; every other byte (BOM, delimiter, quoting, line endings, dates, rows
nobody graded) is written back exactly as read. Grades use the worksheet's own decimal
separator and are scaled to its ``Maximum Grade`` when the week's total differs.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from jinja2 import Template

from autograder.exceptions import WorksheetError
from autograder.formats.atomic import write_text
from autograder.formats.points import format_grade, format_points
from autograder.formats.spreadsheet_cells import spreadsheet_cell
from autograder.formats.templating import environment
from autograder.moodle.names import loose_name
from autograder.results import Participant, Status, SubmissionResult

IDENTIFIER = "Identifier"
FULL_NAME = "Full name"
GROUP = "Group"
GRADE = "Grade"
MAXIMUM_GRADE = "Maximum Grade"
SCALE = "Scale"
LAST_MODIFIED = "Last modified (grade)"
FEEDBACK = "Feedback comments"
REQUIRED = (IDENTIFIER, GRADE, LAST_MODIFIED)

# Statuses whose score is a grade. An unreadable hand-in (error) or none at all is left for
# the instructor: the row keeps what Moodle wrote.
GRADED_STATUSES = frozenset({Status.GRADED, Status.NOT_ATTEMPTED, Status.TIMEOUT})
_BOM = "\ufeff"


@dataclass
class WorksheetFill:
    """What a fill did: the rows written for each result, and why the others were not."""

    filled: dict[str, list[str]] = field(default_factory=dict)  # result key -> Identifiers written
    skipped: dict[str, str] = field(default_factory=dict)  # result key -> reason


def fill_worksheet(
    *,
    worksheet: Path,
    results: Iterable[SubmissionResult],
    out: Path,
    comments: Callable[[SubmissionResult], str] | None = None,
    allow_pending: bool = False,
) -> WorksheetFill:
    """Write ``out``: ``worksheet`` with Grade and Feedback comments filled for every graded result.

    A result with manual tasks not marked yet (or marked for an answer since changed) is
    left as downloaded, so no provisional total reaches Moodle as if final, unless
    ``allow_pending``.
    A result fills the row whose Identifier is ``Participant <id>``; a team's result fills
    every row whose Group names the team. ``comments`` renders the feedback cell (default:
    ``feedback_comment`` with the worksheet's decimal separator). Raises WorksheetError when
    the worksheet lacks a required column, uses a scale, or is not UTF-8.
    """
    sheet = _Sheet.parse(Path(worksheet))
    decimal, decimals = sheet.number_format()
    render = comments or (lambda result: feedback_comment(result, decimal=decimal))
    report = WorksheetFill()
    owner: dict[int, str] = {}
    for result in results:
        rows = _not_gradable(result, allow_pending) or sheet.rows_for(result.participant)
        taken = [owner[r] for r in rows if r in owner] if isinstance(rows, list) else []
        if taken:
            rows = f"its rows were already filled from {taken[0]}"
        if isinstance(rows, str):
            report.skipped[result.key] = rows
            continue
        for row in rows:
            owner[row] = result.key
            sheet.set(row, GRADE, _grade(result, sheet.maximum(row), decimals, decimal))
            if sheet.has(FEEDBACK):
                sheet.set(row, FEEDBACK, render(result))
        report.filled[result.key] = [sheet.value(r, IDENTIFIER) for r in rows]
    write_text(Path(out), sheet.serialise())
    return report


def write_worksheet(
    *,
    results: Iterable[SubmissionResult],
    out: Path,
    decimal: str = ".",
    comments: Callable[[SubmissionResult], str] | None = None,
    allow_pending: bool = False,
) -> WorksheetFill:
    """Write a new worksheet (Identifier, Full name, Grade, Last modified (grade), Feedback comments).

    For when no downloaded worksheet is at hand: one row per participant id in the results.
    ``Last modified (grade)`` stays empty, so Moodle may skip rows already graded in
    Moodle unless the uploader ticks "Allow updating records that have been modified more
    recently in Moodle than in the spreadsheet". Team results without member ids cannot be
    placed and are reported as skipped.
    """
    render = comments or (lambda result: feedback_comment(result, decimal=decimal))
    report = WorksheetFill()
    rows = [[IDENTIFIER, FULL_NAME, GRADE, LAST_MODIFIED, FEEDBACK]]
    for result in results:
        participant = result.participant
        if participant is None or participant.participant_id is None:
            report.skipped[result.key] = (
                "team members are unknown without the downloaded worksheet (pass it)"
                if participant and participant.group_name
                else "not from a Moodle export: no participant id"
            )
            continue
        identifier = f"Participant {participant.participant_id}"
        why = _not_gradable(result, allow_pending)
        grade = "" if why else _grade(result, None, 2, decimal)
        rows.append([identifier, spreadsheet_cell(participant.full_name or ""), grade, "",
                     "" if why else spreadsheet_cell(render(result))])
        if why:
            report.skipped[result.key] = why
        else:
            report.filled[result.key] = [identifier]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    write_text(Path(out), text.getvalue())
    return report


def feedback_comment(result: SubmissionResult, *, decimal: str = ".") -> str:
    """A short HTML summary for the Feedback comments cell: the total and each task's points
    (``templates/feedback_comment.html.j2``), points with the worksheet's ``decimal`` mark.

    Quotes are written as ``html.escape`` wrote them before the comment was a template
    (``&#x27;``, ``&quot;``, not Jinja's ``&#39;``, ``&#34;``): the Moodle sync compares a
    comment's bytes with the ones it pushed, so a result unchanged since is not pushed again."""
    html = _comment_template().render(result=result, decimal=decimal)
    return html.replace("&#39;", "&#x27;").replace("&#34;", "&quot;")  # only escaping writes these: a text's & is &amp;


@cache
def _comment_template() -> Template:
    return environment("autograder.formats").get_template("feedback_comment.html.j2")


NO_PARTICIPANT = "not from a Moodle export: no participant to match"


def _not_gradable(result: SubmissionResult, allow_pending: bool = False) -> str | None:
    if result.status not in GRADED_STATUSES:
        return f"status {result.status.value}: the row is left as downloaded"
    if result.pending_points and not allow_pending:
        tasks = ", ".join(str(t.task) for t in result.tasks if t.pending)
        return (f"task {tasks} ({format_points(result.pending_points)} points) not marked by hand yet: the grade "
                "is left blank until `merge-manual` brings the marks (or pass --allow-pending)")
    if result.participant is None:
        return NO_PARTICIPANT
    return None


def _grade(result: SubmissionResult, maximum: float | None, decimals: int, decimal: str) -> str:
    """The score, scaled to Moodle's maximum when the week's total differs (Moodle skips
    rows above its maximum), in the worksheet's own number format."""
    score = result.score
    if maximum is not None and result.max_score > 0 and abs(maximum - result.max_score) > 1e-9:
        score = score * maximum / result.max_score
    return format_grade(score, decimals, decimal)


class _Sheet:
    """A worksheet kept as raw text fields, so writing back changes only the cells we set."""

    def __init__(self, path: Path, bom: bool, delimiter: str, records: list[tuple[list[str], str]]):
        self.path, self.bom, self.delimiter, self.records = path, bom, delimiter, records
        self.columns = {_unquote(raw): index for index, raw in reversed(list(enumerate(records[0][0])))}
        self.quote_style = _quote_style(records[0][0])
        self.by_id: dict[str, int] = {}
        for row in range(1, len(records)):
            match = re.search(r"(\d+)\s*$", self.value(row, IDENTIFIER))
            if match:
                self.by_id.setdefault(match.group(1), row)

    @classmethod
    def parse(cls, path: Path) -> _Sheet:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as err:
            raise WorksheetError(
                f"{path} is not UTF-8 ({err}): download the worksheet from Moodle again, "
                "or save it from your spreadsheet as 'CSV UTF-8'"
            ) from err
        except OSError as err:
            raise WorksheetError(f"{path} cannot be read: {err}") from err
        bom = text.startswith(_BOM)
        text = text.removeprefix(_BOM)
        fewest_missing: list[str] = list(REQUIRED)
        for delimiter in (",", ";", "\t"):
            records = _records(text, delimiter)
            header = {_unquote(raw) for raw in records[0][0]} if records else set()
            missing = [c for c in REQUIRED if c not in header]
            if not missing and MAXIMUM_GRADE not in header and SCALE in header:
                raise WorksheetError(f"{path}: the assignment is graded with a scale; points cannot be uploaded")
            if not missing:
                return cls(path, bom, delimiter, records)
            fewest_missing = min(fewest_missing, missing, key=len)
        raise WorksheetError(
            f"{path}: the header lacks {', '.join(repr(c) for c in fewest_missing)}; Moodle's importer needs "
            f"{', '.join(repr(c) for c in REQUIRED)} (in the worksheet's language: English here). "
            "Download it again with 'Download grading worksheet'"
        )

    def has(self, column: str) -> bool:
        return column in self.columns

    def value(self, row: int, column: str) -> str:
        fields = self.records[row][0]
        index = self.columns.get(column)
        return _unquote(fields[index]) if index is not None and index < len(fields) else ""

    def set(self, row: int, column: str, value: str) -> None:
        fields = self.records[row][0]
        if len(fields) != len(self.records[0][0]):
            raise WorksheetError(
                f"{self.path}: record {row + 1} ({self.value(row, IDENTIFIER)}) has {len(fields)} fields, "
                f"the header {len(self.records[0][0])}; Moodle would refuse it"
            )
        fields[self.columns[column]] = self._quote(spreadsheet_cell(value))

    def number_format(self) -> tuple[str, int]:
        """The decimal separator and the number of decimals, from Maximum Grade or the grades."""
        for column in (MAXIMUM_GRADE, GRADE):
            for row in range(1, len(self.records)):
                match = re.fullmatch(r"-?\d+([.,])(\d+)", self.value(row, column).strip())
                if match:
                    return match.group(1), len(match.group(2))
        return ".", 2

    def maximum(self, row: int) -> float | None:
        text = self.value(row, MAXIMUM_GRADE).strip().replace(",", ".")
        try:
            return float(text)
        except ValueError:
            return None

    def rows_for(self, participant: Participant | None) -> list[int] | str:
        """The rows a participant's (or team's) result goes to, or why there are none."""
        if participant is None:
            return NO_PARTICIPANT
        by_group = self._group_rows(participant)
        if participant.participant_id is not None:
            row = self.by_id.get(participant.participant_id)
            same_name = (
                row is not None
                and (participant.full_name is None or not self.has(FULL_NAME)
                     or loose_name(self.value(row, FULL_NAME)) == loose_name(participant.full_name))
            )
            # A 4.1 team export read without a "Default group" folder looks individual: its
            # number is the group id, its name the group's. The Group column tells them apart.
            if row is not None and (same_name or not by_group):
                return [row]
            if by_group:
                return by_group
            return f"no row 'Participant {participant.participant_id}' in the worksheet"
        if not self.has(GROUP):
            return "a team submission, but the worksheet has no Group column"
        return by_group or f"no row whose Group is {participant.group_name!r}"

    def _group_rows(self, participant: Participant) -> list[int]:
        """Rows whose Group cell (the team's name, or "Default group": gradingtable col_team)
        names this result's team."""
        name = participant.group_name if participant.participant_id is None else participant.full_name
        if not name or not self.has(GROUP):
            return []
        wanted = loose_name(name)
        return [row for row in range(1, len(self.records)) if loose_name(self.value(row, GROUP)) == wanted]

    def _quote(self, value: str) -> str:
        special = {self.delimiter, '"', "\n", "\r"} | ({" ", "\t", "\\"} if self.quote_style == "php" else set())
        if self.quote_style == "all" or any(c in value for c in special):
            return '"' + value.replace('"', '""') + '"'
        return value

    def serialise(self) -> str:
        body = "".join(self.delimiter.join(fields) + end for fields, end in self.records)
        return (_BOM if self.bom else "") + body


def _records(text: str, delimiter: str) -> list[tuple[list[str], str]]:
    """Split CSV text into records of raw fields (quotes kept) and each record's line ending."""
    records: list[tuple[list[str], str]] = []
    fields: list[str] = []
    start = i = 0
    quoted = False
    while i < len(text):
        char = text[i]
        if quoted:
            if char == '"' and text.startswith('""', i):
                i += 2
                continue
            quoted = char != '"'
        elif char == '"' and i == start:
            quoted = True
        elif char == delimiter:
            fields.append(text[start:i])
            start = i + 1
        elif char in "\r\n":
            end = i + (2 if text.startswith("\r\n", i) else 1)
            records.append((fields + [text[start:i]], text[i:end]))
            fields, start, i = [], end, end
            continue
        i += 1
    if start < len(text) or fields:
        records.append((fields + [text[start:]], ""))
    return records


def _unquote(raw: str) -> str:
    if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1].replace('""', '"')
    return raw


def _quote_style(header: list[str]) -> str:
    """How the file quotes: every field ("all"), PHP's fputcsv (also fields with spaces:
    Moodle's own download), or only when needed ("minimal", Python's and most spreadsheets')."""
    quoted = [raw.startswith('"') for raw in header if raw]
    if quoted and all(quoted):
        return "all"
    if any(raw.startswith('"') and " " in raw and not {",", ";", "\t"} & set(raw) for raw in header):
        return "php"
    return "minimal"


