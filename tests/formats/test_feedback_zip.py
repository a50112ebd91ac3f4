"""feedback.zip: every member name must map back to its participant under Moodle's importer."""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder.formats.feedback_zip import write_feedback_zip
from autograder.results import Participant, Status, SubmissionResult


def php_explode(separator: str, text: str, limit: int) -> list[str]:
    """PHP's explode() with a positive limit: the last part keeps the rest of the string."""
    parts = text.split(separator)
    return parts if len(parts) <= limit else [*parts[: limit - 1], separator.join(parts[limit - 1 :])]


def moodle_import(path: str) -> tuple[str, str, str, str] | None:
    """importziplib.php is_valid_filename_for_import(), as docs/LMS.md describes it: the first
    segment splitting into at least 4 parts with a numeric second gives id, plugin, file."""
    segments = path.split("/")
    if segments[-1].startswith((".", "~")):
        return None
    while segments:
        info = php_explode("_", segments.pop(0), 5)
        if len(info) < 4 or not info[1].isdigit():
            continue
        return info[1], info[2], info[3], "/".join([*info[4:5], *segments]).lstrip("/")
    return None


def graded(key: str, participant: Participant | None) -> SubmissionResult:
    return SubmissionResult(submission=key, key=key, status=Status.GRADED, participant=participant)


FOLDERS = {
    "participant-123456": Participant(participant_id="123456", full_name="Jane Doe",
                                      folder="Jane Doe_123456_assignsubmission_file"),
    "participant-123457": Participant(participant_id="123457", full_name="John Roe",
                                      folder="John Roe_123457_assignsubmission_file_"),  # 3.x
    "participant-200001": Participant(participant_id="200001", full_name="山田 太郎",
                                      folder="山田 太郎_200001_assignsubmission_file"),
    "participant-9": Participant(participant_id="9", full_name="Participant 9",
                                 folder="Participant_9_assignsubmission_file"),  # blind
    "group-17": Participant(group_id="17", group_name="Group A", folder="Group A_17_assignsubmission_file"),
    "participant-5": Participant(participant_id="5", full_name="Group A-Ann Poe",
                                 folder="Group A-Ann Poe_5_assignsubmission_file_"),  # 3.x team
}


def test_every_member_maps_back_to_its_participant(tmp_path: Path) -> None:
    results = [graded(key, p) for key, p in FOLDERS.items()]
    pages = {key: f"<p>feedback for {key}</p>" for key in FOLDERS}
    report = write_feedback_zip(results=results, pages=pages, out=tmp_path / "feedback.zip")

    assert not report.skipped
    with zipfile.ZipFile(tmp_path / "feedback.zip") as archive:
        names = archive.namelist()
        assert sorted(names) == sorted(f"{p.folder}/feedback.html" for p in FOLDERS.values())
        for key, name in report.written.items():
            number, plugin_type, plugin_name, filename = moodle_import(name)
            participant = FOLDERS[key]
            assert number == (participant.participant_id or participant.group_id)
            assert (plugin_type, plugin_name, filename) == ("assignsubmission", "file", "feedback.html")
            assert archive.read(name).decode("utf-8") == pages[key]


def test_unmappable_results_are_reported_not_written(tmp_path: Path) -> None:
    results = [
        graded("default-group", Participant(group_name="Default group", folder="Default group_assignsubmission_file")),
        graded("alice", None),
        graded("participant-123456", FOLDERS["participant-123456"]),
        graded("participant-123457", FOLDERS["participant-123457"]),
    ]
    report = write_feedback_zip(
        results=results,
        pages=lambda r: None if r.key == "participant-123457" else "<p>ok</p>",
        out=tmp_path / "feedback.zip",
    )

    assert list(report.written) == ["participant-123456"]
    assert "cannot map" in report.skipped["default-group"]
    assert "no participant folder" in report.skipped["alice"]
    assert report.skipped["participant-123457"] == "no feedback page for it"
    assert moodle_import("Default group_assignsubmission_file/feedback.html") is None


def test_the_same_pages_give_the_same_zip(tmp_path: Path) -> None:
    results = [graded(key, p) for key, p in FOLDERS.items()]
    pages = {key: "<p>same</p>" for key in FOLDERS}
    write_feedback_zip(results=results, pages=pages, out=tmp_path / "a.zip")
    write_feedback_zip(results=list(reversed(results)), pages=pages, out=tmp_path / "b.zip")

    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
