"""Reading a source notebook and writing generated ones, byte for byte reproducibly."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.validator import ValidationError

from autograder.exceptions import GenerationError


def read_source(path: Path) -> NotebookNode:
    """The source notebook as written. Not converted: nbformat's upgrade to 4.5 gives
    cells random ids, which would make every generation differ."""
    try:
        nb: NotebookNode = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    except (OSError, ValueError) as error:
        raise GenerationError(f"{path}: cannot read the source notebook: {error}") from error
    if nb.get("nbformat") != 4:
        raise GenerationError(f"{path}: source notebooks must be nbformat 4, this one is {nb.get('nbformat')}")
    return nb


def to_bytes(nb: NotebookNode, *, path: Path) -> bytes:
    """The file contents: validated nbformat 4 JSON, sorted keys, UTF-8, a trailing newline."""
    try:
        nbformat.validate(nb)
    except ValidationError as error:
        raise GenerationError(f"{path}: the generated notebook is not valid nbformat 4: {error.message}") from error
    text: str = nbformat.writes(nb, version=4)
    return (text + "\n").encode("utf-8")
