"""Read a Moodle "Download all submissions" export (a zip or the folder it unpacks to).

Every layout docs/LMS.md lists ("Moodle's files") parses: 4.1+ folders, 3.x folders with a trailing underscore,
flat files, blind marking, team submissions (4.1 group ids, "Default group", 3.x
``Group A-Jane Doe`` prefixes), any Unicode name. Each participant or team becomes one
``Submission``: the notebook's bytes when one notebook can be chosen, otherwise a status and
a message saying what was found, so one bad hand-in never stops the batch.
"""

from __future__ import annotations

import io
import logging
import re
import time
import unicodedata
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import normalise_week_name
from autograder.exceptions import CourseError, ExportError, HandInTooCostly, SubmissionError
from autograder.moodle.entries import MAX_FILE_BYTES, Entry, folder_entries, zip_entries
from autograder.moodle.names import BLIND_NAME, ONLINE_TEXT_PLUGIN, Prefix, parse_segment
from autograder.notebook import read_notebook
from autograder.results import Participant, Status
from autograder.submission import Submission

log = logging.getLogger(__name__)

# What reading one hand-in may cost before any notebook of it is graded: a 676 KB upload can
# hold 600 members of 20 MB each, and choosing among them would read and parse them all.
MAX_NOTEBOOKS = 20  # notebooks to choose from (a zip of every week's work fits)
MAX_ZIP_MEMBERS = 1000  # files in a zip a student uploaded
MAX_HAND_IN_BYTES = 3 * MAX_FILE_BYTES  # decompressed, all reads of the hand-in together
HAND_IN_SECONDS = 30.0  # wall time to read it


class _Reading:
    """The budget of reading one hand-in: bytes decompressed and time, checked at every read."""

    def __init__(self, max_bytes: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_bytes = max_bytes
        self.clock = clock
        self.deadline = clock() + HAND_IN_SECONDS
        self.left = max(MAX_HAND_IN_BYTES, max_bytes)

    def read(self, entry: Entry) -> bytes:
        """``entry``'s bytes (at most ``max_bytes``), charged to the hand-in's budget."""
        if self.clock() > self.deadline:
            raise HandInTooCostly(f"reading this hand-in took over {HAND_IN_SECONDS:g} s, so it was stopped: "
                                  "hand in the one notebook for the week, not an archive of many")
        cap = min(self.max_bytes, self.left)
        try:
            data = entry.read(cap)
        except SubmissionError:
            if cap < self.max_bytes:
                raise HandInTooCostly(f"this hand-in unpacks to more than {MAX_HAND_IN_BYTES >> 20} MiB, so it was "
                                      "not read further: hand in the one notebook for the week") from None
            raise
        self.left -= len(data)
        return data


@dataclass
class _HandIn:
    """Everything one participant (or team) has in the export, across plugin folders."""

    prefixes: list[Prefix] = field(default_factory=list)
    files: list[tuple[str, Prefix, Entry]] = field(default_factory=list)  # (path inside, prefix, entry)


def is_export(entries: Iterable[Entry]) -> bool:
    """True when some entry sits under (or is) a Moodle ``..._assignsubmission_...`` name."""
    return any(_locate(entry.path) is not None for entry in entries)


def read_export(
    path: Path, *, week: str | None = None, teams: bool | None = None, max_bytes: int = MAX_FILE_BYTES
) -> list[Submission]:
    """One Submission per participant or team in the export, sorted by folder name.

    ``week`` picks the notebook when a submission holds several. ``teams`` says the numbers
    in 4.1 names are group ids (``Group A_17_...``); None decides from the export (a
    "Default group" folder means a team assignment). 3.x folders always carry participant ids.
    Raises ExportError only when the export as a whole cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        entries = folder_entries(path)
        return submissions_from_entries(entries, label=str(path), week=week, teams=teams, max_bytes=max_bytes)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as err:  # ValueError: names
        raise ExportError(
            f"{path} cannot be read as a zip ({err}): download the submissions from Moodle again, "
            "or unpack the export and pass the folder"
        ) from err
    with archive:
        entries = zip_entries(archive, path.name)
        return submissions_from_entries(entries, label=str(path), week=week, teams=teams, max_bytes=max_bytes)


def submissions_from_entries(
    entries: list[Entry], *, label: str, week: str | None, teams: bool | None, max_bytes: int
) -> list[Submission]:
    """Group an export's entries by participant and make one Submission of each group."""
    if not is_export(entries):
        raise ExportError(
            f"{label} is not a Moodle export: no participant folders named like "
            "'Jane Doe_123456_assignsubmission_file'"
        )
    week = normalise_week_name(week) if week is not None else None
    hand_ins: dict[tuple[str, str | None], _HandIn] = {}
    strays: list[Submission] = []
    for entry in entries:
        located = _locate(entry.path)
        if located is None:
            if entry.refused or (entry.name.lower().endswith(".ipynb") and not entry.clutter):
                strays.append(_stray(entry))
            continue
        prefix, inside = located
        hand_in = hand_ins.setdefault(prefix.who, _HandIn())
        if prefix not in hand_in.prefixes:
            hand_in.prefixes.append(prefix)
        hand_in.files.append((inside, prefix, entry))
    if teams is None:
        teams = any(prefix.number is None for hand_in in hand_ins.values() for prefix in hand_in.prefixes)
    made = [_submission(hand_in, week=week, teams=teams, max_bytes=max_bytes) for hand_in in hand_ins.values()]
    made.sort(key=lambda s: (s.participant.folder or "").casefold() if s.participant else "")
    return deduplicate_keys(made + strays)


def _locate(path: str) -> tuple[Prefix, str] | None:
    """The first segment naming a participant, and the path inside their submission."""
    segments = path.split("/")
    for position, segment in enumerate(segments):
        prefix = parse_segment(segment)
        if prefix is None:
            continue
        below = segments[position + 1 :]
        return prefix, "/".join([*([prefix.rest] if prefix.rest else []), *below])
    return None


def _submission(hand_in: _HandIn, *, week: str | None, teams: bool, max_bytes: int) -> Submission:
    main = next((p for p in hand_in.prefixes if p.plugin_name == "file"), hand_in.prefixes[0])
    participant = _participant(main, teams=teams)
    key = _key(participant)
    origin = _folder_origin(hand_in, main)

    def outcome(status: Status, message: str) -> Submission:
        return Submission(origin=origin, key=key, content=None, participant=participant, status=status, message=message)

    refused = [f"{entry.path} ({entry.refused})" for _, _, entry in hand_in.files if entry.refused]
    if refused:
        return outcome(Status.ERROR, "refused files that would escape the export: " + ", ".join(refused))
    files = [(inside, prefix, entry) for inside, prefix, entry in hand_in.files if inside and not entry.clutter]
    uploads = [(inside, entry) for inside, prefix, entry in files if prefix.plugin_name != ONLINE_TEXT_PLUGIN]
    # The error boundary of one hand-in: whatever its files hold, it ends as this
    # participant's status and message, never as an exception that stops the export.
    try:
        reading = _Reading(max_bytes)
        candidates = [(inside, entry) for inside, entry in uploads if _is_notebook(inside)]
        if not candidates:
            candidates = _notebooks_in_zips(uploads, reading)
        if not candidates:
            return outcome(Status.NOT_SUBMITTED, _nothing_found(files))
        if len(candidates) > MAX_NOTEBOOKS:
            raise SubmissionError(f"{len(candidates)} notebooks handed in, more than the {MAX_NOTEBOOKS} a hand-in "
                                  "may hold: none was read; hand in the one notebook for the week")
        inside, entry = _choose(candidates, week=week, reading=reading)
        content = notebook_bytes(entry, inside, read=reading.read)
    except SubmissionError as err:
        return outcome(Status.ERROR, str(err))
    except Exception as err:  # any decompressor fails its own way on bad bytes (see entries.py)
        log.warning("reading the hand-in %s failed", origin, exc_info=True)
        return outcome(Status.ERROR, f"this hand-in could not be read ({type(err).__name__}): upload it again")
    return Submission(origin=entry.origin, key=key, content=content, participant=participant)


def _folder_origin(hand_in: _HandIn, main: Prefix) -> str:
    """Where the participant's folder (or flat file) is, for messages about the whole hand-in."""
    entry = next(e for _, p, e in hand_in.files if p == main)
    segments = entry.path.split("/")
    return entry.where + "/".join(segments[: segments.index(main.segment) + 1])


def _participant(prefix: Prefix, *, teams: bool) -> Participant:
    name = unicodedata.normalize("NFC", prefix.name)
    legacy = not prefix.rest and prefix.segment.endswith("_")
    if prefix.number is None:
        return Participant(group_name=name, folder=prefix.folder)
    if teams and not legacy:
        return Participant(group_id=prefix.number, group_name=name, folder=prefix.folder)
    full_name = f"{name} {prefix.number}" if name == BLIND_NAME else name
    return Participant(participant_id=prefix.number, full_name=full_name, folder=prefix.folder)


def _key(participant: Participant) -> str:
    """Stable across downloads: Moodle's ids, never the (changeable, any-script) names."""
    if participant.participant_id:
        return f"participant-{participant.participant_id}"
    if participant.group_id:
        return f"group-{participant.group_id}"
    return "default-group"


def _stray(entry: Entry) -> Submission:
    """A file outside any participant folder: reported, never graded."""
    why = f"refused ({entry.refused})" if entry.refused else "not inside a Moodle participant folder"
    return Submission(
        origin=entry.origin,
        key=f"unrecognised-{safe_key(entry.path)}",
        content=None,
        status=Status.ERROR,
        message=f"{entry.path}: {why}; not graded",
    )


def safe_key(text: str) -> str:
    """A file-system-safe key from any text: word characters (any script), dots and dashes."""
    key = re.sub(r"[^\w.-]+", "-", unicodedata.normalize("NFC", text)).strip("-.")[:80]
    # at most 100 bytes: the partial ``.<key>.json.<8 hex>.partial`` must fit a file name (255 bytes)
    key = key.encode("utf-8")[:100].decode("utf-8", "ignore").strip("-.")
    return key or "submission"


def notebook_bytes(entry: Entry, label: str, *, read: Callable[[Entry], bytes]) -> bytes:
    """The notebook's bytes as ``read`` gives them, refusing an empty file here; invalid JSON
    is the grader's to report."""
    content = read(entry)
    if not content.strip():
        raise SubmissionError(f"{label} is empty: nothing to grade")
    return content


def _is_notebook(name: str) -> bool:
    return name.lower().endswith(".ipynb")


def _notebooks_in_zips(uploads: list[tuple[str, Entry]], reading: _Reading) -> list[tuple[str, Entry]]:
    """Notebooks inside the zips a student uploaded (one level deep), for hand-ins with no bare notebook."""
    found = []
    for inside, entry in uploads:
        if not inside.lower().endswith(".zip"):
            continue
        data = reading.read(entry)
        try:
            inner = zipfile.ZipFile(io.BytesIO(data))
            if len(inner.infolist()) > MAX_ZIP_MEMBERS:
                raise SubmissionError(f"the uploaded zip {inside} holds more than {MAX_ZIP_MEMBERS} files: "
                                      "none was read; hand in the one notebook for the week")
            members = zip_entries(inner, entry.origin)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as err:  # ValueError: names
            raise SubmissionError(f"the uploaded zip {inside} is corrupt ({err}): re-upload it") from err
        refused = [f"{m.path} ({m.refused})" for m in members if m.refused]
        if refused:
            raise SubmissionError(f"the uploaded zip {inside} holds refused files: " + ", ".join(refused))
        found += [(f"{inside}!{m.path}", m) for m in members if _is_notebook(m.path) and not m.clutter]
    return found


def _choose(candidates: list[tuple[str, Entry]], *, week: str | None, reading: _Reading) -> tuple[str, Entry]:
    """The one notebook to grade: the only one, else the one named for ``week`` (normalised,
    ``week01``), else the one whose metadata says it; several left is the student's to resolve."""
    if len(candidates) == 1:
        return candidates[0]
    if week is not None:
        by_name = [c for c in candidates if _names_week(c[0], week)] or candidates
        if len(by_name) == 1:
            return by_name[0]
        by_meta = [c for c in by_name if _metadata_week(c[1], reading) == week]
        if len(by_meta) == 1:
            return by_meta[0]
    names = ", ".join(inside for inside, _ in candidates)
    hint = f" and none is the only one named or marked for {week}" if week else " and no week was given to choose"
    raise SubmissionError(f"several notebooks handed in ({names}){hint}: grade one by hand or ask for one")


def _names_week(inside: str, week: str) -> bool:
    stem = inside.rsplit("/", 1)[-1].rsplit("!", 1)[-1]
    number = int(week.removeprefix("week"))
    return re.search(rf"week[\s_-]*0*{number}(?!\d)", stem, re.IGNORECASE) is not None


def _metadata_week(entry: Entry, reading: _Reading) -> str | None:
    """The week a notebook's metadata names, read as grading reads it (autograder.notebook);
    a read over the hand-in's budget stops the choice (``SubmissionError``)."""
    try:
        week = read_notebook(reading.read(entry)).metadata.get("autograder", {}).get("week")
        return normalise_week_name(str(week)) if week is not None else None
    except HandInTooCostly:
        raise
    except (SubmissionError, CourseError):
        return None


def _nothing_found(files: list[tuple[str, Prefix, Entry]]) -> str:
    if not files:
        return "no notebook handed in (no files)"
    seen = ", ".join(
        f"{inside} (online text)" if prefix.plugin_name == ONLINE_TEXT_PLUGIN else inside
        for inside, prefix, _ in files
    )
    return f"no .ipynb notebook handed in; files seen: {seen}"


def deduplicate_keys(submissions: list[Submission]) -> list[Submission]:
    """Make every key unique in the batch (``x``, ``x-2``, ...), keeping the order."""
    seen: set[str] = set()
    for submission in submissions:
        key, n = submission.key, 1
        while key in seen:
            n += 1
            key = f"{submission.key}-{n}"
        submission.key = key
        seen.add(key)
    return submissions
