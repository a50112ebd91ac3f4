"""The files of a zip or a folder, listed without trusting them and read with a size cap.

Exports and the zips students upload are untrusted: a member name may try to escape
(``../``, an absolute path), a member may be a symbolic link, a header may announce 200 MB.
Nothing here extracts to disk; every entry says whether it may be read at all, and reading
stops one byte past the cap, so a lying header cannot make us hold more than that.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autograder.exceptions import SubmissionError

MAX_FILE_BYTES = 20 * 1024 * 1024
# Clutter that archivers and Jupyter add; never part of what a student handed in.
_CLUTTER_DIRS = frozenset({"__MACOSX", ".ipynb_checkpoints"})
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Entry:
    """One file of a zip or folder."""

    path: str  # relative, "/"-separated, as the archive or folder names it
    where: str  # what ``path`` is relative to, as shown: "export.zip!" or "/data/export/"
    size: int  # from the zip header or stat(); checked before reading
    refused: str | None  # why this entry must not be read (escape, link, special file)
    _read: Callable[[int], bytes]

    @property
    def origin(self) -> str:
        """Shown to the instructor: ``export.zip!path`` or a file-system path."""
        return self.where + self.path

    @property
    def name(self) -> str:
        """The entry's file name (its path's last part), as Moodle wrote it."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def clutter(self) -> bool:
        """Hidden files (``.DS_Store``, ``._x``) and archiver/Jupyter folders."""
        parts = self.path.split("/")
        return self.name.startswith(".") or any(p in _CLUTTER_DIRS for p in parts)

    def read(self, max_bytes: int = MAX_FILE_BYTES) -> bytes:
        """The entry's bytes; SubmissionError when refused, too large, or unreadable."""
        if self.refused:
            raise SubmissionError(f"{self.path}: refused ({self.refused})")
        if self.size > max_bytes:
            raise SubmissionError(too_large(self.path, self.size, max_bytes))
        try:
            data = self._read(max_bytes + 1)
        except Exception as err:  # any decompressor (zlib, bz2, lzma) fails its own way on bad bytes
            source = "archive" if self.where.endswith("!") else "folder"
            raise SubmissionError(f"{self.path}: cannot be read from the {source} "
                                  f"({type(err).__name__}: {str(err)[:200]})") from err
        if len(data) > max_bytes:
            raise SubmissionError(too_large(self.path, len(data), max_bytes))
        return data


def too_large(path: str, size: int, max_bytes: int) -> str:
    """The message for a file over the size cap."""
    return f"{path} is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB limit: not read"


def escape_reason(name: str) -> str | None:
    """Why a member name would land outside the folder it is extracted to, or None."""
    if "\x00" in name:
        return "a NUL byte in the name"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "a '..' path that escapes the export"
    return None


def zip_entries(archive: zipfile.ZipFile, label: str) -> list[Entry]:
    """Every file member of an open zip (directories skipped), in archive order."""
    entries = []
    for info in archive.infolist():
        if info.filename.endswith("/"):  # not is_dir(): zipfile cuts a name at NUL, "\0x" becomes ""
            continue
        name = _member_name(info)
        refused = escape_reason(name) if name else "an empty name"
        if refused is None and stat.S_ISLNK(info.external_attr >> 16):
            refused = "a symbolic link"
        if refused is None and info.flag_bits & 0x1:
            refused = "encrypted"
        entries.append(
            Entry(
                path=name,
                where=f"{label}!",
                size=info.file_size,
                refused=refused,
                _read=_zip_reader(archive, info),
            )
        )
    return entries


def folder_entries(root: Path) -> list[Entry]:
    """Every file below ``root``, sorted; links and special files are listed, refused, never followed."""
    entries = []
    for directory, dirs, files in os.walk(root, followlinks=False):
        base = Path(directory)
        for name in sorted(dirs):
            if (base / name).is_symlink():
                entries.append(file_entry(base / name, root=root, refused="a symbolic link"))
        for name in sorted(files):
            path = base / name
            mode = path.lstat().st_mode
            refused = "a symbolic link" if stat.S_ISLNK(mode) else None if stat.S_ISREG(mode) else "not a regular file"
            entries.append(file_entry(path, root=root, refused=refused))
    return sorted(entries, key=lambda e: e.path)


def file_entry(path: Path, *, root: Path, refused: str | None = None) -> Entry:
    """One file on disk, named relative to ``root``."""
    try:
        size = path.stat().st_size if refused is None else 0
    except OSError:
        size = 0  # gone or unreadable: ``read`` says why, for this entry alone

    def read(limit: int) -> bytes:
        with open(path, "rb") as handle:
            return handle.read(limit)

    where = root.as_posix().rstrip("/") + "/"
    return Entry(path=path.relative_to(root).as_posix(), where=where, size=size, refused=refused, _read=read)


def _zip_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[int], bytes]:
    def read(limit: int) -> bytes:
        with archive.open(info) as handle:
            return handle.read(limit)

    return read


def _member_name(info: zipfile.ZipInfo) -> str:
    """The member's name; zips written without the UTF-8 flag usually still hold UTF-8."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except UnicodeError:
        return info.filename
