"""The exports graded by the real nbgrader and otter give our scores, test by test.

The tools live in their own virtualenv (scripts/install-interop -> .venv-interop); these
tests are skipped, saying so, only when that environment is absent.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Sandboxed
from autograder.generate.markers import find_regions
from autograder.grading.grader import grade
from autograder.interop import export_nbgrader, export_otter, to_nbgrader_grades_csv
from autograder.interop.grades import NBGRADER_COLUMNS
from autograder.results import SubmissionResult
from autograder.submission import Submission

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("AUTOGRADER_INTEROP_BIN", ROOT / ".venv-interop" / "bin"))
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
SOURCES = {"reference": "source/week01/week01.ipynb", "wrong": "tests/fixtures/week01/wrong_no_bias.ipynb"}


def tool(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not (BIN / name).is_file(), reason=f"{name} not installed in {BIN}: run scripts/install-interop")


def run(*args: str, cwd: Path) -> None:
    result = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def fill(released: Path, answers: str, solution_cells: list[int]) -> bytes:
    """The released notebook with our fixture's solution cells pasted into its answer cells."""
    fixture = {c.get("id"): c for c in nbformat.read(ROOT / answers, as_version=4).cells}
    nb = nbformat.read(released, as_version=4)
    for cell, source_id in zip(solution_cells, SOLUTION_IDS):
        nb.cells[cell].source = fixture[source_id].source
    return nbformat.writes(nb).encode()


REFERENCE = nbformat.read(ROOT / SOURCES["reference"], as_version=4)
SOLUTION_IDS = [c.id for i, c in enumerate(REFERENCE.cells) if c.cell_type == "code" and find_regions(c.source, path="-", cell=i)]


def ours(course: Course, slot, notebooks: dict[str, bytes]) -> dict[str, SubmissionResult]:
    """Our sandboxed grader's results on exactly the notebooks the tool graded."""
    subs = [Submission(origin=name, key=name, content=content) for name, content in notebooks.items()]
    return {r.submission: r for r in grade(course.week("week01"), subs, isolation=Sandboxed(slot=slot))}


@tool("nbgrader")
def test_nbgrader_autograde_gives_our_scores(tmp_path: Path, course: Course, slot):
    export_nbgrader(course.week("week01"), tmp_path)
    run(str(BIN / "nbgrader"), "generate_assignment", "week01", cwd=tmp_path)
    released = tmp_path / "release" / "week01" / "week01.ipynb"
    answer_cells = [i for i, c in enumerate(nbformat.read(released, as_version=4).cells)
                    if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    notebooks = {name: fill(released, path, answer_cells) for name, path in SOURCES.items()}
    for name, content in notebooks.items():
        folder = tmp_path / "submitted" / name / "week01"
        folder.mkdir(parents=True)
        (folder / "week01.ipynb").write_bytes(content)
    run(str(BIN / "nbgrader"), "autograde", "week01", cwd=tmp_path)
    run(str(BIN / "nbgrader"), "export", "--to", "grades.csv", cwd=tmp_path)

    expected = {name: {t.name: t.score for t in r.tests} for name, r in ours(course, slot, notebooks).items()}
    for name in notebooks:
        graded = nbformat.read(tmp_path / "autograded" / name / "week01" / "week01.ipynb", as_version=4)
        theirs = {c.metadata["nbgrader"]["grade_id"]: 0.0 if any(o.output_type == "error" for o in c.outputs) else c.metadata["nbgrader"]["points"]
                  for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
        assert theirs == expected[name]
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert float(rows["reference"]["raw_score"]) == 60.0 and float(rows["wrong"]["raw_score"]) < 60.0
    assert {n: float(r["raw_score"]) for n, r in rows.items()} == {n: sum(s.values()) for n, s in expected.items()}
    header = (tmp_path / "grades.csv").read_text().splitlines()[0]
    assert tuple(header.split(",")) == NBGRADER_COLUMNS
    assert to_nbgrader_grades_csv([], tmp_path / "ours.csv").read_text().splitlines()[0] == header


@tool("otter")
def test_otter_run_gives_our_scores(tmp_path: Path, course: Course, slot):
    master = export_otter(course.week("week01"), tmp_path / "master")
    run(str(BIN / "otter"), "assign", str(master), str(tmp_path / "dist"), cwd=master.parent)
    student = tmp_path / "dist" / "student" / "week01.ipynb"
    answer_cells = [i for i, c in enumerate(nbformat.read(student, as_version=4).cells)
                    if c.cell_type == "code" and "otter_answer_cell" in c.metadata.get("tags", [])]
    notebooks = {name: fill(student, path, answer_cells) for name, path in SOURCES.items()}
    expected = {name: {f"task{t.task}": t.score for t in r.tasks if not t.manual}
                for name, r in ours(course, slot, notebooks).items()}
    assert expected["wrong"]["task1"] < 40.0
    (zip_file,) = (tmp_path / "dist" / "autograder").glob("*.zip")
    for name, content in notebooks.items():
        (tmp_path / name).mkdir()
        submission = tmp_path / name / "week01.ipynb"
        submission.write_bytes(content)
        run(str(BIN / "otter"), "run", "-a", str(zip_file), "-o", str(tmp_path / name), str(submission), cwd=tmp_path)
        report = json.loads((tmp_path / name / "results.json").read_text())
        theirs = {t["name"]: t["score"] for t in report["tests"] if t["name"].startswith("task")}
        assert theirs == expected[name]
