"""The leak guard (autograder/generate/steps/leak_guard.py): a student notebook that would
carry a solution line, a model answer or the reference's outputs is refused, whichever
step let it through; lines that reveal nothing are not leaks."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.exceptions import GenerationError
from autograder.generate import student_notebook
from autograder.generate.pipeline import STUDENT_STEPS, run
from autograder.generate.steps import (
    AnswerPrompts,
    ClearOutputs,
    ClearSolutions,
    Context,
    LeakGuard,
    Preprocessor,
    StripMarkers,
)
from tests.helpers import GENERATE_SOURCE as SOURCE
from tests.helpers import numbered_notebook


def student_steps_with(replaced: type[Preprocessor], by: list[Preprocessor]) -> list[Preprocessor]:
    """The student pipeline with one step swapped for others: a broken generator."""
    steps: list[Preprocessor] = []
    for step in STUDENT_STEPS:
        steps.extend(by if isinstance(step, replaced) else [step])
    return steps


def test_the_leak_guard_refuses_a_solution_line_that_survives() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    broken = student_steps_with(ClearSolutions, [StripMarkers()])  # keeps the solution, drops markers
    with pytest.raises(GenerationError, match=r"cell 4, line 8: .*'self\.mean_ = float\(np\.mean\(y\)\) \+ self\.shift'"):
        run(broken, source, path=SOURCE)


def test_the_leak_guard_refuses_a_model_answer_that_survives() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    with pytest.raises(GenerationError, match=r"cell 8, line 1: .*The mean minimises the squared error"):
        run(student_steps_with(AnswerPrompts, []), source, path=SOURCE)


def test_the_leak_guard_refuses_the_reference_outputs() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    with pytest.raises(GenerationError, match=r"cell 5: the student notebook would carry the reference's outputs"):
        run(student_steps_with(ClearOutputs, []), source, path=SOURCE)


def test_the_leak_guard_refuses_a_solution_line_moved_to_another_cell() -> None:
    source = nbformat.read(SOURCE, as_version=nbformat.NO_CONVERT)
    student = student_notebook(source, path=SOURCE)
    student.cells[2].source += "\n    return  np.full(len(X),self.mean_)"  # re-spaced, re-indented
    with pytest.raises(GenerationError, match=r"cell 3, line 2: "):
        LeakGuard().preprocess(student, Context(path=SOURCE, source=source))


def test_lines_shared_with_public_code_and_empty_lines_are_not_leaks() -> None:
    """A region may repeat what its cell shows outside it, and keywords reveal nothing."""
    nb = numbered_notebook(
        new_code_cell("total = compute(x)\nfor item in items:\n    pass\nelse:\n    pass"),
        new_code_cell(
            "def f(x):\n"
            "    total = compute(x)\n"
            "    ### BEGIN SOLUTION\n"
            "    total = compute(x)\n"
            "    if total:\n"
            "        return self\n"
            "    else:\n"
            "        pass\n"
            "    )\n"
            "    raise NotImplementedError()\n"
            "    ### END SOLUTION\n"
            "    return self"
        ),
        new_markdown_cell("The model answer line.", metadata={"autograder": {"answer": 1}}),
        new_markdown_cell("The model answer line."),
    )
    student = student_notebook(nb, path=Path("w.ipynb"))
    assert student.cells[1].source == "def f(x):\n    total = compute(x)\n    # your code here\n    raise NotImplementedError()\n    return self"


def test_the_leak_guard_ignores_lines_that_reveal_nothing_but_not_the_rest() -> None:
    """Blank lines, punctuation and keyword-only lines are never secret, wherever they turn up."""
    source = numbered_notebook(
        new_code_cell("x = 1"),
        new_code_cell("### BEGIN SOLUTION\nif ready:\n    return self\nelse:\n    pass\n)\n\nsteps = 2 * x\n### END SOLUTION"),
    )
    student = student_notebook(source, path=Path("w.ipynb"))
    student.cells[0].source += "\n\nelse:\n    return self\n    pass\n)"
    LeakGuard().preprocess(student, Context(path=Path("w.ipynb"), source=source))
    student.cells[0].source += "\nif ready:"
    with pytest.raises(GenerationError, match=r"cell 1, line 7: .*'if ready:'"):
        LeakGuard().preprocess(student, Context(path=Path("w.ipynb"), source=source))

