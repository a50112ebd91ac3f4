"""The answer prompts (autograder/generate/steps/answer_prompts.py): a malformed answer
cell is refused, saying which cell and what is wrong."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.exceptions import GenerationError
from autograder.generate import student_notebook
from tests.helpers import numbered_notebook


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        (new_code_cell("model answer", metadata={"autograder": {"answer": 3}}), "an answer cell .* must be markdown"),
        (new_markdown_cell("model answer", metadata={"autograder": {"answer": "3"}}), "autograder.answer must be a task number"),
    ],
)
def test_a_malformed_answer_cell_is_refused(cell: nbformat.NotebookNode, says: str) -> None:
    with pytest.raises(GenerationError, match=rf"^w\.ipynb: cell 1: {says}"):
        student_notebook(numbered_notebook(cell), path=Path("w.ipynb"))

