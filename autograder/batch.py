"""One grading job for an instructor: submissions in, a results folder out.

The steps run in one direction: collect submissions (``hand_ins``), skip what the
gradebook already holds unchanged, grade the rest (``grading``), record each result as
it arrives (``gradebook``), then publish the outputs from the gradebook (``autograder.publish``,
the step the service and the Moodle sync publish through too): per-submission JSON, the
instructor's report and feedback pages, the Moodle worksheet and feedback zip, the other
tools' grade spreadsheets, and the marking sheet for the tasks graded by hand.
``merge_manual`` folds a filled marking sheet back in and publishes the same outputs again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.course import Week
from autograder.exceptions import AutograderError, ManualMarksError
from autograder.execution import Limits
from autograder.formats.atomic import write_bytes
from autograder.gradebook import FILENAME, MARKED_BY_SHEET, Gradebook
from autograder.hand_ins import collect, holds_export
from autograder.manual import (
    RUBRIC_CSV,
    RubricRow,
    answer_hashes,
    read_marks,
    read_rubric_sheet,
    write_rubric_sheet,
)
from autograder.publish import CODE_DIR, Edition, MarkingSheets, Outputs, Publisher, batch_artifacts
from autograder.report.similarity import own_code
from autograder.results import SubmissionResult
from autograder.results_folders import export_results, notebooks_results
from autograder.rubric import RubricItem
from autograder.submission import Submission

if TYPE_CHECKING:
    import nbformat

    from autograder.grading.pool import Graders

log = logging.getLogger(__name__)


@dataclass
class BatchOutcome:
    results: list[SubmissionResult]  # this batch's submissions, in order, manual marks applied
    reused: int
    outputs: Outputs


def default_out_dir(week: Week, paths: Sequence[Path]) -> Path:
    """``results/WEEK`` in the course for a Moodle export (where the README's commands
    look), ``results/WEEK-notebooks`` for loose notebooks, so the two never mix."""
    return export_results(week) if holds_export(paths) else notebooks_results(week)


def marked_batch_dir(week: Week, sheet: Path) -> Path:
    """The results folder of the batch a filled marking sheet belongs to, for
    ``merge-manual`` without ``--out``: the sheet's own folder when it holds a gradebook
    (``grade`` writes the sheet there), else whichever of ``default_out_dir``'s two
    folders (a Moodle export's, loose notebooks') holds one. ManualMarksError when both
    do or neither does: the marks must not go into another batch's gradebook, nor into a
    new empty one."""
    export, notebooks = export_results(week), notebooks_results(week)
    candidates = [sheet.resolve().parent] if (sheet.resolve().parent / FILENAME).is_file() else [
        folder for folder in (export, notebooks) if (folder / FILENAME).is_file()]
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise ManualMarksError(f"{sheet}: both {candidates[0]} and {candidates[1]} hold graded results of "
                               f"{week.name}: say which batch the marks are for with --out FOLDER")
    raise ManualMarksError(f"{sheet}: no graded results of {week.name} beside the sheet, nor in {export} "
                           f"or {notebooks}: grade first, or pass --out FOLDER "
                           "(the folder `autograder grade` wrote the sheet to)")


@dataclass(frozen=True)
class GradingOptions:
    """How one grading run goes, whoever starts it (``autograder grade``, the Moodle sync,
    a scheduler): one value, so a new option is added in one place. The CLI builds it from
    its flags; anything left out keeps the API's default."""

    out_dir: Path | None = None  # the results folder; ``run_batch`` defaults it (``default_out_dir``)
    worksheet: Path | None = None  # Moodle's downloaded grading worksheet, to fill in place
    regrade: bool = False  # grade again what the gradebook holds unchanged
    allow_pending: bool = False  # a provisional total reaches Moodle while hand marks are pending
    jobs: int = 0  # submissions graded at once on this machine; 0: one per core
    scheduler: str | None = None  # a Dask scheduler address: grade on that cluster instead
    graders: Graders | None = None  # a pool to grade in instead of one of the run's own (a sync in `serve`)
    limits: Limits = field(default_factory=Limits)
    on_start: Callable[[int], None] | None = None  # told how many submissions the run holds
    on_result: Callable[[SubmissionResult], None] | None = None  # each result, graded or reused

    def folder(self) -> Path:
        """``out_dir``, which every run but ``run_batch``'s must be given."""
        if self.out_dir is None:
            raise AutograderError("no results folder: set GradingOptions.out_dir (run_batch alone has a default)")
        return self.out_dir


def run_batch(week: Week, paths: Sequence[Path], options: GradingOptions | None = None) -> BatchOutcome:
    """Grade ``paths`` for ``week``; unchanged submissions are not regraded.

    ``options.out_dir`` defaults to ``default_out_dir``; ``options.jobs`` is how many
    submissions are graded at once on this machine, 0 (the default) one per core.
    A submission graded again (``regrade``, or new hidden tests or grader) whose content the
    gradebook already holds keeps its recorded seed, so the hidden tests draw the same data."""
    options = options or GradingOptions()
    if options.out_dir is None:
        options = replace(options, out_dir=default_out_dir(week, paths))
    return grade_submissions(week, collect(paths, week=week.name), options)


def grade_submissions(week: Week, submissions: list[Submission], options: GradingOptions) -> BatchOutcome:
    """``run_batch`` for submissions that come from elsewhere than files (Moodle's web
    services): the same gradebook, cache, grading and outputs. Keys must be unique;
    ``options.out_dir`` must be set."""
    out_dir, on_result = options.folder(), options.on_result
    out_dir.mkdir(parents=True, exist_ok=True)
    with Gradebook.open(out_dir / FILENAME) as book:
        run_id = book.begin_run(week.name, grader_version=week.grader_version)
        pending: list[Submission] = []
        reused = 0
        for submission in submissions:
            cached = None if options.regrade else _cached(book, week, submission)
            if cached is None:
                if submission.seed is None:  # same content graded before: same hidden data
                    submission.seed = book.recorded_seed(week.name, submission.key,
                                                         submission_sha256=submission.sha256)
                pending.append(submission)
            else:
                reused += 1
                if on_result is not None:
                    on_result(cached)
        if options.on_start is not None:
            options.on_start(len(submissions))

        given = week.handed_out()
        by_key = {s.key: s for s in pending}

        def record(result: SubmissionResult) -> None:
            hashes = answer_hashes(by_key[result.key], week.tasks, given) if result.key in by_key else {}
            for task in result.tasks:
                task.answer_sha256 = hashes.get(task.task) if task.manual else None
            if result.key in by_key:  # for the report's similarity section
                code_dir = out_dir / CODE_DIR
                code_dir.mkdir(exist_ok=True)
                code = own_code(by_key[result.key].content, given)
                write_bytes(code_dir / f"{result.key}.py", code.encode("utf-8", errors="surrogatepass"))
            book.record(result, run_id=run_id)
            if on_result is not None:
                on_result(result)

        if pending:
            from autograder.grading.parallel import grade_batch  # pytest and the grader: only when grading

            grade_batch(week, pending, jobs=options.jobs, scheduler=options.scheduler, graders=options.graders,
                        limits=options.limits, on_result=record)
        book.finish_run(run_id, reused=reused)
        edition = Edition.read(book, week, out_dir)
    stored = {r.key: r for r in edition.results}
    results = [stored[s.key] for s in submissions if s.key in stored]
    outputs = _publish(week, submissions, edition, given, worksheet=options.worksheet,
                       allow_pending=options.allow_pending)
    return BatchOutcome(results=results, reused=reused, outputs=outputs)


def all_graded(week: Week, submissions: Sequence[Submission], *, out_dir: Path) -> bool:
    """Whether the gradebook in ``out_dir`` holds every one of ``submissions`` unchanged, so
    ``grade_submissions`` would grade nothing (a submission without content is always recorded
    again). A caller with nothing new, such as a scheduled Moodle sync, skips the outputs."""
    if not (out_dir / FILENAME).is_file():
        return not submissions
    with Gradebook.open(out_dir / FILENAME) as book:
        return all(_cached(book, week, s) is not None for s in submissions)


def rewrite_outputs(week: Week, submissions: list[Submission], *, out_dir: Path, worksheet: Path | None = None,
                    allow_pending: bool = False) -> Outputs:
    """Every output ``grade_submissions`` writes, again from the gradebook as it is now
    (after hand marks stored there directly, for example)."""
    with Gradebook.open(out_dir / FILENAME) as book:
        edition = Edition.read(book, week, out_dir)
    return _publish(week, submissions, edition, week.handed_out(), worksheet=worksheet, allow_pending=allow_pending)


def _cached(book: Gradebook, week: Week, submission: Submission) -> SubmissionResult | None:
    return book.lookup(week.name, submission.key, submission_sha256=submission.sha256,
                       tests_sha256=week.tests_sha256, grader_version=week.grader_version)


def _publish(week: Week, submissions: list[Submission], edition: Edition, given: nbformat.NotebookNode | None, *,
             worksheet: Path | None, allow_pending: bool) -> Outputs:
    """``write_outputs``' artifacts, and the marking sheets of ``submissions`` when tasks are graded by hand."""
    artifacts = [*batch_artifacts(worksheet=worksheet, allow_pending=allow_pending),
                 MarkingSheets(week, submissions, given=given)]
    return Publisher(artifacts).publish(edition)


def write_outputs(week: Week, results: list[SubmissionResult], out_dir: Path, *,
                  worksheet: Path | None = None, allow_pending: bool = False) -> Outputs:
    """Everything the instructor and Moodle get, published from ``results`` (the gradebook's):
    ``publish.batch_artifacts``.

    The Moodle worksheet leaves a grade blank while manual tasks are pending, unless
    ``allow_pending``: a provisional total must not look final there."""
    return Publisher(batch_artifacts(worksheet=worksheet, allow_pending=allow_pending)).publish(
        Edition.of(week, results, out_dir))


def merge_manual(week: Week, sheet: Path, *, out_dir: Path, worksheet: Path | None = None,
                 allow_pending: bool = False, database: str | None = None) -> tuple[int, int, Outputs]:
    """Store the rubric and the marks of a filled marking sheet and rewrite every output with them.

    The gradebook is ``out_dir``'s, or the database URL ``database`` names (a grading
    service's, ``serve --database``); the outputs go to ``out_dir`` either way.

    The rubric is ``manual-rubric.csv`` beside the sheet, when there: its items are
    defined or changed first (a changed item changes every mark that uses it, marked on
    this sheet or not), then the sheet's marks are stored. Everything is checked before
    anything is stored. Returns how many marks were stored and how many sheet rows (a
    submission's manual task) still have no mark or a stale one, so the marker knows
    whether marking is done. Marks live in the gradebook apart from the autograded
    results, so a later regrade keeps them."""
    rubric_sheet = Path(sheet).with_name(RUBRIC_CSV)
    edits = read_rubric_sheet(rubric_sheet, tasks=week.tasks) if rubric_sheet.is_file() else []
    stored = 0
    with Gradebook.open(database or out_dir / FILENAME) as book:
        planned = _planned_rubric(book.rubric(week.name), edits, week.name)
        marks = read_marks(sheet, tasks=week.tasks, rubric=planned)
        _store_rubric(book, week.name, edits)
        for key, tasks in marks.items():
            for task, mark in tasks.items():
                if mark.by_rubric:
                    book.set_rubric_mark(week.name, key, task, items=mark.items, adjustment=mark.adjustment or 0.0,
                                         note=mark.comment, answer_sha256=mark.answer_sha256, marker=MARKED_BY_SHEET)
                else:
                    book.set_manual(week.name, key, task, points=mark.points, comment=mark.comment,
                                    answer_sha256=mark.answer_sha256, marker=MARKED_BY_SHEET)
                stored += 1
        results = book.results(week.name)
        if rubric_sheet.is_file():  # the new items get their numbers, so merging again adds nothing
            write_rubric_sheet(book.rubric(week.name), week.tasks, rubric_sheet)
    unmarked = sum(1 for r in results for t in r.tasks if t.pending)
    return stored, unmarked, write_outputs(week, results, out_dir, worksheet=worksheet, allow_pending=allow_pending)


def _planned_rubric(current: list[RubricItem], edits: list[RubricRow], week: str) -> list[RubricItem]:
    """The rubric as it will be once ``edits`` are stored (new items numbered as the gradebook will)."""
    items = {(i.task, i.number): i for i in current}
    for edit in edits:
        number = edit.number or max((n for t, n in items if t == edit.task), default=0) + 1
        items[edit.task, number] = RubricItem(week, edit.task, number, edit.points, edit.comment)
    return list(items.values())


def _store_rubric(book: Gradebook, week: str, edits: list[RubricRow]) -> None:
    """Define the new items and change the changed ones (recomputing the marks that use them)."""
    current = {(i.task, i.number): i for i in book.rubric(week)}
    for edit in edits:
        item = current.get((edit.task, edit.number)) if edit.number is not None else None
        if item is None:
            book.add_rubric_item(week, edit.task, points=edit.points, comment=edit.comment, number=edit.number)
        elif (item.points, item.comment) != (edit.points, edit.comment):
            book.edit_rubric_item(week, edit.task, item.number, points=edit.points, comment=edit.comment)


def load_results(out_dir: Path, week: Week, *, database: str | None = None) -> list[SubmissionResult]:
    """The week's results as the gradebook in ``out_dir`` (or the database URL ``database``)
    holds them (manual marks applied)."""
    with Gradebook.open(database or out_dir / FILENAME) as book:
        return book.results(week.name)


def weeks_in(out_dir: Path, *, database: str | None = None) -> list[str]:
    """The weeks a results folder's gradebook (or the database URL ``database``) holds results for."""
    if database is None and not (out_dir / FILENAME).is_file():
        raise AutograderError(f"{out_dir} has no {FILENAME}: is it a folder written by `autograder grade`?")
    with Gradebook.open(database or out_dir / FILENAME) as book:
        return book.weeks()

