"""The marker guard (autograder/generate/steps/marker_guard.py): a student notebook in which
solution-marker text survives is refused, even when the step that clears the regions is missing."""

from __future__ import annotations

import nbformat
import pytest

from autograder.exceptions import GenerationError
from autograder.generate.pipeline import STUDENT_STEPS, run
from autograder.generate.steps import ClearSolutions
from tests.helpers import GENERATE_SOURCE as SOURCE


def test_the_marker_guard_refuses_surviving_markers() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    with pytest.raises(GenerationError, match=r"cell 4, line 8: solution-marker text survives"):
        run([step for step in STUDENT_STEPS if not isinstance(step, ClearSolutions)], source, path=SOURCE)

