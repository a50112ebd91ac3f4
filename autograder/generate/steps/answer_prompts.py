"""The student's version of a free-text answer cell: a prompt instead of the model answer."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.exceptions import GenerationError
from autograder.generate.steps.base import Context, Preprocessor
from autograder.i18n.runtime import N_


class AnswerPrompts(Preprocessor):
    """Replace the model answer of each ``autograder.answer`` cell by a prompt.

    The metadata stays, so the manual-grading sheet finds the student's answer in the
    same cell; attachments go with the answer (a model figure is part of it).
    """

    prompt = N_("*Write your answer to task {task} here.*")

    def preprocess_cell(self, cell: NotebookNode, context: Context, index: int) -> None:
        """Replace a model answer with the prompt the student answers."""
        meta = cell.get("metadata", {}).get("autograder", {})
        if "answer" not in meta:
            return
        if cell.cell_type != "markdown":
            raise GenerationError.at(
                context.path,
                index + 1,
                f"an answer cell (metadata autograder.answer) must be markdown, not {cell.cell_type}",
            )
        task = meta["answer"]
        if not isinstance(task, int) or isinstance(task, bool):
            raise GenerationError.at(context.path, index + 1, f"autograder.answer must be a task number, not {task!r}")
        cell.source = context.gettext(self.prompt).format(task=task)
        cell.pop("attachments", None)
