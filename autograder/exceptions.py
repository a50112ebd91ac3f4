"""Every error the framework raises, under one base class.

Messages say what is wrong and what to do; classmethods build the common ones so the
wording stays the same wherever the error is raised.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autograder.i18n.runtime import N_, _, untranslated


class AutograderError(Exception):
    """Base class: the CLI prints these as a clear message instead of a traceback."""


class CourseError(AutograderError):
    """The course layout or a week's definition is wrong (an instructor's mistake)."""

    @classmethod
    def no_week(cls, week: str, root: Path) -> CourseError:
        """The week has no reference notebook where the layout says it should be."""
        return cls(
            f"no week {week!r} in {root / 'source'}: expected {root / 'source' / week / (week + '.ipynb')}. "
            "Pass a week name such as week01, or --course to point at the course folder."
        )


class MarkerError(AutograderError):
    """A solution marker is unbalanced, nested or malformed; says the file and line."""

    @classmethod
    def at(cls, path: Path | str, cell: int, line: int, what: str) -> MarkerError:
        """A marker problem at a cell, numbered as Jupyter shows it."""
        return cls(f"{path}: cell {cell}, line {line}: {what}")


class GenerationError(AutograderError):
    """Generation refused to write a notebook (e.g. a solution line would leak)."""

    @classmethod
    def at(cls, path: Path | str, cell: int, what: str, *, line: int | None = None) -> GenerationError:
        """A generation problem at a cell, numbered as Jupyter shows it."""
        where = f"cell {cell}" if line is None else f"cell {cell}, line {line}"
        return cls(f"{path}: {where}: {what}")


class SubmissionError(AutograderError):
    """A submission cannot be read as a notebook; the message goes into its result."""


class HandInTooCostly(SubmissionError):
    """Reading one hand-in went past its budget (bytes unpacked, time): it stops, whatever
    is left unread; the message says what to hand in instead."""


class ProtocolError(AutograderError):
    """A message between grader and worker broke the protocol (size, depth, type, framing)."""


class SandboxError(AutograderError):
    """The sandbox could not be set up as asked."""


class GradingError(AutograderError):
    """The grading machinery itself failed (grader processes, a Dask cluster), not a submission."""


class WorksheetError(AutograderError):
    """A Moodle grading worksheet cannot be read or written as Moodle expects."""


class GradebookError(AutograderError):
    """The gradebook cannot be opened or a mark cannot be stored (says the file and why).

    A change refused for what was asked (``refusing``) also keeps its catalog ``message``
    and ``values``: a page tells the instructor that in their language, without the
    gradebook's path, which is the service's business and not theirs."""

    message: str | None = None  # the catalog message (N_) of a refused change; None: the file itself failed
    values: Mapping[str, Any] = {}  # its fields: numbers, names, as the message says them

    @classmethod
    def refusing(cls, path: Path | str | None, message: str, **values: object) -> GradebookError:
        """A change the gradebook at ``path`` refuses: ``message`` (marked ``N_`` where it is
        written) filled with ``values``, after the path (if given) for the command line and the logs."""
        error = cls(("" if path is None else f"{path}: ") + message.format(**values))
        error.message, error.values = message, values
        return error

    @classmethod
    def newer_schema(cls, path: Path | str, found: int | str, known: int | str) -> GradebookError:
        """The gradebook was written by a newer grader than this one."""
        return cls(
            f"{path}: gradebook schema version {found} is newer than this autograder's ({known}); "
            "upgrade the autograder or grade into a fresh output folder."
        )


class ResultDocumentError(GradebookError):
    """A result document (a gradebook row, a result file, a grader's message) is not one this
    autograder writes: the message names each field that is wrong."""


class ReportError(AutograderError):
    """A report or feedback page cannot be written as asked."""


class ExportError(AutograderError):
    """A Moodle "Download all submissions" export cannot be read at all (not one submission)."""


class ManualMarksError(AutograderError):
    """A hand-marking sheet holds marks that cannot be used; the message names every bad row."""

    @classmethod
    def rows(cls, sheet: Path | str, problems: list[str]) -> ManualMarksError:
        """Every problem of a marking sheet, one row per line."""
        return cls(f"{sheet}: " + "; ".join(problems) + ". Fix these rows and merge again.")


class MoodleServiceError(AutograderError):
    """Moodle's web services refused a call or could not be reached (``autograder moodle sync``).

    ``retryable`` is True when trying again later can succeed unchanged (the network, a
    timeout, a server error); False when someone must fix something first (the token, a
    capability, the assignment id), which the message names.
    """

    def __init__(self, message: str, *, retryable: bool = False, errorcode: str | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.errorcode = errorcode

    @classmethod
    def unreachable(cls, url: str, why: object) -> MoodleServiceError:
        return cls(f"Moodle at {url} could not be reached ({why}): nothing was lost; "
                   "run the sync again when the network is back", retryable=True)


# --------------------------------------------------------------------------------------
# Outcomes of a hidden test's dealings with student code. They fail that one test; the
# messages are shown to the student, so they never include hidden inputs or expected values.


class StudentCodeError(AutograderError):
    """The student's code raised an exception while a hidden test called it.

    Its feedback names only the exception's type, and only when that is one of Python's
    own: the message and a student-defined class name are the student's to choose, so a
    submission could echo a hidden test's inputs through them.
    """

    def __init__(self, ename: str, evalue: str, builtin: str | None = None,
                 where: object = None) -> None:
        super().__init__(f"{ename}: {evalue}" if evalue else ename)
        self.ename = ename
        self.evalue = evalue
        self.builtin = builtin or ename  # the nearest built-in base class, as the worker named it
        self.where = where  # [cell, line] as the worker named it: unchecked (autograder.notebook.cell_line)

    def feedback(self) -> str:
        """What the student is told: the error's kind and own message."""
        builtin = getattr(builtins, self.ename, None)
        known = isinstance(builtin, type) and issubclass(builtin, BaseException)
        return _("your code raised {name}").format(name=self.ename) if known else _("your code raised an exception")


class NotAttempted(StudentCodeError):
    """The student's code still raises NotImplementedError: the task is not attempted."""

    def feedback(self) -> str:
        """What the student is told."""
        return _("not attempted: your code still raises NotImplementedError")


class StudentTimeout(StudentCodeError):
    """A call into student code ran past its CPU-time limit, or (``wall``) past the
    wall-clock backstop that stops code which waits instead of computing; the worker was
    killed."""

    def __init__(self, seconds: float, *, wall: bool = False) -> None:
        super().__init__("Timeout", f"did not finish within {seconds:g} s of {'wall-clock' if wall else 'CPU'} time")
        self.seconds = seconds
        self.wall = wall

    def feedback(self) -> str:
        """What the student is told."""
        if self.wall:
            return _("your code did not finish within {seconds} s of wall-clock time (a backstop for code that "
                     "waits instead of computing)").format(seconds=f"{self.seconds:g}")
        return _("your code used more than {seconds} s of CPU time").format(seconds=f"{self.seconds:g}")


class WorkerCrashed(StudentCodeError):
    """The worker process ended while running student code (crash, os._exit, memory limit)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("WorkerCrashed", detail)

    def feedback(self) -> str:
        """What the student is told."""
        return _("your code ended the process running it (a crash, os._exit, or the memory limit)")


class TooMuchData(StudentCodeError):
    """The replies to one hidden test added up past ``Limits.test_replies_mb``: the grader
    stops reading what the student's code sends for that test (each reply was under the
    frame cap, but a lazily built object can send thousands of them)."""

    def __init__(self, megabytes: int) -> None:
        super().__init__("TooMuchData", f"more than {megabytes} MB of answers")
        self.megabytes = megabytes

    def feedback(self) -> str:
        """What the student is told."""
        return _("your code's answers to this check came to more than {mb} MB in all; the check stopped "
                 "reading them").format(mb=self.megabytes)


class MissingName(AutograderError, AttributeError):
    """The submission does not define a name the tests need."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def feedback(self) -> str:
        """What the student is told."""
        return _("your notebook does not define `{name}`").format(name=self.name)


class NotPlainData(AutograderError, TypeError):
    """Student code returned an object where the test needs plain data (numbers, arrays)."""

    def __init__(self, typename: str) -> None:
        super().__init__(typename)
        self.typename = typename

    def feedback(self) -> str:
        # not the type's name: the student chooses it, so it could carry hidden inputs
        """What the student is told."""
        return _("your code returned an object where plain data (numbers, strings, arrays, lists) was expected")


class InteropError(AutograderError):
    """An nbgrader or otter notebook cannot be imported as a week (says the file and cell)."""


class RemoteAsData(TypeError):
    """A test cell used a student's object (a figure, axes, a fitted model) as data: indexed,
    iterated, measured, compared or computed with it. That object stays in the student's
    process (the trust boundary), so only its attributes and methods can be reached."""

    def __init__(self, typename: str) -> None:
        super().__init__(
            f"the test cell uses the student's {typename} object as data (indexes, iterates, compares, measures or "
            "computes with it), but a converted test cell reaches the student's objects only through their "
            "attributes and methods, since they stay in the student's process: check the plain values those "
            "return instead (numbers, strings, arrays: `ax.get_title()`, `ax.get_xlim()`, `model.predict(X)`), "
            "or grade the question by hand (docs/INTEROP.md, 'How a converted test runs')")


# -- signals inside the grader/worker machinery --------------------------------------------
# Caught where they arise and turned into a result status or one of the errors above; they
# never reach a user. Deliberately not AutograderErrors: the batch and the CLI treat an
# AutograderError as a message for the user, and these must not be mistaken for one.


class FrameTimeout(TimeoutError):
    """The peer did not send or accept a whole frame before the deadline."""


class WorkerTimeout(TimeoutError):
    """The worker did not answer within its limit (``seconds`` of CPU time, or of wall-clock
    time when ``wall``: the backstop); it has been killed."""

    def __init__(self, seconds: float, *, wall: bool) -> None:
        super().__init__(f"no answer within {seconds:g} s of {'wall-clock' if wall else 'CPU'} time")
        self.seconds = seconds
        self.wall = wall


class WorkerDied(RuntimeError):
    """The worker process ended (crash, ``os._exit``, memory limit, signal)."""


class GraderLost(Exception):
    """A Dask task's grader process died while it held the task's submission (not for a budget):
    the task fails with this, and whoever submitted it settles the submission (an ``error``
    result in a batch, the attempt back in the service's queue)."""


class NotPlain(Exception):
    """Raised while encoding: the value is not plain data (the worker then sends a handle)."""


class SeccompUnavailable(OSError):
    """libseccomp is missing, the architecture is not covered, or the kernel refused."""


# -- the grading service (autograder serve) ----------------------------------------------------------
class PolicyError(CourseError):
    """``service.toml`` holds a rule that cannot be applied; says the file, table and key."""


class AttemptRefused(AutograderError):
    """An upload the week's policy does not accept; the message says why and what to do."""


class ScorePostError(AutograderError):
    """A score post did not succeed: the HTTP status (None: no answer), whether trying
    again may help, and what happened."""

    def __init__(self, status: int | None, retryable: bool, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class LaunchRefused(AutograderError):
    """A login, launch or registration that must not go on.

    ``str()`` says why in English, with the claims and addresses involved: for the LMS's
    administrator and the logs. The person in front of the browser (a learner, mostly) reads
    ``advice`` first, a short catalog message (``N_``) in their language saying what to do,
    with that English detail below it on the error page."""

    def __init__(self, detail: str, advice: str = N_(
            "The LMS's launch was refused: open the activity again from the course page in the LMS. If it fails "
            "again, show the details below to the LMS's administrator.")) -> None:
        super().__init__(detail)
        self.advice = advice

    @property
    def detail(self) -> str:
        return str(self)

    def said(self, gettext: Callable[[str], str]) -> str:
        """The advice in the language ``gettext`` translates to."""
        return gettext(self.advice)


class ScoreNotSent(AutograderError):
    """Raised inside the sender when a lineitem belongs to no registered platform."""


class KeysError(AutograderError):
    """The key folder cannot be read or written."""


class Refused(Exception):
    """A request the app answers with an error page: status and what to do.

    ``message`` is a catalog message (marked ``N_`` where it is written, so ``autograder i18n
    update`` finds it) and ``values`` fill its ``{fields}``. The error page translates it when
    it is rendered, in the page's language: a refusal is often raised where no language is
    known (the body's size at the edge, the session's check), the page always knows one.
    ``terms`` are values that are catalog messages themselves (a form field's name), translated
    with it. ``detail`` is English for whoever runs the service, shown below the message.
    ``str()`` is the message in English, for the logs."""

    def __init__(self, status: int, message: str, back: str | None = None, *, detail: str | None = None,
                 terms: Mapping[str, str] | None = None, **values: object) -> None:
        self.status = status
        self.message = message
        self.back = back  # the page to go back to, when there is one
        self.detail = detail
        self.terms = dict(terms or {})
        self.values = values
        super().__init__(self.said(untranslated))

    def said(self, gettext: Callable[[str], str]) -> str:
        """The message in the language ``gettext`` translates to, its values filled in. A message
        without values is not formatted: it may be text already translated by ``_``, braces and all."""
        if not self.values and not self.terms:
            return gettext(self.message)
        return gettext(self.message).format(**self.values, **{name: gettext(term) for name, term in self.terms.items()})
