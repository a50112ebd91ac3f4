"""Reading Moodle's "Download all submissions" export, in every layout docs/LMS.md lists.

Exports are built in tmp_path with the exact names Moodle writes; each test reads the zip
and, where it matters, the folder it unpacks to.
"""

from __future__ import annotations

import stat
import unicodedata
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.exceptions import ExportError
from autograder.moodle.export import read_export
from autograder.results import Participant, Status


def notebook(week: str = "week01", marker: str = "") -> bytes:
    nb = nbformat.v4.new_notebook(metadata={"autograder": {"week": week}})
    nb.cells = [nbformat.v4.new_code_cell(f"x = 1  # {marker}")]
    return nbformat.writes(nb).encode()


def make_zip(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return path


def unpack(members: dict[str, bytes], root: Path) -> Path:
    for name, data in members.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def by_key(submissions):
    return {s.key: s for s in submissions}


MODERN = {
    "Jane Doe_123456_assignsubmission_file/week01.ipynb": notebook(marker="jane"),
    "Jane Doe_123456_assignsubmission_onlinetext/onlinetext.html": b"<p>see my notebook</p>",
    "山田 太郎_200001_assignsubmission_file/week01.ipynb": notebook(marker="yamada"),
    "João Conceição_200002_assignsubmission_file/work/week01.ipynb": notebook(marker="joao"),
}


@pytest.mark.parametrize("as_folder", [False, True])
def test_moodle_41_folders_with_unicode_names(tmp_path: Path, as_folder: bool) -> None:
    source = unpack(MODERN, tmp_path / "export") if as_folder else make_zip(tmp_path / "c-a-7.zip", MODERN)
    found = by_key(read_export(source, week="week01"))

    assert set(found) == {"participant-123456", "participant-200001", "participant-200002"}
    jane = found["participant-123456"]
    assert jane.status is None and jane.content == MODERN["Jane Doe_123456_assignsubmission_file/week01.ipynb"]
    assert jane.participant == Participant(
        participant_id="123456", full_name="Jane Doe", folder="Jane Doe_123456_assignsubmission_file"
    )
    assert found["participant-200001"].participant.full_name == "山田 太郎"
    joao = found["participant-200002"]
    assert joao.origin.endswith("João Conceição_200002_assignsubmission_file/work/week01.ipynb")
    if not as_folder:
        assert jane.origin == "c-a-7.zip!Jane Doe_123456_assignsubmission_file/week01.ipynb"


def test_decomposed_unicode_names_are_normalised_but_folders_kept(tmp_path: Path) -> None:
    folder = unicodedata.normalize("NFD", "João Conceição_200002_assignsubmission_file")
    found = read_export(make_zip(tmp_path / "e.zip", {f"{folder}/week01.ipynb": notebook()}))

    assert found[0].participant.full_name == "João Conceição"
    assert unicodedata.is_normalized("NFC", found[0].participant.full_name)
    assert found[0].participant.folder == folder


def test_moodle_3x_folders_with_trailing_underscore_and_team_prefix(tmp_path: Path) -> None:
    members = {
        "Jane Doe_123456_assignsubmission_file_/week01.ipynb": notebook(),
        "Group A-John Roe_123457_assignsubmission_file_/week01.ipynb": notebook(),
        "Group A-Ann Poe_123458_assignsubmission_file_/week01.ipynb": notebook(),
    }
    found = by_key(read_export(make_zip(tmp_path / "old.zip", members)))

    assert found["participant-123456"].participant.folder == "Jane Doe_123456_assignsubmission_file_"
    # 3.x gave every team member a folder of their own, named with their participant id.
    assert found["participant-123457"].participant.participant_id == "123457"
    assert found["participant-123457"].participant.full_name == "Group A-John Roe"
    assert all(s.content for s in found.values())


def test_flat_files_when_folders_are_off(tmp_path: Path) -> None:
    members = {
        "Jane Doe_123456_assignsubmission_file_week01.ipynb": notebook(),
        "Jane Doe_123456_assignsubmission_file_notes_on_week01.pdf": b"%PDF",
        "Jane Doe_123456_assignsubmission_onlinetext_onlinetext.html": b"<p>hi</p>",
        "Ann Poe_123458_assignsubmission_file_report.pdf": b"%PDF",
    }
    found = by_key(read_export(make_zip(tmp_path / "flat.zip", members), week="week01"))

    jane = found["participant-123456"]
    assert jane.content == members["Jane Doe_123456_assignsubmission_file_week01.ipynb"]
    assert jane.participant.folder == "Jane Doe_123456_assignsubmission_file"
    ann = found["participant-123458"]
    assert ann.status is Status.NOT_SUBMITTED and "report.pdf" in ann.message


def test_blind_marking(tmp_path: Path) -> None:
    members = {"Participant_123456_assignsubmission_file/week01.ipynb": notebook()}
    [only] = read_export(make_zip(tmp_path / "blind.zip", members))

    assert only.key == "participant-123456"
    assert only.participant == Participant(
        participant_id="123456", full_name="Participant 123456", folder="Participant_123456_assignsubmission_file"
    )


def test_team_submissions_with_default_group(tmp_path: Path) -> None:
    members = {
        "Group A_17_assignsubmission_file/week01.ipynb": notebook(),
        "Group B_18_assignsubmission_file/week01.ipynb": notebook(),
        "Default group_assignsubmission_file/week01.ipynb": notebook(),
    }
    found = by_key(read_export(make_zip(tmp_path / "teams.zip", members)))

    assert set(found) == {"group-17", "group-18", "default-group"}
    assert found["group-17"].participant == Participant(
        group_id="17", group_name="Group A", folder="Group A_17_assignsubmission_file"
    )
    assert found["default-group"].participant.group_name == "Default group"
    assert found["default-group"].participant.group_id is None


def test_team_export_without_default_group_needs_teams_flag(tmp_path: Path) -> None:
    members = {"Group A_17_assignsubmission_file/week01.ipynb": notebook()}
    [team] = read_export(make_zip(tmp_path / "teams.zip", members), teams=True)

    assert team.key == "group-17" and team.participant.group_name == "Group A"


def test_choosing_among_several_notebooks(tmp_path: Path) -> None:
    members = {
        # by file name
        "A One_1_assignsubmission_file/Week 1 final.ipynb": notebook(marker="a-pick"),
        "A One_1_assignsubmission_file/scratch.ipynb": notebook(marker="a-other"),
        # by notebook metadata
        "B Two_2_assignsubmission_file/mine.ipynb": notebook(week="week01", marker="b-pick"),
        "B Two_2_assignsubmission_file/old.ipynb": notebook(week="week02", marker="b-other"),
        # neither: a clear error listing them
        "C Three_3_assignsubmission_file/x.ipynb": notebook(week="week03"),
        "C Three_3_assignsubmission_file/y.ipynb": notebook(week="week03"),
    }
    found = by_key(read_export(make_zip(tmp_path / "e.zip", members), week="1"))

    assert b"a-pick" in found["participant-1"].content
    assert b"b-pick" in found["participant-2"].content
    c = found["participant-3"]
    assert c.status is Status.ERROR and c.content is None
    assert "several notebooks" in c.message and "x.ipynb" in c.message and "y.ipynb" in c.message


def test_online_text_only_and_no_notebook_are_not_submitted(tmp_path: Path) -> None:
    members = {
        "A One_1_assignsubmission_onlinetext/onlinetext.html": b"<p>I did it on paper</p>",
        "B Two_2_assignsubmission_file/answers.py": b"print(1)",
        "B Two_2_assignsubmission_file/.DS_Store": b"\0",
    }
    found = by_key(read_export(make_zip(tmp_path / "e.zip", members)))

    assert found["participant-1"].status is Status.NOT_SUBMITTED
    assert "onlinetext.html (online text)" in found["participant-1"].message
    assert found["participant-2"].status is Status.NOT_SUBMITTED
    assert found["participant-2"].message == "no .ipynb notebook handed in; files seen: answers.py"


def test_notebook_inside_an_uploaded_zip(tmp_path: Path) -> None:
    inner = make_zip(tmp_path / "inner.zip", {"hw/week01.ipynb": notebook(marker="zipped")}).read_bytes()
    members = {"A One_1_assignsubmission_file/hw.zip": inner}
    [only] = read_export(make_zip(tmp_path / "e.zip", members))

    assert b"zipped" in only.content
    assert only.origin == "e.zip!A One_1_assignsubmission_file/hw.zip!hw/week01.ipynb"


def claim_size(path: Path, member: str, size: int) -> None:
    """Make the zip's central directory announce ``size`` bytes for ``member`` (data unchanged)."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    at = data.find(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name:
        at = data.find(b"PK\x01\x02", at + 1)
    data[at + 24 : at + 28] = size.to_bytes(4, "little")
    path.write_bytes(bytes(data))


def test_bad_hand_ins_get_their_own_status_and_the_rest_is_read(tmp_path: Path) -> None:
    members = {
        "Good One_1_assignsubmission_file/week01.ipynb": notebook(marker="good"),
        "Escape Two_2_assignsubmission_file/../../evil.ipynb": notebook(),
        "Corrupt Three_3_assignsubmission_file/hw.zip": b"PK\x03\x04 this is not a zip",
        "Empty Four_4_assignsubmission_file/week01.ipynb": b"",
        "Huge Five_5_assignsubmission_file/week01.ipynb": notebook(),
        "/etc/evil.ipynb": notebook(),
        "Good Seven_7_assignsubmission_file/week01.ipynb": notebook(marker="seven"),
    }
    links = {"Link Six_6_assignsubmission_file/week01.ipynb": "/etc/passwd"}
    export = make_zip(tmp_path / "e.zip", members, links)
    claim_size(export, "Huge Five_5_assignsubmission_file/week01.ipynb", 200 * 2**20)
    found = by_key(read_export(export))

    assert b"good" in found["participant-1"].content and b"seven" in found["participant-7"].content
    statuses = {key: (s.status, s.message) for key, s in found.items() if s.status}
    assert statuses["participant-2"][0] is Status.ERROR and "'..' path" in statuses["participant-2"][1]
    assert "uploaded zip hw.zip is corrupt" in statuses["participant-3"][1]
    assert statuses["participant-4"] == (Status.ERROR, "week01.ipynb is empty: nothing to grade")
    # Refused from the zip header alone: the 200 MiB are never read.
    assert statuses["participant-5"] == (
        Status.ERROR, "Huge Five_5_assignsubmission_file/week01.ipynb is 200.0 MiB, over the 20 MiB limit: not read"
    )
    assert "symbolic link" in statuses["participant-6"][1]
    stray = statuses["unrecognised-etc-evil.ipynb"]
    assert stray[0] is Status.ERROR and "absolute path" in stray[1]
    assert all(s.content is None for key, s in found.items() if s.status)


def test_a_corrupt_member_fails_only_its_submission(tmp_path: Path) -> None:
    path = tmp_path / "e.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("A One_1_assignsubmission_file/week01.ipynb", notebook(marker="AAAA"))
        archive.writestr("B Two_2_assignsubmission_file/week01.ipynb", notebook(marker="BBBB"))
    data = path.read_bytes()
    path.write_bytes(data.replace(b"BBBB", b"XXXX"))  # the CRC no longer matches
    found = by_key(read_export(path))

    assert b"AAAA" in found["participant-1"].content
    assert found["participant-2"].status is Status.ERROR
    assert "cannot be read from the archive" in found["participant-2"].message


def test_symlinks_in_an_unpacked_folder_are_refused(tmp_path: Path) -> None:
    root = unpack({"A One_1_assignsubmission_file/week01.ipynb": notebook()}, tmp_path / "export")
    (root / "B Two_2_assignsubmission_file").mkdir()
    (root / "B Two_2_assignsubmission_file" / "week01.ipynb").symlink_to("/etc/passwd")
    found = by_key(read_export(root))

    assert found["participant-1"].content is not None
    assert found["participant-2"].status is Status.ERROR and "symbolic link" in found["participant-2"].message


def test_an_unreadable_export_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "export.zip"
    broken.write_bytes(b"this is not a zip at all")
    with pytest.raises(ExportError, match="cannot be read as a zip"):
        read_export(broken)
    with pytest.raises(ExportError, match="not a Moodle export"):
        read_export(make_zip(tmp_path / "plain.zip", {"week01.ipynb": notebook()}))


def test_utf8_names_in_a_zip_without_the_utf8_flag(tmp_path: Path) -> None:
    # Some zip tools store UTF-8 names without flagging them; zipfile then decodes cp437.
    path = make_zip(tmp_path / "e.zip", {"ZoXY Lee_5_assignsubmission_file/week01.ipynb": notebook()})
    path.write_bytes(path.read_bytes().replace(b"ZoXY", "Zoë".encode()))
    [only] = read_export(path)

    assert only.participant.full_name == "Zoë Lee"
