"""Turn whatever PATHs the instructor names into Submissions.

A PATH is a notebook, a folder of notebooks, or a Moodle export (a zip, or the folder it
unpacks to, recognised by its ``..._assignsubmission_...`` names). Every source yields
``Submission`` objects with keys unique across the whole batch; the grading pipeline never
sees where they came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from autograder.exceptions import AutograderError, SubmissionError
from autograder.moodle.entries import MAX_FILE_BYTES, Entry, file_entry, folder_entries
from autograder.moodle.export import (
    deduplicate_keys,
    is_export,
    notebook_bytes,
    read_export,
    safe_key,
    submissions_from_entries,
)
from autograder.results import Status
from autograder.submission import Submission


def collect(
    paths: Sequence[Path], *, week: str | None = None, teams: bool | None = None, max_bytes: int = MAX_FILE_BYTES
) -> list[Submission]:
    """Every submission under ``paths``, in the order given (folders sorted), keys unique.

    ``week`` chooses among several notebooks in one Moodle hand-in; ``teams`` is passed to
    ``read_export``. Raises AutograderError for a PATH that does not exist or is none of the
    above; a bad single hand-in never raises, it comes back with a status and message.
    """
    found: list[Submission] = []
    for path in map(Path, paths):
        if path.is_dir():
            entries = folder_entries(path)
            if is_export(entries):
                found += submissions_from_entries(entries, label=str(path), week=week, teams=teams, max_bytes=max_bytes)
            else:
                found += [_plain(e, safe_key(e.path.removesuffix(".ipynb")), max_bytes) for e in _notebooks(entries)]
        elif path.is_file() and path.suffix.lower() == ".zip":
            found += read_export(path, week=week, teams=teams, max_bytes=max_bytes)
        elif path.is_file() and path.suffix.lower() == ".ipynb":
            found.append(_plain(file_entry(path, root=path.parent), safe_key(path.stem), max_bytes))
        elif path.exists():
            raise AutograderError(f"{path} is not a notebook (.ipynb), a folder, or a Moodle export (.zip)")
        else:
            raise AutograderError(f"{path} does not exist")
    return deduplicate_keys(found)


def holds_export(paths: Sequence[Path]) -> bool:
    """Whether any of ``paths`` is a Moodle export (a zip, or a folder unpacked from one),
    so its results belong in the week's Moodle results folder rather than with loose notebooks."""
    return any(
        (path.is_file() and path.suffix.lower() == ".zip") or (path.is_dir() and is_export(folder_entries(path)))
        for path in map(Path, paths)
    )


def _notebooks(entries: list[Entry]) -> list[Entry]:
    """The notebooks of a plain folder, plus every link or special file (refused, so reported)."""
    return [e for e in entries if e.refused or (e.path.lower().endswith(".ipynb") and not e.clutter)]


def _plain(entry: Entry, key: str, max_bytes: int) -> Submission:
    try:
        content = notebook_bytes(entry, entry.path, read=lambda e: e.read(max_bytes))
    except SubmissionError as err:
        return Submission(origin=entry.origin, key=key, content=None, status=Status.ERROR, message=str(err))
    return Submission(origin=entry.origin, key=key, content=content)
