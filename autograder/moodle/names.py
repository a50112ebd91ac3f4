"""Moodle's naming of submission files and folders, both ways (docs/LMS.md, "Moodle's files").

The download builds each path segment as ``<name>_<id>_<plugintype>_<pluginname>`` (a
trailing ``_`` on 3.x folders, the file name appended in the flat layout, no id for the
"Default group"); the feedback importer splits a segment with ``explode('_', $part, 5)``.
Reading the export and writing ``feedback.zip`` both go through this one module so the two
cannot drift apart.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

SUBMISSION_PLUGIN_TYPE = "assignsubmission"
ONLINE_TEXT_PLUGIN = "onlinetext"
BLIND_NAME = "Participant"  # get_string('participant', 'assign') in English

# Characters clean_filename() drops; names from the zip and from the worksheet are compared
# after dropping them on both sides.
_CLEANED_AWAY = re.compile(r"[\x00-\x1f\x7f&<>\"`|':\\/]")


@dataclass(frozen=True)
class Prefix:
    """One parsed path segment of a Moodle export."""

    segment: str  # exactly as found in the export
    name: str  # "Jane Doe", "Participant", "Group A", "Default group", "Group A-Jane Doe" (3.x)
    number: str | None  # participant id, or the group id of a 4.1 team; None for "Default group"
    plugin_type: str  # "assignsubmission"
    plugin_name: str  # "file", "onlinetext", ...
    rest: str  # "" for a folder; the file name in the flat layout

    @property
    def folder(self) -> str:
        """The folder form of this prefix (what feedback.zip should use for this participant)."""
        if not self.rest:
            return self.segment
        return self.segment[: len(self.segment) - len(self.rest) - 1]

    @property
    def who(self) -> tuple[str, str | None]:
        """Identity of the participant or team, the same across their plugins' folders."""
        return (unicodedata.normalize("NFC", self.name), self.number)


def parse_segment(segment: str) -> Prefix | None:
    """The Moodle prefix a path segment carries, or None when it carries none.

    ``Jane Doe_123456_assignsubmission_file``, ``..._file_`` (3.x), ``..._file_week01.ipynb``
    (flat) and ``Default group_assignsubmission_file`` all parse.
    """
    parts = segment.split("_")
    for index in (2, 1):
        if len(parts) <= index + 1 or parts[index] != SUBMISSION_PLUGIN_TYPE or not parts[0]:
            continue
        number = parts[1] if index == 2 else None
        if number is not None and not (number.isascii() and number.isdigit() and len(number) <= 19):  # Moodle's ids
            continue
        return Prefix(
            segment=segment,
            name=parts[0],
            number=number,
            plugin_type=parts[index],
            plugin_name=parts[index + 1],
            rest="_".join(parts[index + 2 :]),
        )
    return None


def importer_target(path: str) -> tuple[str, str, str, str] | None:
    """Where Moodle's feedback-zip importer files ``path``: (id, plugin type, plugin name, file).

    Mirrors ``importziplib.php``: every segment is split with ``explode('_', $part, 5)``; the
    first one with at least four parts and a numeric second part names the participant (or
    team); what follows it becomes the feedback file's path. None when no segment qualifies or
    the file is hidden (starts with ``.`` or ``~``).
    """
    segments = path.split("/")
    if not segments[-1] or segments[-1][0] in ".~":
        return None
    for position, segment in enumerate(segments):
        info = segment.split("_", 4)
        if len(info) < 4 or not info[1].isdigit():
            continue
        head = [info[4]] if len(info) == 5 and info[4] else []
        return (info[1], info[2], info[3], "/".join([*head, *segments[position + 1 :]]))
    return None


def loose_name(text: str) -> str:
    """A name as clean_filename() and the underscore swap leave it, for comparing zip and worksheet."""
    text = unicodedata.normalize("NFC", text).replace("_", " ")
    return " ".join(_CLEANED_AWAY.sub("", text).split()).casefold()
