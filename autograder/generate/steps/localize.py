"""The generated notebook in the language it is written for."""

from __future__ import annotations

from nbformat import NotebookNode

from autograder.generate.steps.base import Context, Preprocessor
from autograder.i18n.units import translate_notebook


class Localize(Preprocessor):
    """Replace every translatable text by its translation, and record the language in the
    notebook's metadata (``autograder.language``): the grader gives feedback in it.

    After the content steps, so the stub and answer prompt they wrote (already in the
    language) stay as they are; before the guards, so they judge the translated text."""

    def preprocess(self, nb: NotebookNode, context: Context) -> NotebookNode:
        """Translate the notebook and stamp its language."""
        nb = translate_notebook(nb, context.gettext)
        nb.metadata.setdefault("autograder", {})["language"] = context.language
        return nb
