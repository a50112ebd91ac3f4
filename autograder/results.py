"""What grading produces: plain dataclasses with computed totals.

Output formats (Gradescope-style JSON, the Moodle worksheet, HTML feedback) live in their
own modules and read these; nothing here knows about a file format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Status(StrEnum):
    """The state of one graded submission, as reported to the instructor."""

    GRADED = "graded"
    NOT_ATTEMPTED = "not_attempted"  # every autograded task still raises NotImplementedError
    ERROR = "error"  # the submission could not be read or run at all
    TIMEOUT = "timeout"  # the notebook did not finish within the submission's deadline
    NOT_SUBMITTED = "not_submitted"  # a Moodle entry without a notebook
    WRONG_WEEK = "wrong_week"  # the notebook's metadata names another week: graded, but likely the wrong file


class Visibility(StrEnum):
    """Gradescope's visibility values; hidden-test feedback is shown once published."""

    VISIBLE = "visible"
    HIDDEN = "hidden"
    AFTER_DUE_DATE = "after_due_date"
    AFTER_PUBLISHED = "after_published"


@dataclass(frozen=True)
class Participant:
    """Who handed a submission in, as Moodle names them (None fields when unknown)."""

    participant_id: str | None = None  # Moodle's per-assignment id, "123456"
    full_name: str | None = None
    group_id: str | None = None  # team submissions: the group id
    group_name: str | None = None
    folder: str | None = None  # the export's folder/prefix, e.g. "Jane Doe_123456_assignsubmission_file"


@dataclass
class TestResult:
    """One hidden test: what it checked (``output``, safe to show a student) and its points."""

    name: str
    task: int
    score: float
    max_score: float
    output: str
    visibility: Visibility = Visibility.VISIBLE
    not_attempted: bool = False  # the student's code raised NotImplementedError
    timed_out: bool = False  # a call into the student's code ran past its time limit

    @property
    def passed(self) -> bool:
        """The test earned all its points."""
        return self.score >= self.max_score


@dataclass
class TaskResult:
    """Points for one task of the week.

    A manual task is *pending* until a marker's points are applied (``marked``): its 0 is
    not a result, and outputs say "pending" rather than show it as final. A mark given to
    an answer that has changed since is ``stale``: kept, shown, but not counted until the
    marker confirms it. An autograded task whose points an instructor overrode keeps what
    the tests gave in ``autograded_score`` and the instructor's reason, which the student
    reads, in ``override_reason``; ``score`` is then the instructor's.
    """

    task: int
    score: float
    max_score: float
    manual: bool = False
    title: str = ""
    not_attempted: bool = False
    comment: str = ""  # the marker's comment on a manual task
    marked: bool = False  # a manual task's points come from a marker
    stale: bool = False  # marked, but the student's answer changed since: not counted
    answer_sha256: str | None = None  # a manual task's answer as graded, to tie marks to it
    autograded_score: float | None = None  # the tests' points when an instructor overrode them; None: not overridden
    override_reason: str = ""  # why the instructor overrode them, for the student

    @property
    def overridden(self) -> bool:
        """An instructor's points replace what the tests gave this autograded task."""
        return self.autograded_score is not None

    @property
    def pending(self) -> bool:
        """A manual task whose points are not known yet (unmarked, or its mark is stale)."""
        return self.manual and not self.marked


@dataclass
class SubmissionResult:
    """Everything known about one graded submission.

    ``score`` and ``max_score`` are computed from the tasks so they can never disagree.
    """

    submission: str  # where it came from: a path, or "export.zip!folder/file.ipynb"
    key: str  # a file-system-safe name, unique in the batch, for per-submission outputs
    status: Status
    tasks: list[TaskResult] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    submission_sha256: str | None = None
    tests_sha256: str | None = None
    grader_version: str = ""
    week: str = ""
    participant: Participant | None = None
    messages: list[str] = field(default_factory=list)  # student-safe notes: cell errors, limits hit
    duration_s: float = 0.0
    seed: int | None = None  # behind the hidden tests' fresh data; a regrade with it reproduces the score
    language: str = ""  # the feedback's language (the notebook's, if the course offers it); "" = the source's

    @property
    def score(self) -> float:
        """The points earned over every task, autograded and marked by hand."""
        return round(sum(t.score for t in self.tasks), 6)

    @property
    def max_score(self) -> float:
        """The week's points."""
        return round(sum(t.max_score for t in self.tasks), 6)

    @property
    def pending_points(self) -> float:
        """Points of the manual tasks not marked yet: the score is not final while above 0."""
        return round(sum(t.max_score for t in self.tasks if t.pending), 6)

    def task(self, number: int) -> TaskResult:
        """The result for task ``number``; KeyError when the week has no such task."""
        for t in self.tasks:
            if t.task == number:
                return t
        raise KeyError(number)
