"""Shared fixtures for the framework's own tests."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Limits, Sandboxed, ZygoteSlot
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.results import SubmissionResult
from autograder.submission import Submission

ROOT = Path(__file__).resolve().parent.parent
WEEK01_MIX = ["correct_fresh_notebook", "wrong_no_bias", "untouched_stub", "cheat_allclose", "wrong_unfitted_ppn",
              "correct_loop_eta_y_x"]


@pytest.fixture(scope="session")
def course() -> Course:
    return Course.locate(ROOT)


@pytest.fixture(scope="session")
def slot():
    """One warm, sandboxed zygote shared by the tests (starting one costs about a second)."""
    with ZygoteSlot(Limits()) as s:
        yield s


def throwaway_course(root: Path, week: str, cells: list[tuple[str, str]], test_file: str, tests: str) -> Course:
    """A course of one week under ``root``, for a test that needs a small week of its own:
    the source notebook from ``(kind, source)`` cells ("markdown" or "code") and one hidden
    test file. Grading imports hidden test modules into this process once per name: give
    each suite of the session its own ``test_file`` name."""
    folder = root / "source" / week
    (folder / "tests").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) if kind == "markdown" else nbformat.v4.new_code_cell(s)
                for kind, s in cells]
    nbformat.write(nb, folder / f"{week}.ipynb")
    (folder / "tests" / test_file).write_text(tests)
    return Course(root)


def notebook_bytes(*cells: str) -> bytes:
    """A notebook of code cells, as a student's file would hold it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="session")
def week01_mix() -> list[Submission]:
    """Week-1 fixtures (right, wrong, untouched, cheating) and one file that is not a notebook:
    the batch the parallel and cluster runs must grade exactly as one local run does."""
    folder = ROOT / "tests" / "fixtures" / "week01"
    # each with its own fixed seed, so every run draws the same hidden data and results compare exactly
    return [Submission(origin=f"{name}.ipynb", key=name, content=(folder / f"{name}.ipynb").read_bytes(), seed=index)
            for index, name in enumerate(WEEK01_MIX)] + [Submission(origin="broken.ipynb", key="broken",
                                                                    content=b"{not json")]


def comparable(results: list[SubmissionResult]) -> list[dict]:
    """Result documents without the one field that differs between two runs."""
    return [{k: v for k, v in to_dict(r).items() if k != "duration_s"} for r in results]


@pytest.fixture(scope="session")
def as_comparable():
    return comparable


@pytest.fixture(scope="session")
def week01_mix_local(course: Course, slot: ZygoteSlot, week01_mix: list[Submission]) -> list[dict]:
    """``week01_mix`` graded once, locally, in this process: the reference for other runs."""
    return comparable(grade(course.week("week01"), week01_mix, isolation=Sandboxed(slot=slot)))
