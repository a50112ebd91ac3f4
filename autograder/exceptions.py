"""Every error the framework raises, under one base class.

Messages say what is wrong and what to do; classmethods build the common ones so the
wording stays the same wherever the error is raised.
"""

from __future__ import annotations

from pathlib import Path


class AutograderError(Exception):
    """Base class: the CLI prints these as a clear message instead of a traceback."""


class CourseError(AutograderError):
    """The course layout or a week's definition is wrong (an instructor's mistake)."""

    @classmethod
    def no_week(cls, week: str, root: Path) -> "CourseError":
        return cls(
            f"no week {week!r} in {root / 'source'}: expected {root / 'source' / week / (week + '.ipynb')}. "
            "Pass a week name such as week01, or --course to point at the course folder."
        )


class MarkerError(AutograderError):
    """A solution marker is unbalanced, nested or malformed; says the file and line."""

    @classmethod
    def at(cls, path: Path | str, cell: int, line: int, what: str) -> "MarkerError":
        return cls(f"{path}: cell {cell}, line {line}: {what}")


class GenerationError(AutograderError):
    """Generation refused to write a notebook (e.g. a solution line would leak)."""


class SubmissionError(AutograderError):
    """A submission cannot be read as a notebook; the message goes into its result."""


class ProtocolError(AutograderError):
    """A message between grader and worker broke the protocol (size, depth, type, framing)."""


class SandboxError(AutograderError):
    """The sandbox could not be set up as asked."""


class WorksheetError(AutograderError):
    """A Moodle grading worksheet cannot be read or written as Moodle expects."""
