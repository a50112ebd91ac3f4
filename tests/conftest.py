"""Shared fixtures for the framework's own tests."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution.run import ZygoteSlot
from autograder.execution.sandbox import Limits

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def course() -> Course:
    return Course.locate(ROOT)


@pytest.fixture(scope="session")
def slot():
    """One warm, sandboxed zygote shared by the tests (starting one costs about a second)."""
    s = ZygoteSlot(Limits()).start()
    yield s
    s.close()


def notebook_bytes(*cells: str) -> bytes:
    """A notebook of code cells, as a student's file would hold it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()
