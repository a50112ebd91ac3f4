"""``collect``: any PATH the CLI is given (notebook, folder, Moodle zip or folder) to Submissions."""

from __future__ import annotations

import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.exceptions import AutograderError
from autograder.hand_ins import collect
from autograder.results import Status


def notebook(marker: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"# {marker}")]
    return nbformat.writes(nb).encode()


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_single_notebook(tmp_path: Path) -> None:
    [only] = collect([put(tmp_path / "alice.ipynb", notebook("alice"))])

    assert only.key == "alice" and b"alice" in only.content and only.participant is None
    assert only.origin == str(tmp_path / "alice.ipynb")


def test_a_folder_of_notebooks_recursive_and_sorted(tmp_path: Path) -> None:
    put(tmp_path / "class" / "bob.ipynb", notebook("bob"))
    put(tmp_path / "class" / "2024" / "alice.ipynb", notebook("alice"))
    put(tmp_path / "class" / "2024" / ".ipynb_checkpoints" / "alice-checkpoint.ipynb", notebook("old"))
    put(tmp_path / "class" / "notes.txt", b"not a notebook")
    put(tmp_path / "class" / "empty.ipynb", b"")
    (tmp_path / "class" / "link.ipynb").symlink_to(tmp_path / "class" / "bob.ipynb")

    found = collect([tmp_path / "class"])

    assert [s.key for s in found] == ["2024-alice", "bob", "empty", "link"]
    assert found[2].status is Status.ERROR and "empty" in found[2].message
    assert found[3].status is Status.ERROR and "symbolic link" in found[3].message


def test_an_oversized_notebook_is_refused_before_reading(tmp_path: Path) -> None:
    [big] = collect([put(tmp_path / "big.ipynb", notebook("x" * 5000))], max_bytes=1000)

    assert big.status is Status.ERROR and "over the" in big.message and big.content is None


def test_moodle_zip_and_folder_are_recognised_and_keys_stay_unique(tmp_path: Path) -> None:
    member = "Jane Doe_123456_assignsubmission_file/week01.ipynb"
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr(member, notebook("jane"))
    put(tmp_path / "unpacked" / member, notebook("jane"))

    found = collect([export, tmp_path / "unpacked"], week="week01")

    assert [s.key for s in found] == ["participant-123456", "participant-123456-2"]
    assert all(s.participant.participant_id == "123456" for s in found)


def test_paths_that_are_nothing_we_read(tmp_path: Path) -> None:
    with pytest.raises(AutograderError, match="does not exist"):
        collect([tmp_path / "missing.ipynb"])
    with pytest.raises(AutograderError, match="not a notebook"):
        collect([put(tmp_path / "grades.csv", b"Identifier\n")])
