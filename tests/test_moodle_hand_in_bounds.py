"""Reading one Moodle hand-in is bounded before any notebook is parsed.

A small upload can unpack to gigabytes: a zip of 600 members that deflate 20 MB of one
byte each into ~20 kB. Choosing among them used to read and parse every one (minutes,
before anything was graded). Each hand-in now has a budget of notebooks, members,
decompressed bytes and time; past it, that student gets a clear error and the rest of
the export is read as usual.
"""

from __future__ import annotations

import io
import struct
import time
import zipfile
import zlib
from pathlib import Path

from autograder.moodle.entries import MAX_FILE_BYTES
from autograder.moodle.export import MAX_HAND_IN_BYTES, MAX_NOTEBOOKS, MAX_ZIP_MEMBERS, read_export
from autograder.results import Status
from tests.moodle.test_export import by_key, make_zip, notebook

FOLDER = "Mallory Bomb_300001_assignsubmission_file"
HONEST = {"Jane Doe_123456_assignsubmission_file/week01.ipynb": notebook(marker="jane")}


def bomb(names: list[str], size: int) -> bytes:
    """A zip whose members each inflate to ``size`` bytes of spaces, deflated once and
    written as raw records (zipfile would compress every member again)."""
    payload = b" " * size
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = compressor.compress(payload) + compressor.flush()
    crc = zlib.crc32(payload)
    out, central = io.BytesIO(), io.BytesIO()
    for name in names:
        encoded = name.encode()
        offset = out.tell()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(deflated), size, len(encoded), 0))
        out.write(encoded + deflated)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(deflated), size,
                                  len(encoded), 0, 0, 0, 0, 0, offset))
        central.write(encoded)
    start = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(names), len(names), len(central.getvalue()), start, 0))
    return out.getvalue()


def test_the_bomb_is_what_it_claims() -> None:
    data = bomb(["a.ipynb", "b.ipynb"], 1 << 20)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert [len(archive.read(n)) for n in archive.namelist()] == [1 << 20, 1 << 20]


def test_600_members_of_20_mb_are_refused_unread_and_the_rest_is_graded(tmp_path: Path) -> None:
    upload = bomb([f"week01_{i:03}.ipynb" for i in range(600)], MAX_FILE_BYTES)
    assert len(upload) < 20 << 20  # ~12 MB on disk, 12 GB unpacked
    export = make_zip(tmp_path / "export.zip", {**HONEST, f"{FOLDER}/all.zip": upload})
    started = time.monotonic()
    found = by_key(read_export(export, week="week01"))
    assert time.monotonic() - started < 20
    bad = found["participant-300001"]
    assert bad.status is Status.ERROR and bad.content is None
    assert f"600 notebooks handed in, more than the {MAX_NOTEBOOKS}" in (bad.message or "")
    assert found["participant-123456"].content == HONEST["Jane Doe_123456_assignsubmission_file/week01.ipynb"]


def test_bare_notebooks_past_the_count_are_refused(tmp_path: Path) -> None:
    members = {f"{FOLDER}/week01_{i}.ipynb": notebook() for i in range(MAX_NOTEBOOKS + 1)}
    found = by_key(read_export(make_zip(tmp_path / "export.zip", {**HONEST, **members}), week="week01"))
    assert f"{MAX_NOTEBOOKS + 1} notebooks handed in" in (found["participant-300001"].message or "")
    assert found["participant-123456"].status is None


def test_choosing_stops_at_the_decompressed_budget(tmp_path: Path) -> None:
    """Five 19 MB notebooks all named for the week: choosing by metadata would read 95 MB."""
    upload = bomb([f"week01_{i}.ipynb" for i in range(5)], MAX_FILE_BYTES - (1 << 20))
    found = by_key(read_export(make_zip(tmp_path / "export.zip", {**HONEST, f"{FOLDER}/work.zip": upload}),
                               week="week01"))
    message = found["participant-300001"].message or ""
    assert f"unpacks to more than {MAX_HAND_IN_BYTES >> 20} MiB" in message
    assert found["participant-123456"].status is None


def test_a_zip_of_too_many_members_is_not_listed(tmp_path: Path) -> None:
    upload = bomb([f"junk/{i}.txt" for i in range(MAX_ZIP_MEMBERS + 1)], 10)
    found = by_key(read_export(make_zip(tmp_path / "export.zip", {**HONEST, f"{FOLDER}/work.zip": upload})))
    assert f"more than {MAX_ZIP_MEMBERS} files" in (found["participant-300001"].message or "")
    assert found["participant-123456"].status is None
