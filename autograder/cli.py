"""The ``autograder`` command: a thin layer over the keyword-only Python API.

stdout carries only what was asked for (a table, or with ``--json`` one JSON array);
progress, warnings and logs go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from autograder.course import Course
from autograder.exceptions import AutograderError
from autograder.provenance import grader_version

if TYPE_CHECKING:
    from autograder.batch import Outputs
    from autograder.course import Week
    from autograder.results import SubmissionResult

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Generate, grade and return machine-learning notebook assignments.")
out = Console()
err = Console(stderr=True)

CourseOption = Annotated[Path | None, typer.Option("--course", help="the course folder (holds source/); "
                                                      "default: found from the working directory")]


WeekArg = Annotated[str, typer.Argument(help="the week, e.g. week01")]
OutOption = Annotated[
    Path | None, typer.Option("--out", help="the results folder (default: results/WEEK in the course)")
]
GradeOutOption = Annotated[Path | None, typer.Option("--out", help=(
    "the results folder (default: results/WEEK in the course for a Moodle export, "
    "results/WEEK-notebooks for loose notebooks, so the two never mix)"))]
AllowPendingOption = Annotated[bool, typer.Option(
    "--allow-pending", help="fill Moodle grades even while tasks graded by hand are not marked yet")]
WorksheetOption = Annotated[Path | None, typer.Option(
    "--worksheet", help="the grading worksheet downloaded from Moodle, to fill")]


def _locate(week: str, course: Path | None, out_dir: Path | None) -> tuple[Week, Path]:
    """The week asked for and its results folder (default ``results/WEEK`` in the course)."""
    try:
        found = Course.locate(course)
        the_week = found.week(week)
    except AutograderError as exc:
        _fail(exc)
    return the_week, out_dir or found.root / "results" / the_week.name


def _fail(exc: AutograderError) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
    raise typer.Exit(2)


@app.command()
def generate(
    weeks: Annotated[list[str] | None, typer.Argument(help="weeks to generate (default: all)")] = None,
    check: Annotated[bool, typer.Option("--check", help="write nothing; exit 1 if committed files differ")] = False,
    course: CourseOption = None,
) -> None:
    """Write assignments/WEEK (student notebook) and solutions/WEEK from source/WEEK."""
    from autograder.course import normalise_week_name
    from autograder.generate.week import generate_course

    try:
        found = Course.locate(course)
        differences = generate_course(found, weeks=weeks or (), check=check)
    except AutograderError as exc:
        _fail(exc)
    for difference in differences:
        if check:
            err.print(str(difference), highlight=False)
        else:
            out.print(difference.done(), highlight=False)
    if check and differences:
        err.print(f"[red]{len(differences)} generated file(s) out of date:[/] run `autograder generate`")
        raise typer.Exit(1)
    changed = {d.path.parts[1] for d in differences}
    for name in (weeks and [normalise_week_name(w) for w in weeks]) or found.week_names():
        if name not in changed:
            err.print(f"{name}: up to date", highlight=False)


@app.command()
def grade(
    week: WeekArg,
    paths: Annotated[
        list[Path], typer.Argument(help="notebooks, folders of notebooks, or Moodle exports (.zip or folder)")
    ],
    out_dir: GradeOutOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON array on stdout, nothing else")] = False,
    worksheet: WorksheetOption = None,
    regrade: Annotated[
        bool, typer.Option("--regrade", help="grade again even what the gradebook holds unchanged")
    ] = False,
    allow_pending: AllowPendingOption = False,
    jobs: Annotated[
        int, typer.Option("--jobs", min=0, help="submissions graded at once (0, the default: the number of cores)")
    ] = 0,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="a Dask scheduler address, tcp://HOST:PORT")
    ] = None,
    course: CourseOption = None,
) -> None:
    """Grade submissions: run each notebook sandboxed, then the week's hidden tests."""
    from autograder.batch import run_batch
    from autograder.formats.result_json import to_dict

    the_week, _ = _locate(week, course, None)
    with Progress(TextColumn("grading {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        bar = progress.add_task(the_week.name, total=None)
        try:
            outcome = run_batch(
                the_week, paths, out_dir=out_dir, worksheet=worksheet, regrade=regrade, allow_pending=allow_pending,
                jobs=jobs, scheduler=scheduler,
                on_start=lambda n: progress.update(bar, total=n), on_result=lambda _: progress.advance(bar),
            )
        except AutograderError as exc:
            _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps([to_dict(r) for r in outcome.results], ensure_ascii=False, indent=1) + "\n")
    else:
        _print_table(the_week, outcome.results)
    _print_outputs(outcome.outputs, reused=outcome.reused)


def _print_table(week: Week, results: list[SubmissionResult]) -> None:
    table = Table(title=f"{week.name}: {week.title}")
    for column in ("submission", "status", "score", *[f"task {t.number}" + (" (hand)" if t.manual else "")
                                                      for t in week.tasks]):
        table.add_column(column, overflow="fold")
    for r in results:
        who = (r.participant.full_name or r.participant.group_name) if r.participant else None
        pending = f" ({r.pending_points:g} pending)" if r.pending_points else ""
        table.add_row(escape(who or r.key), r.status.value, f"{r.score:g} / {r.max_score:g}{pending}",  # "[red]": text
                      *[(f"stale mark/{t.max_score:g}" if t.stale else f"pending/{t.max_score:g}") if t.pending else
                        f"{t.score:g}/{t.max_score:g}" + (" n/a" if t.not_attempted else "") for t in r.tasks])
    out.print(table)


def _print_outputs(outputs: Outputs, *, reused: int = 0) -> None:
    """Where things went, on stderr (stdout may be carrying JSON)."""
    if reused:
        err.print(f"{reused} unchanged submission(s) taken from the gradebook (--regrade to grade them again)")
    for label, path in (("report", outputs.report), ("worksheet for Moodle", outputs.worksheet),
                        ("feedback files for Moodle", outputs.feedback_zip), ("marking sheet", outputs.manual_sheet)):
        if path is not None:
            err.print(f"{label}: {escape(str(path))}", highlight=False)
    for key, why in sorted(outputs.skipped.items()):
        err.print(f"[yellow]left out[/] {escape(key)}: {escape(why)}", highlight=False)


@app.command()
def report(
    out_dir: Annotated[Path, typer.Argument(help="a results folder written by `autograder grade`")],
    week: Annotated[str | None, typer.Option("--week", help="the week, when the folder holds several")] = None,
    worksheet: WorksheetOption = None,
    allow_pending: AllowPendingOption = False,
    course: CourseOption = None,
) -> None:
    """Rewrite the report, feedback pages, worksheet and feedback zip from a results folder."""
    from autograder.batch import load_results, weeks_in, write_outputs

    try:
        if week is None:
            found = weeks_in(out_dir)
            if len(found) != 1:
                raise AutograderError(f"{out_dir} holds results of {found or 'no week'}: choose one with --week")
            week = found[0]
        the_week, folder = _locate(week, course, out_dir)
        outputs = write_outputs(the_week, load_results(folder, the_week), folder, worksheet=worksheet,
                                allow_pending=allow_pending)
    except AutograderError as exc:
        _fail(exc)
    _print_outputs(outputs)


@app.command("merge-manual")
def merge_manual(
    week: WeekArg,
    sheet: Annotated[Path, typer.Argument(help="the filled marking sheet (manual-marking.csv)")],
    out_dir: OutOption = None,
    worksheet: WorksheetOption = None,
    allow_pending: AllowPendingOption = False,
    course: CourseOption = None,
) -> None:
    """Fold marks given by hand into the totals, the worksheet, the feedback and the report."""
    from autograder.batch import merge_manual as merge

    the_week, folder = _locate(week, course, out_dir)
    try:
        stored, unmarked, outputs = merge(the_week, sheet, out_dir=folder, worksheet=worksheet,
                                          allow_pending=allow_pending)
    except AutograderError as exc:
        _fail(exc)
    err.print(f"{stored} mark(s) stored; {unmarked} row(s) still unmarked" if unmarked else
              f"{stored} mark(s) stored; every row is marked")
    _print_outputs(outputs)


import_app = typer.Typer(
    no_args_is_help=True, help="Turn an nbgrader or otter-grader notebook into a week of this course."
)
export_app = typer.Typer(
    no_args_is_help=True, help="Write a week as an nbgrader course or an otter-assign master notebook."
)
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")
ImportWeek = Annotated[str, typer.Option("--week", help="the week to create, e.g. week07")]
ExportOut = Annotated[Path, typer.Option("--out", help="the folder to write")]


def _import_root(course: Path | None) -> Path:
    """Where imported weeks go: the course, or the given (possibly new) folder."""
    try:
        return Course.locate(course).root
    except AutograderError:
        return Path(course or ".").resolve()


def _write(convert: Callable[..., Path], *args: object, **kwargs: object) -> None:
    """Run one import or export and say where it wrote."""
    try:
        written = convert(*args, **kwargs)
    except AutograderError as exc:
        _fail(exc)
    err.print(f"wrote {written}", highlight=False)


def _write_import(convert: Callable[..., Path], tool: str, *args: object, **kwargs: object) -> None:
    """Run one import and name every file it wrote, then the step that makes the student notebook."""
    from autograder.interop.week_writer import written_files

    try:
        notebook = convert(*args, **kwargs)
    except AutograderError as exc:
        _fail(exc)
    for path in written_files(notebook, tool):
        err.print(f"wrote {path}", highlight=False)
    err.print(f"next: `autograder generate {notebook.stem} --course {notebook.parents[2]}` writes the student "
              "and solution notebooks", highlight=False)


@import_app.command("nbgrader")
def import_nbgrader(notebook: Annotated[Path, typer.Argument(help="an nbgrader source notebook")],
                    week: ImportWeek, course: CourseOption = None) -> None:
    """nbgrader solution markers, points and (hidden) test cells -> source/WEEK and its hidden tests."""
    from autograder.course import normalise_week_name
    from autograder.interop import import_nbgrader as convert

    _write_import(convert, "nbgrader", notebook, week=normalise_week_name(week), out_root=_import_root(course))


@import_app.command("otter")
def import_otter(notebook: Annotated[Path, typer.Argument(help="an otter-assign master notebook")],
                 week: ImportWeek, course: CourseOption = None) -> None:
    """otter-assign questions, solutions and tests -> source/WEEK and its hidden tests."""
    from autograder.course import normalise_week_name
    from autograder.interop import import_otter as convert

    _write_import(convert, "otter", notebook, week=normalise_week_name(week), out_root=_import_root(course))


@export_app.command("nbgrader")
def export_nbgrader(week: WeekArg, out_dir: ExportOut, course: CourseOption = None) -> None:
    """An nbgrader course folder that `nbgrader generate_assignment` and `autograde` accept."""
    from autograder.interop import export_nbgrader as convert

    _write(convert, _locate(week, course, None)[0], out_dir)


@export_app.command("otter")
def export_otter(week: WeekArg, out_dir: ExportOut, course: CourseOption = None) -> None:
    """An otter-assign master notebook that `otter assign` accepts."""
    from autograder.interop import export_otter as convert

    _write(convert, _locate(week, course, None)[0], out_dir)


@app.command()
def version() -> None:
    """Print the grader version."""
    out.print(grader_version())


@app.callback()
def _setup() -> None:
    """Warnings and logs go to stderr, so stdout stays clean for tables and JSON."""
    import logging

    from rich.logging import RichHandler

    logging.basicConfig(
        level=logging.WARNING, format="%(message)s", handlers=[RichHandler(console=err, show_path=False)]
    )


def main() -> None:
    """The ``autograder`` console script."""
    app()
