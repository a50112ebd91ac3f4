"""Write ``feedback.zip`` for Moodle's "Upload multiple feedback files in a zip".

The importer (``feedback/file/importziplib.php``) finds the participant from the folder
name the download used, so each page goes into exactly that folder:
``Jane Doe_123456_assignsubmission_file/feedback.html``. Every name is checked against the
importer's own parsing rule before it is written; a result Moodle could not map back
("Default group" has no id, a plain notebook has no folder) is reported, not written.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from autograder.formats.atomic import atomic_path
from autograder.moodle.names import SUBMISSION_PLUGIN_TYPE, importer_target
from autograder.results import Participant

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same pages give the same zip, byte for byte


class Placed(Protocol):
    """A SubmissionResult or a Submission: anything with a key and a participant."""

    key: str
    participant: Participant | None


P = TypeVar("P", bound=Placed)
FeedbackPages = Mapping[str, str] | Callable[[P], str | None]


@dataclass
class FeedbackZip:
    """What went into the zip (key -> member name) and what did not (key -> reason)."""

    written: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def write_feedback_zip(
    *, results: Iterable[P], pages: FeedbackPages[P], out: Path, filename: str = "feedback.html"
) -> FeedbackZip:
    """Write ``out`` with one ``<participant folder>/<filename>`` per result that has a page.

    ``pages`` maps a result's key to its HTML, or is a callable taking the result and
    returning the HTML (None: no page, e.g. for a hand-in the instructor wants to look at
    first). For a team, Moodle gives the file to every member.
    """
    if "/" in filename or filename[:1] in (".", "~", ""):
        raise ValueError(f"{filename!r}: Moodle ignores files starting with '.' or '~'; use a plain name")
    report = FeedbackZip()
    contents: dict[str, str] = {}
    owners: dict[str, str] = {}
    for result in results:
        name, why = _member_name(result, filename)
        if why is None and name in owners:
            why = f"{name} is already written for {owners[name]}"
        page = None
        if why is None:
            page = pages.get(result.key) if isinstance(pages, Mapping) else pages(result)
            why = "no feedback page for it" if page is None else None
        if page is None:
            report.skipped[result.key] = str(why)
            continue
        contents[name], owners[name] = page, result.key
        report.written[result.key] = name
    _write_atomically(Path(out), contents)
    return report


def _member_name(result: Placed, filename: str) -> tuple[str, str | None]:
    """The zip member for a result, or why Moodle's importer could not map one back."""
    participant = result.participant
    if participant is None or not participant.folder:
        return "", "not from a Moodle export: no participant folder to write into"
    name = f"{participant.folder}/{filename}"
    target = importer_target(name)
    if target is None or target[1] != SUBMISSION_PLUGIN_TYPE:
        return "", f"Moodle's importer cannot map the folder {participant.folder!r} to a participant (no id)"
    return name, None


def _write_atomically(path: Path, contents: dict[str, str]) -> None:
    with atomic_path(path) as partial, zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(contents):
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, contents[name].encode("utf-8"))
