"""One publishing step: every artifact of a week's results, rendered from the gradebook.

A result is recorded once, in the gradebook (marks applied when it is read); whatever
people and other systems get from it is a rendering made here, for every entry point
alike: ``autograder grade``, ``report`` and ``merge-manual`` (``batch``), the grading
service (an attempt's JSON and feedback page: ``publish_attempt``) and the Moodle sync
(the grades it pushes). As nbgrader composes preprocessors, each artifact is a small
class with one job (an ``Artifact``): it reads an ``Edition`` (a week's results as the
gradebook holds them, and the folder they go to) and writes its files, or hands its
scores on; a ``Publisher`` runs the artifacts a caller asks for, in order, and gathers
what they wrote in one ``Outputs``. Nothing here reads an artifact back.

Sending a score to an LMS needs a client that lives above this floor (the sync's Moodle
web services), so the step decides *what* each student is given for a result (``Scores``:
the grade or none while hand marks are pending, the comment, the feedback page) and the
caller's ``ScoreSink`` decides *how* it is sent. The service's AGS post is not a result's
score but a counted one (the best or last of a student's attempts, late penalties
applied), noted and enqueued in the same transaction as the attempt it comes from, so it
stays with ``service/counting.py`` and the outbox.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from autograder.course import Course, Week
from autograder.exceptions import CourseError
from autograder.formats.atomic import write_bytes, write_text
from autograder.formats.feedback_zip import write_feedback_zip
from autograder.formats.points import format_points
from autograder.formats.result_json import encode
from autograder.formats.spreadsheet_cells import spreadsheet_cell
from autograder.formats.worksheet import feedback_comment, fill_worksheet, write_worksheet
from autograder.gradebook import Gradebook, ManualMark
from autograder.interop.grades import to_nbgrader_grades_csv, to_otter_final_grades_csv
from autograder.manual import RUBRIC_CSV, Mark, write_manual_sheet, write_rubric_sheet
from autograder.report import render_feedback, write_report
from autograder.report.similarity import Pair, similar_pairs
from autograder.results import Status, SubmissionResult
from autograder.results_folders import service_results
from autograder.rubric import RubricItem
from autograder.text import scrub

if TYPE_CHECKING:
    import nbformat

    from autograder.submission import Submission

WORKSHEET = "grades.csv"
DOWNLOADED_WORKSHEET = "worksheet-as-downloaded.csv"  # kept so later runs fill the same one
FEEDBACK_ZIP = "feedback.zip"
MANUAL_CSV = "manual-marking.csv"
MANUAL_HTML = "manual-marking.html"
NBGRADER_CSV = "nbgrader-grades.csv"
OTTER_CSV = "otter-final_grades.csv"
GRADEBOOK_CSV = "gradebook.csv"
CODE_DIR = "code"  # each submission's own code (given cells removed), compared for similarity


@dataclass
class Outputs:
    """What a publication wrote, and what it had to leave out (shown to the instructor)."""

    folder: Path
    report: Path | None = None
    worksheet: Path | None = None
    feedback_zip: Path | None = None
    manual_sheet: Path | None = None
    gradebook: Path | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # key -> why it is not in an output


@dataclass(frozen=True)
class Edition:
    """What every artifact is rendered from: a week's results as the gradebook holds them
    (sorted by key, marks applied), its marks and rubric, and the folder they go to."""

    results: list[SubmissionResult]
    folder: Path
    title: str  # the week as pages name it (``Week.label``)
    week: Week | None = None  # the course's week: pages in each student's language; None when the course lacks it
    marks: Mapping[str, Mapping[int, ManualMark]] = field(default_factory=dict)
    rubric: Sequence[RubricItem] = ()

    @classmethod
    def of(cls, week: Week, results: Iterable[SubmissionResult], folder: Path) -> Edition:
        """``results`` of ``week`` (read from a gradebook by the caller), in key order."""
        return cls(results=sorted(results, key=lambda r: r.key), folder=folder, title=week.label(), week=week)

    @classmethod
    def read(cls, book: Gradebook, week: Week, folder: Path) -> Edition:
        """Everything ``book`` holds of ``week``: results with marks applied, the marks, the rubric."""
        return cls(results=book.results(week.name), folder=folder, title=week.label(), week=week,
                   marks=book.manual_marks(week.name), rubric=book.rubric(week.name))


class Artifact(Protocol):
    """One kind of output, rendered from an edition; what it wrote goes into ``outputs``."""

    def publish(self, edition: Edition, outputs: Outputs) -> None: ...


class Publisher:
    """Runs the artifacts a caller asks for, in the order given, over one edition."""

    def __init__(self, artifacts: Sequence[Artifact]) -> None:
        self.artifacts = list(artifacts)

    def publish(self, edition: Edition) -> Outputs:
        outputs = Outputs(folder=edition.folder)
        for artifact in self.artifacts:
            artifact.publish(edition, outputs)
        return outputs


# --- files --------------------------------------------------------------------------------


class ResultFiles:
    """``<key>.json`` for each result: its document as ``formats.result_json`` encodes it."""

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        for result in edition.results:
            write_text(edition.folder / f"{result.key}.json", encode(result))


class FeedbackPages:
    """``<key>.html`` for each result: the student's feedback page, in their language."""

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        for result in edition.results:
            write_text(edition.folder / f"{result.key}.html", self.page(result, edition))

    @staticmethod
    def page(result: SubmissionResult, edition: Edition) -> str:
        return render_feedback(result, week_title=edition.title, week=edition.week)


class Report:
    """The instructor's ``report.html`` and its ``feedback/`` pages, with the pairs of
    suspiciously alike code among what earlier runs saved in ``code/``."""

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        outputs.report = write_report(edition.results, edition.folder, week_title=edition.title, week=edition.week,
                                      similar=self._similar(edition))

    @staticmethod
    def _similar(edition: Edition) -> list[Pair]:
        codes = {}
        for result in edition.results:
            path = edition.folder / CODE_DIR / f"{result.key}.py"
            if path.is_file():
                codes[result.key] = path.read_text(encoding="utf-8", errors="replace")
        given = edition.week.handed_out() if edition.week is not None else None
        given_code = "\n\n".join(c.source for c in given.cells if c.cell_type == "code") if given is not None else ""
        return similar_pairs(codes, given_code=given_code)


class OtherToolsGrades:
    """The grade spreadsheets nbgrader and otter-grader write, which their users already have formulas for."""

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        to_nbgrader_grades_csv(edition.results, edition.folder / NBGRADER_CSV)
        to_otter_final_grades_csv(edition.results, edition.folder / OTTER_CSV)


class KeptWorksheet:
    """A copy of the grading worksheet downloaded from Moodle, so later runs fill the same one."""

    def __init__(self, worksheet: Path | None) -> None:
        self.worksheet = worksheet

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        kept = edition.folder / DOWNLOADED_WORKSHEET
        if self.worksheet is not None and self.worksheet.resolve() != kept.resolve():
            write_bytes(kept, self.worksheet.read_bytes())


class MoodleWorksheet:
    """Moodle's grading worksheet: the downloaded one filled in (``worksheet``, else the kept
    copy), or a new one for the results from a Moodle export. A grade is left blank while
    hand-marked tasks are pending, unless ``allow_pending``: a provisional total must not
    look final there."""

    def __init__(self, worksheet: Path | None, *, allow_pending: bool) -> None:
        self.worksheet, self.allow_pending = worksheet, allow_pending

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        worksheet = self.worksheet
        kept = edition.folder / DOWNLOADED_WORKSHEET
        if worksheet is None and kept.is_file():
            worksheet = kept
        if worksheet is not None:
            outputs.worksheet = edition.folder / WORKSHEET
            fill = fill_worksheet(worksheet=worksheet, results=edition.results, out=outputs.worksheet,
                                  allow_pending=self.allow_pending)
            outputs.skipped.update(fill.skipped)
        elif moodle := _from_moodle(edition.results):
            outputs.worksheet = edition.folder / WORKSHEET
            fill = write_worksheet(results=moodle, out=outputs.worksheet, allow_pending=self.allow_pending)
            outputs.skipped.update(fill.skipped)


class MoodleFeedbackZip:
    """Moodle's feedback-files zip: each Moodle participant's feedback page in their folder."""

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        moodle = _from_moodle(edition.results)
        if not moodle:
            return
        outputs.feedback_zip = edition.folder / FEEDBACK_ZIP
        written = write_feedback_zip(
            results=moodle, pages=lambda r: render_feedback(r, week_title=edition.title, week=edition.week),
            out=outputs.feedback_zip)
        outputs.skipped.update({k: f"feedback.zip: {v}" for k, v in written.skipped.items()})


class MarkingSheets:
    """The marking sheet of ``submissions`` (CSV and a read-only HTML view), prefilled with the
    gradebook's marks, and the rubric sheet, when the week has tasks graded by hand. The
    answers come from the hand-ins themselves, which the gradebook does not hold."""

    def __init__(self, week: Week, submissions: Sequence[Submission], *,
                 given: nbformat.NotebookNode | None) -> None:
        self.week, self.submissions, self.given = week, submissions, given  # given: the notebook handed out

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        if not any(t.manual for t in self.week.tasks):
            return
        outputs.manual_sheet = edition.folder / MANUAL_CSV
        write_manual_sheet(
            submissions=self.submissions, tasks=self.week.tasks, csv_path=outputs.manual_sheet,
            html_path=edition.folder / MANUAL_HTML, title=self.week.label(),
            marks={key: {task: Mark(m.points, m.note if m.by_rubric else m.comment, m.answer_sha256, m.items,
                                    m.adjustment) for task, m in tasks.items()}
                   for key, tasks in edition.marks.items()},
            given=self.given,
        )
        write_rubric_sheet(edition.rubric, self.week.tasks, edition.folder / RUBRIC_CSV)


@dataclass(frozen=True)
class Learner:
    """Who a result belongs to, as the gradebook CSV names them: the name shown, the LMS's
    identifier (Moodle's participant id, the LTI ``sub``) and the email, "" when unknown."""

    name: str
    lms_id: str = ""
    email: str = ""

    @classmethod
    def of(cls, result: SubmissionResult) -> Learner:
        """A batch's learner: Moodle's full name and participant id when the hand-in came from
        an export, else the result's key (a loose notebook has nobody else to name)."""
        who = result.participant
        if who is None:
            return cls(name=result.key)
        return cls(name=who.full_name or who.group_name or result.key, lms_id=who.participant_id or "")


PENDING_MARKS = "pending hand marks"
_STATUS_WORDS = {Status.GRADED: "graded", Status.NOT_ATTEMPTED: "not attempted", Status.ERROR: "error",
                 Status.TIMEOUT: "timeout", Status.NOT_SUBMITTED: "not submitted", Status.WRONG_WEEK: "wrong week"}


def gradebook_csv(rows: Sequence[tuple[Learner, SubmissionResult]]) -> str:
    """The gradebook as a spreadsheet opens it: one row per learner, sorted by name, with each
    task's points under a "Task N (max M)" column (blank while pending or never graded),
    the total and maximum, the status ("pending hand marks" for a graded result with tasks
    still to mark) and the points still to mark. Every cell a student or the LMS chose goes
    through ``spreadsheet_cell`` (a name ``=HYPERLINK(...)`` is shown, never run), and the
    text starts with a byte order mark so Excel reads accents and Japanese as UTF-8. The
    batch's ``gradebook.csv`` and the service's results.zip are both this text."""
    maxima: dict[int, float] = {}
    for _, result in rows:
        for task in result.tasks:
            maxima[task.task] = max(maxima.get(task.task, 0.0), task.max_score)
    numbers = sorted(maxima)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")
    writer.writerow(["Name", "LMS id", "Email",
                     *(f"Task {n} (max {format_points(maxima[n])})" for n in numbers),
                     "Total", "Maximum", "Status", "Pending points"])
    for learner, result in sorted(rows, key=lambda row: (row[0].name.casefold(), row[0].name, row[1].key)):
        points = {t.task: "" if t.pending else format_points(t.score) for t in result.tasks}
        status = PENDING_MARKS if result.status == Status.GRADED and result.pending_points else (
            _STATUS_WORDS[result.status])
        writer.writerow([spreadsheet_cell(learner.name), spreadsheet_cell(learner.lms_id),
                         spreadsheet_cell(learner.email), *(points.get(n, "") for n in numbers),
                         format_points(result.score), format_points(result.max_score), status,
                         format_points(result.pending_points)])
    # a name from a file name that is not UTF-8 (a lone surrogate) becomes U+FFFD
    return scrub("\ufeff" + text.getvalue())


class GradebookCsv:
    """``gradebook.csv`` beside Moodle's worksheet: each student's name, LMS id, per-task
    points, total and status in one sheet a spreadsheet opens as it is (``gradebook_csv``)."""

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        outputs.gradebook = edition.folder / GRADEBOOK_CSV
        write_text(outputs.gradebook, gradebook_csv([(Learner.of(r), r) for r in edition.results]))


def _from_moodle(results: Sequence[SubmissionResult]) -> list[SubmissionResult]:
    """The results of hand-ins from a Moodle export (their participant's folder is known)."""
    return [r for r in results if r.participant is not None and r.participant.folder]


# --- scores for an LMS --------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """What one student is given for one result: a grade (or none yet), a comment, a page."""

    result: SubmissionResult
    graded: bool  # False while hand-marked tasks are pending (and pending grades are not allowed): no grade yet
    comment: str  # HTML: each task's points, and which hand-marked part is still pending
    title: str
    week: Week | None

    def page(self) -> str:
        """The feedback page, rendered when asked (an LMS that takes no files never pays for it)."""
        return render_feedback(self.result, week_title=self.title, week=self.week)


class ScoreSink(Protocol):
    """Where scores go: an LMS's client, which knows how to send them and what came back."""

    def send(self, scores: Sequence[Score]) -> None: ...


class Scores:
    """Each result's ``Score``, handed to ``sink`` at once. A grade is given only when no
    hand-marked task is pending, unless ``allow_pending`` (then the comment says it is provisional)."""

    def __init__(self, sink: ScoreSink, *, allow_pending: bool) -> None:
        self.sink, self.allow_pending = sink, allow_pending

    def publish(self, edition: Edition, outputs: Outputs) -> None:
        self.sink.send([self._score(result, edition) for result in edition.results])

    def _score(self, result: SubmissionResult, edition: Edition) -> Score:
        pending = [t for t in result.tasks if t.pending]
        comment = feedback_comment(result)
        if pending:
            tasks = ", ".join(str(t.task) for t in pending)
            comment += (f"<p>Task {tasks} ({format_points(result.pending_points)} points) is marked by hand and not "
                        "marked yet: "
                        + ("this grade is provisional.</p>" if self.allow_pending
                           else "the grade follows once it is.</p>"))
        return Score(result=result, graded=not pending or self.allow_pending, comment=comment, title=edition.title,
                     week=edition.week)


# --- what each entry point publishes ------------------------------------------------------


def batch_artifacts(*, worksheet: Path | None, allow_pending: bool) -> list[Artifact]:
    """Everything the instructor and Moodle get from a grading run (``batch``), in the order it is written."""
    return [KeptWorksheet(worksheet), ResultFiles(), Report(), OtherToolsGrades(),
            MoodleWorksheet(worksheet, allow_pending=allow_pending), GradebookCsv(), MoodleFeedbackZip()]


def publish_attempt(root: Path, course: Course | None, result: SubmissionResult, *,
                    week_title: str) -> tuple[Path, Path]:
    """A service attempt's JSON and feedback page under ``results/<week>/`` of the data folder
    ``root`` (the page in the student's language when ``course`` has the week's catalogs);
    their paths. ``result`` is the gradebook's (marks applied), keyed ``attempt-<id>``."""
    edition = _attempt_edition(service_results(root, result.week), course, result, week_title=week_title)
    edition.folder.mkdir(parents=True, exist_ok=True)
    Publisher([ResultFiles(), FeedbackPages()]).publish(edition)
    return edition.folder / f"{result.key}.json", edition.folder / f"{result.key}.html"


def attempt_page(course: Course | None, result: SubmissionResult, *, week_title: str) -> str:
    """The feedback page ``publish_attempt`` writes, rendered for a request instead (the
    service's feedback route and results.zip show a mark the moment it is stored)."""
    edition = _attempt_edition(Path(), course, result, week_title=week_title)
    return FeedbackPages.page(result, edition)


def _attempt_edition(folder: Path, course: Course | None, result: SubmissionResult, *, week_title: str) -> Edition:
    try:
        week: Week | None = course.week(result.week) if course is not None else None
    except CourseError:
        week = None
    return Edition(results=[result], folder=folder, title=week_title, week=week)
