"""A submission as the grader receives it, whatever it came from.

Sources (a notebook path, a folder, a Moodle export) all produce ``Submission`` objects;
the grading pipeline only ever sees these, so a new source is one new module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from autograder.results import Participant, Status


@dataclass
class Submission:
    """One student's hand-in.

    ``content`` is the notebook's raw bytes; it is None when the source found no notebook,
    and then ``status`` and ``message`` say why (e.g. ``not_submitted`` with the files seen).
    """

    origin: str  # shown to the instructor: a path or "export.zip!member"
    key: str  # unique, file-system-safe name for per-submission outputs
    content: bytes | None
    participant: Participant | None = None
    status: Status | None = None  # set only when the source already knows the outcome
    message: str | None = None
    seed: int | None = None  # the hidden tests' seed: None draws a fresh one; a regrade passes the recorded one

    @property
    def sha256(self) -> str | None:
        """The hash of the notebook as handed in; None when there is none."""
        return hashlib.sha256(self.content).hexdigest() if self.content is not None else None
