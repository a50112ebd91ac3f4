"""The two pipelines: source notebook -> student notebook, source -> solution notebook.

A pipeline is an ordered list of steps. The ordering rule:
1. ``CheckMarkers`` first: refusals name the author's own cells and lines, and nothing is
   half-done when one fires.
2. Content steps next (``ClearSolutions`` or ``StripMarkers``, ``AnswerPrompts``,
   ``ClearOutputs``): each touches its own cells or fields, so their order among
   themselves does not matter.
3. ``Localize``: after content (the stub and prompt are written in the language already),
   before the guards, which judge the translated text.
4. ``StableIds``: after content, before the guards, as the notebook will be written.
5. Guards (``MarkerGuard``, ``LeakGuard``): they judge every cell made from the source as
   it will be written, and trust none of the steps before them.
6. ``TimeLimits`` after all: the one step that adds a cell (so every step and guard before
   it numbers cells as the source does), its text the framework's and the budgets', none of
   the source's. The solution notebook states the same limits: it is the student's
   notebook answered, and the rules read the same in both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path

from nbformat import NotebookNode

from autograder.authoring import annotate
from autograder.generate.steps import (
    AnswerPrompts,
    CheckMarkers,
    ClearOutputs,
    ClearSolutions,
    Context,
    LeakGuard,
    Localize,
    MarkerGuard,
    Preprocessor,
    StableIds,
    StripMarkers,
    TimeLimits,
)
from autograder.i18n.runtime import untranslated
from autograder.testing.budgets import WeekBudgets

STUDENT_STEPS: tuple[Preprocessor, ...] = (
    CheckMarkers(),
    ClearSolutions(),
    AnswerPrompts(),
    ClearOutputs(),
    Localize(),
    StableIds(),
    MarkerGuard(),
    LeakGuard(generated=ClearSolutions.stub),
    TimeLimits(),
)

SOLUTION_STEPS: tuple[Preprocessor, ...] = (
    CheckMarkers(),
    StripMarkers(),
    ClearOutputs(),
    Localize(),
    StableIds(),
    MarkerGuard(),
    TimeLimits(),
)


def run(steps: Sequence[Preprocessor], source: NotebookNode, *, path: Path, language: str = "en",
        gettext: Callable[[str], str] = untranslated, budgets: WeekBudgets | None = None) -> NotebookNode:
    """Apply ``steps`` in order to a copy of ``source``; ``source`` itself is not changed.

    What the author declared in text (task headings, model-answer headings) is first
    written as metadata too (``autograder.authoring.annotate``), so every step and guard,
    and later the grader, sees one convention."""
    source = annotate(copy.deepcopy(source))
    context = Context(path=path, source=source, language=language, gettext=gettext, budgets=budgets)
    nb = copy.deepcopy(source)
    for step in steps:
        nb = step.preprocess(nb, context)
    return nb


def check_markers(source: NotebookNode, *, path: Path) -> None:
    """Refuse ``source``'s bad solution markers (MarkerError naming cell and line), before
    anything else is judged: what ``CheckMarkers`` does first in every pipeline."""
    CheckMarkers().preprocess(source, Context(path=path, source=source))


def student_notebook(source: NotebookNode, *, path: Path, language: str = "en",
                     gettext: Callable[[str], str] = untranslated,
                     budgets: WeekBudgets | None = None) -> NotebookNode:
    """The student's notebook: solutions become stubs, model answers prompts, outputs
    cleared, text in ``language`` (``gettext`` translates from the source language), the
    week's ``budgets`` stated in a cell of their own."""
    return run(STUDENT_STEPS, source, path=path, language=language, gettext=gettext, budgets=budgets)


def solution_notebook(source: NotebookNode, *, path: Path, language: str = "en",
                      gettext: Callable[[str], str] = untranslated,
                      budgets: WeekBudgets | None = None) -> NotebookNode:
    """The solution notebook: the code stays, the markers and outputs go; text in ``language``;
    the same budgets cell as the student's."""
    return run(SOLUTION_STEPS, source, path=path, language=language, gettext=gettext, budgets=budgets)
