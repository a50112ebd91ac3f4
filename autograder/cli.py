"""The ``autograder`` command: a thin layer over the keyword-only Python API.

stdout carries only what was asked for (a table, or with ``--json`` one JSON array);
progress, warnings and logs go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from autograder.course import Course
from autograder.exceptions import AutograderError, CourseError
from autograder.formats.points import format_points
from autograder.results_folders import audit_page, moodle_results

if TYPE_CHECKING:
    from autograder.course import Week
    from autograder.moodle_ws.sync import SyncReport
    from autograder.publish import Outputs
    from autograder.results import SubmissionResult


class _Commands(TyperGroup):
    """The ``autograder`` command group: an AutograderError from any command (a nested
    group's too) is one line on stderr and exit code 2, never a traceback. Its message says
    what is wrong and what to do; the commands themselves handle only what they answer
    otherwise."""

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer's own copy of click, whose module is private)
        try:
            return super().invoke(ctx)
        except AutograderError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True,
                  help="Generate, grade and return machine-learning notebook assignments.")
out = Console()
err = Console(stderr=True)

CourseOption = Annotated[Path | None, typer.Option("--course", help="the course folder (holds source/); "
                                                      "default: found from the working directory")]


WeekArg = Annotated[str, typer.Argument(help="the week, e.g. week01")]
OutOption = Annotated[Path | None, typer.Option("--out", help=(
    "the results folder (default: the one beside the sheet holding the graded batch, else results/WEEK or "
    "results/WEEK-notebooks, whichever holds one)"))]
GradeOutOption = Annotated[Path | None, typer.Option("--out", help=(
    "the results folder (default: results/WEEK in the course for a Moodle export, "
    "results/WEEK-notebooks for loose notebooks, so the two never mix)"))]
AllowPendingOption = Annotated[bool, typer.Option(
    "--allow-pending", help="fill Moodle grades even while tasks graded by hand are not marked yet")]
WorksheetOption = Annotated[Path | None, typer.Option(
    "--worksheet", help="the grading worksheet downloaded from Moodle, to fill")]


def _locate(week: str, course: Path | None) -> Week:
    """The week asked for, in the course given or found."""
    return Course.locate(course).week(week)


@app.command()
def generate(
    weeks: Annotated[list[str] | None, typer.Argument(help="weeks to generate (default: all)")] = None,
    check: Annotated[bool, typer.Option("--check", help="write nothing; exit 1 if committed files differ")] = False,
    course: CourseOption = None,
) -> None:
    """Write assignments/WEEK (student notebook) and solutions/WEEK from source/WEEK."""
    from autograder.course import normalise_week_name
    from autograder.generate.week import generate_course

    found = Course.locate(course)
    names = (weeks and [normalise_week_name(w) for w in weeks]) or found.week_names()
    differences = generate_course(found, weeks=names, check=True)  # every refusal before the control's grading
    if check and differences:
        for difference in differences:
            err.print(str(difference), highlight=False)
        err.print(f"[red]{len(differences)} generated file(s) out of date:[/] run `autograder generate`")
        raise typer.Exit(1)
    _negative_control([found.week(name) for name in names], planned=not check)
    if not check:
        differences = generate_course(found, weeks=names)
        for difference in differences:
            out.print(difference.done(), highlight=False)
    changed = {d.path.parts[1] for d in differences}
    for name in names:
        if name not in changed:
            err.print(f"{name}: up to date", highlight=False)


def _negative_control(weeks: list[Week], *, planned: bool) -> None:
    """Refuse the weeks whose hidden tests give a point to their student notebook, untouched or
    with its answers emptied (``grading.negative_control``): the notebook as generation plans
    it (``planned``: before anything is written), else as written (checked up to date)."""
    from autograder.generate.week import plan_week
    from autograder.grading.negative_control import refuse

    refuse([(week, plan_week(week).files[week.assignment_notebook] if planned
             else week.assignment_notebook.read_bytes()) for week in weeks])


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
    from autograder.batch import GradingOptions, run_batch
    from autograder.formats.result_json import encode_all

    the_week = _locate(week, course)
    _say_sandbox_layers()
    with Progress(TextColumn("grading {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        bar = progress.add_task(the_week.name, total=None)
        outcome = run_batch(the_week, paths, GradingOptions(
            out_dir=out_dir, worksheet=worksheet, regrade=regrade, allow_pending=allow_pending,
            jobs=jobs, scheduler=scheduler,
            on_start=lambda n: progress.update(bar, total=n), on_result=lambda _: progress.advance(bar),
        ))
    if as_json:
        sys.stdout.write(encode_all(outcome.results))
    else:
        _print_table(the_week, outcome.results)
    _print_outputs(outcome.outputs, reused=outcome.reused)


def _say_sandbox_layers() -> None:
    """Which sandbox layers this machine has, on stderr before anything is graded: a layer
    missing here (a cgroup v2 host without delegation) is seen at start, not in a log later."""
    from autograder.execution.sandbox import describe_layers, layer_states

    err.print(describe_layers(layer_states()), highlight=False, soft_wrap=True)


def _print_table(week: Week, results: list[SubmissionResult]) -> None:
    table = Table(title=week.label())
    for column in ("submission", "status", "score", *[f"task {t.number}" + (" (hand)" if t.manual else "")
                                                      for t in week.tasks]):
        table.add_column(column, overflow="fold")
    for r in results:
        who = (r.participant.full_name or r.participant.group_name) if r.participant else None
        pending = f" ({format_points(r.pending_points)} pending)" if r.pending_points else ""
        score = f"{format_points(r.score)} / {format_points(r.max_score)}{pending}"
        table.add_row(escape(who or r.key), r.status.value, score,  # "[red]": text
                      *[(f"stale mark/{format_points(t.max_score)}" if t.stale else
                         f"pending/{format_points(t.max_score)}") if t.pending else
                        f"{format_points(t.score)}/{format_points(t.max_score)}" + (" n/a" if t.not_attempted else "")
                        for t in r.tasks])
    out.print(table)


def _print_outputs(outputs: Outputs, *, reused: int = 0) -> None:
    """Where things went, on stderr (stdout may be carrying JSON)."""
    if reused:
        err.print(f"{reused} unchanged submission(s) taken from the gradebook (--regrade to grade them again)")
    for label, path in (("report", outputs.report), ("worksheet for Moodle", outputs.worksheet),
                        ("feedback files for Moodle", outputs.feedback_zip), ("gradebook", outputs.gradebook),
                        ("marking sheet", outputs.manual_sheet)):
        if path is not None:
            err.print(f"{label}: {escape(str(path))}", highlight=False)
    for key, why in sorted(outputs.skipped.items()):
        err.print(f"[yellow]left out[/] {escape(key)}: {escape(why)}", highlight=False)


# not AUTOGRADER_DATABASE: a shell that exports it for `serve` must not turn a batch's report into the service's
DatabaseOption = Annotated[str | None, typer.Option(
    "--database", help="the gradebook in this database instead of the folder's gradebook.sqlite: a grading "
    "service's (serve --database), e.g. postgresql+psycopg://user@host/name; the outputs still go to the folder")]


def _database_url(database: str | None) -> str | None:
    if database is not None and "://" not in database:
        raise AutograderError(f"--database {database!r} is not a database URL: write postgresql+psycopg://user@host/"
                              "name (or sqlite:///path), or leave it out for the folder's gradebook.sqlite")
    return database


ResultsFolder = Annotated[Path, typer.Argument(help="a results folder written by `autograder grade`")]
FolderWeekOption = Annotated[str | None, typer.Option("--week", help="the week, when the folder holds several")]


def _folder_week(out_dir: Path, week: str | None, database: str | None) -> str:
    """The week asked for, or the one week the folder's gradebook (or ``database``) holds."""
    if week is None:
        from autograder.batch import weeks_in

        found = weeks_in(out_dir, database=database)
        if len(found) != 1:
            where = "the database" if database else out_dir
            raise AutograderError(f"{where} holds results of {found or 'no week'}: choose one with --week")
        week = found[0]
    return week


@app.command()
def report(
    out_dir: ResultsFolder,
    week: FolderWeekOption = None,
    worksheet: WorksheetOption = None,
    allow_pending: AllowPendingOption = False,
    database: DatabaseOption = None,
    course: CourseOption = None,
) -> None:
    """Rewrite the report, feedback pages, worksheet and feedback zip from a results folder."""
    from autograder.batch import load_results, write_outputs

    database = _database_url(database)
    the_week = _locate(_folder_week(out_dir, week, database), course)
    results = load_results(out_dir, the_week, database=database)
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = write_outputs(the_week, results, out_dir, worksheet=worksheet, allow_pending=allow_pending)
    _print_outputs(outputs)


@app.command()
def override(
    out_dir: ResultsFolder,
    key: Annotated[str, typer.Argument(help="the submission's key (its row of the report, its <key>.json)")],
    task: Annotated[int, typer.Argument(help="the number of the autograded task")],
    points: Annotated[float | None, typer.Argument(help="the points the task counts instead of the checks'")] = None,
    reason: Annotated[str, typer.Option("--reason", help="why, for the student: their feedback page shows it")] = "",
    remove: Annotated[bool, typer.Option("--remove", help="take the task's override back instead")] = False,
    by: Annotated[str | None, typer.Option("--by", help="who overrides, kept in the gradebook (default: your "
                                                       "login name)")] = None,
    week: FolderWeekOption = None,
    database: DatabaseOption = None,
) -> None:
    """Override the points the checks gave one task of one submission, with a reason the
    student reads (or take the override back with --remove). It is kept in the gradebook
    and survives a regrade; `autograder report` then writes every output with it."""
    import getpass

    from autograder.gradebook import FILENAME, Gradebook

    database = _database_url(database)
    week = _folder_week(out_dir, week, database)
    if remove == (points is not None):
        raise AutograderError("give the task's new POINTS and --reason, or --remove to take its override back")
    with Gradebook.open(database or out_dir / FILENAME) as book:
        if points is None:
            book.remove_override(week, key, task)
            err.print(f"task {task} of {key}: override removed, the checks' points count again")
        else:
            given = book.set_override(week, key, task, points=points, reason=reason, by=by or getpass.getuser())
            err.print(f"task {task} of {key}: {format_points(given.points)} points, by {given.by}")
    err.print(f"write the outputs again with: autograder report {out_dir}" + (f" --database {database}"
                                                                              if database else ""))


@app.command("merge-manual")
def merge_manual(
    week: WeekArg,
    sheet: Annotated[Path, typer.Argument(help="the filled marking sheet (manual-marking.csv)")],
    out_dir: OutOption = None,
    worksheet: WorksheetOption = None,
    allow_pending: AllowPendingOption = False,
    database: DatabaseOption = None,
    course: CourseOption = None,
) -> None:
    """Fold marks given by hand into the totals, the worksheet, the feedback and the report
    (default folder: the graded batch the sheet belongs to; with --database, the sheet's folder)."""
    from autograder.batch import marked_batch_dir
    from autograder.batch import merge_manual as merge

    database = _database_url(database)
    the_week = _locate(week, course)
    folder = out_dir or (sheet.resolve().parent if database else marked_batch_dir(the_week, sheet))
    stored, unmarked, outputs = merge(the_week, sheet, out_dir=folder, worksheet=worksheet,
                                      allow_pending=allow_pending, database=database)
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
    err.print(f"wrote {convert(*args, **kwargs)}", highlight=False)


def _import_week(tool: str, notebook: Path, week: str, course: Path | None, language: str | None) -> None:
    """Run one import: name every file it wrote and everything the instructor must know;
    point at `generate` only when generating the week works in the course as it is."""
    from autograder.course import WEEK_PATTERN, normalise_week_name
    from autograder.generate.week import plan_week
    from autograder.interop import import_nbgrader, import_otter
    from autograder.interop.week_writer import written_files

    try:
        name = normalise_week_name(week)
    except AutograderError:
        name = ""
    if not WEEK_PATTERN.match(name):
        raise CourseError(f"--week {week!r} is not a week name: write weekNN with two digits, "
                          "week01 to week99, such as week07 or week16 (or just 7)")
    convert = import_nbgrader if tool == "nbgrader" else import_otter
    done = convert(notebook, week=name, out_root=_import_root(course), language=language)
    for path in written_files(done.notebook, tool):
        err.print(f"wrote {path}", highlight=False)
    for note in done.notes:
        err.print(escape(str(note)), highlight=False)
    root = done.notebook.parents[2]
    try:
        plan_week(Course.locate(root).week(name))
    except AutograderError as exc:
        err.print(f"`autograder generate {name}` refuses the week in this course as it is:", highlight=False)
        err.print(escape(str(exc)), highlight=False)
        return
    err.print(f"next: `autograder generate {name} --course {root}` writes the student and solution notebooks",
              highlight=False)


ImportLanguage = Annotated[str | None, typer.Option(
    "--language", help="the language the notebook is written in (default: its metadata, else the course's source)")]


@import_app.command("nbgrader")
def import_nbgrader(notebook: Annotated[Path, typer.Argument(help="an nbgrader source notebook")],
                    week: ImportWeek, course: CourseOption = None, language: ImportLanguage = None) -> None:
    """nbgrader solution markers, points and (hidden) test cells -> source/WEEK and its hidden tests."""
    _import_week("nbgrader", notebook, week, course, language)


@import_app.command("otter")
def import_otter(notebook: Annotated[Path, typer.Argument(help="an otter-assign master notebook")],
                 week: ImportWeek, course: CourseOption = None, language: ImportLanguage = None) -> None:
    """otter-assign questions, solutions and tests -> source/WEEK and its hidden tests."""
    _import_week("otter", notebook, week, course, language)


@export_app.command("nbgrader")
def export_nbgrader(week: WeekArg, out_dir: ExportOut, course: CourseOption = None) -> None:
    """An nbgrader course folder that `nbgrader generate_assignment` and `autograde` accept."""
    from autograder.interop import export_nbgrader as convert

    _write(convert, _locate(week, course), out_dir)


@export_app.command("otter")
def export_otter(week: WeekArg, out_dir: ExportOut, course: CourseOption = None) -> None:
    """An otter-assign master notebook that `otter assign` accepts."""
    from autograder.interop import export_otter as convert

    _write(convert, _locate(week, course), out_dir)


moodle_app = typer.Typer(
    no_args_is_help=True, help="Grade Moodle Assignments where they are, over Moodle's web services.")
app.add_typer(moodle_app, name="moodle")


@moodle_app.command("sync")
def moodle_sync(
    week: WeekArg,
    url: Annotated[str, typer.Option("--url", help="the Moodle site, e.g. https://moodle.example.edu")],
    assignment: Annotated[int, typer.Option("--assignment", help="the assignment's id (mod_assign instance)")],
    watch: Annotated[float | None, typer.Option(
        "--watch", min=10, help="sync again every SECONDS until stopped")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="grade, but push nothing: show what would be pushed")] = False,
    token_file: Annotated[Path | None, typer.Option("--token-file", help=(
        "a file holding the token, readable only by you (default: the MOODLE_TOKEN environment variable)"))] = None,
    allow_pending: AllowPendingOption = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", min=0, help="submissions graded at once (0, the default: the number of cores)")] = 0,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="a Dask scheduler address, tcp://HOST:PORT")] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="the results folder (default: results/WEEK-moodle-ID in the course)")] = None,
    course: CourseOption = None,
) -> None:
    """Pull new hand-ins from a Moodle Assignment, grade them, push grades and feedback back."""
    from autograder.batch import GradingOptions
    from autograder.moodle_ws.sync import read_token, sync
    from autograder.moodle_ws.sync import watch as keep_watching
    from autograder.moodle_ws.sync_report import print_report
    from autograder.moodle_ws.webservice import MoodleClient

    the_week = _locate(week, course)
    folder = out_dir or moodle_results(the_week, assignment)
    client = MoodleClient(url, read_token(token_file), token_source=str(token_file) if token_file else
                          "MOODLE_TOKEN (or a file only you can read, passed as --token-file)")

    def once() -> SyncReport:
        with Progress(TextColumn("grading {task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True) as progress:
            bar = progress.add_task(the_week.name, total=None)
            options = GradingOptions(out_dir=folder, allow_pending=allow_pending, jobs=jobs, scheduler=scheduler,
                                     on_start=lambda n: progress.update(bar, total=n),
                                     on_result=lambda _: progress.advance(bar))
            return sync(the_week, client, assignment, options, dry_run=dry_run)

    with client:
        try:
            if watch is None:
                report = once()
                print_report(report, out=out, err=err)
                raise typer.Exit(0 if report.complete else 1)
            keep_watching(once, every_s=watch, on_report=lambda r: print_report(r, out=out, err=err),
                          on_error=lambda e: err.print(f"[yellow]{escape(str(e))}[/]", highlight=False))
        except KeyboardInterrupt:
            err.print("stopped")


@app.command()
def serve(
    public_url: Annotated[str, typer.Option("--public-url", help="the https URL the LMS and browsers reach "
                                            "(the TLS proxy's), e.g. https://grader.example.edu")],
    data: Annotated[Path | None, typer.Option("--data", help="the service's data folder: keys, registrations, "
                                                 "attempts, uploads (default: service-data in the course)")] = None,
    host: Annotated[str, typer.Option("--host", help="address to listen on (the proxy forwards to it)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8000,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="warm graders on this machine")] = 1,
    scheduler: Annotated[str | None, typer.Option("--scheduler",
                                                  help="a Dask scheduler address, tcp://HOST:PORT")] = None,
    upload_limit_mib: Annotated[float, typer.Option("--upload-limit", help="largest notebook accepted, MiB")] = 5.0,
    rotate_key: Annotated[bool, typer.Option("--rotate-key", help="make a new signing key (the old one stays "
                                             "published) and exit")] = False,
    registration_url: Annotated[bool, typer.Option("--registration-url", help="print a new one-time registration "
                                                   "URL for an LMS admin (good for one registration within a "
                                                   "day) and exit")] = False,
    max_connections: Annotated[int | None, typer.Option("--max-connections", min=1, help="connections open at once "
                                                        "(default 400); one more is closed at once (docs/LMS.md)")
                               ] = None,
    tls_cert: Annotated[Path | None, typer.Option("--tls-cert", help="serve https directly with this "
                                                  "certificate (PEM), without a TLS proxy")] = None,
    tls_key: Annotated[Path | None, typer.Option("--tls-key", help="the certificate's private key (PEM)")] = None,
    database: Annotated[str | None, typer.Option(
        "--database", envvar="AUTOGRADER_DATABASE", help="one database for attempts, the queue, score posts and "
        "logins, which several serve processes can share: postgresql+psycopg://user@host/name (default: SQLite "
        "files in the data folder; docs/LMS.md, \"Running several replicas\")")] = None,
    claim_ttl: Annotated[float | None, typer.Option(
        "--claim-ttl", envvar="AUTOGRADER_CLAIM_TTL", min=3.0, help="seconds after which a dead replica's claims "
        "(an attempt being graded, a score being sent, a scheduled sync's run) go to another replica (default 30); "
        "every replica on one database must use the same value (docs/LMS.md)")] = None,
    log_format: Annotated[str, typer.Option(
        "--log-format", envvar="AUTOGRADER_LOG_FORMAT", help="the log on stderr, one line per event: json (JSON "
        "lines), logfmt, or text (docs/LMS.md, \"Logs\")")] = "text",
    course: CourseOption = None,
) -> None:
    """Run the grading service that an LMS launches over LTI 1.3 (docs/LMS.md)."""
    from autograder.service.app import run_service
    from autograder.service.claims import CLAIM_TTL_S
    from autograder.service.edge import EdgeLimits
    from autograder.service.events import FORMATS, configure, event
    from autograder.service.keys import ToolKeys
    from autograder.service.settings import Settings
    from autograder.service.tool import Tool

    found = Course.locate(course)
    if database is not None and "://" not in database:
        raise AutograderError(f"--database {database!r} is not a database URL: write postgresql+psycopg://user@host/"
                              "name (or sqlite:///path), or leave it out for the SQLite files in the data folder")
    settings = Settings(public_url=public_url, data=data or found.root / "service-data", database=database,
                        claim_ttl_s=CLAIM_TTL_S if claim_ttl is None else claim_ttl,
                        upload_limit_bytes=int(upload_limit_mib * 2**20),
                        edge=EdgeLimits(**({} if max_connections is None else
                                            {"max_connections": max_connections})))
    if rotate_key:
        out.print(f"new signing key: {ToolKeys(settings.data / 'keys').rotate()}")
        return
    if registration_url:
        out.print(Tool(settings).new_registration_url(), highlight=False, soft_wrap=True)
        return
    if (tls_cert is None) != (tls_key is None):
        raise AutograderError("--tls-cert and --tls-key go together: give both, or neither and a TLS proxy")
    if log_format not in FORMATS:
        raise AutograderError(f"--log-format {log_format!r}: choose one of {', '.join(FORMATS)}")
    configure(log_format)
    if log_format == "text":
        _say_sandbox_layers()
    else:  # every line of the log one record for the collector
        from autograder.execution.sandbox import describe_layers, layer_states

        event("sandbox", message=describe_layers(layer_states()))
    # no registration URL here: one printed at every start of every replica would sit in the logs,
    # a day's licence for anyone who reads them to register an LMS (`serve --registration-url`)
    run_service(settings, found, host=host, port=port, jobs=jobs, scheduler=scheduler,
                tls=(tls_cert, tls_key) if tls_cert and tls_key else None)


@app.command("lti-platform")
def lti_platform(
    issuer: Annotated[str, typer.Argument(help="the platform's issuer (Moodle: its wwwroot)")],
    client_id: Annotated[str, typer.Argument(help="the client id the platform gave the tool")],
    deployment_id: Annotated[str, typer.Argument(help="the deployment id (Moodle: the tool's type id)")],
    auth_url: Annotated[str, typer.Option("--auth", help="authentication request URL (Moodle: /mod/lti/auth.php)")],
    token_url: Annotated[str, typer.Option("--token", help="access token URL (Moodle: /mod/lti/token.php)")],
    jwks_url: Annotated[str, typer.Option("--jwks", help="public keyset URL (Moodle: /mod/lti/certs.php)")],
    data: Annotated[Path | None, typer.Option("--data", help="the service's data folder")] = None,
    database: Annotated[str | None, typer.Option(
        "--database", envvar="AUTOGRADER_DATABASE", help="the service's database, as serve --database names it "
        "(default: lti.sqlite in the data folder)")] = None,
    course: CourseOption = None,
) -> None:
    """Add a platform registered by hand (dynamic registration does this by itself)."""
    from autograder.service.lti import LoginStates, Platform, Platforms

    folder = data or Course.locate(course).root / "service-data"
    if database is not None and "://" not in database:
        raise AutograderError(f"--database {database!r} is not a database URL: write the one serve --database "
                              "names (postgresql+psycopg://user@host/name), or leave it out for the data folder's")
    states = LoginStates(database or folder / "lti.sqlite")  # the registrations live beside the login states
    try:
        platforms = Platforms(states.database)
        platforms.import_file(folder / "platforms.json")
        platforms.add(Platform(issuer=issuer, client_id=client_id, auth_login_url=auth_url, token_url=token_url,
                               jwks_url=jwks_url, deployment_ids=(deployment_id,)))
    finally:
        states.close()
    out.print(f"registered {issuer} (client {client_id}, deployment {deployment_id})", highlight=False)


@app.command()
def audit(
    week: WeekArg,
    jobs: Annotated[int, typer.Option(
        "--jobs", min=0, help="mutants graded at once (0, the default: the number of cores)")] = 0,
    budget: Annotated[float, typer.Option(
        "--budget", min=1, help="seconds of grading; mutants past it are skipped and counted")] = 95.0,
    seed: Annotated[int, typer.Option(
        "--seed", help="the hidden tests' seed and the mutants' order (printed, for reproducing)")] = 11,
    html: Annotated[Path | None, typer.Option(
        "--html", help="the HTML page (default: results/audit/WEEK.html in the course)")] = None,
    course: CourseOption = None,
) -> None:
    """Mutate the reference solution and grade every mutant: exit 1 while a survivor is unexplained."""
    from autograder.audit.cli import run

    the_week = _locate(week, course)
    passed = run(the_week, jobs=jobs, budget_s=budget, seed=seed, html=html or audit_page(the_week), out=out,
                 err=err)
    if not passed:
        raise typer.Exit(1)


i18n_app = typer.Typer(no_args_is_help=True, help="The course's translations (gettext catalogs, Babel).")
app.add_typer(i18n_app, name="i18n")


@i18n_app.command("update")
def i18n_update(
    weeks: Annotated[list[str] | None, typer.Argument(help="weeks to extract (default: all)")] = None,
    course: CourseOption = None,
) -> None:
    """Extract the .pot templates again and merge every language's .po catalog; says which files changed."""
    from autograder.i18n.update import update_catalogs

    found = Course.locate(course)
    written = update_catalogs(found, weeks=weeks or ())
    for path in written:
        out.print(f"wrote {path.relative_to(found.root) if path.is_relative_to(found.root) else path}",
                  highlight=False)
    if not written:
        out.print("every catalog is up to date", highlight=False)


@i18n_app.command("status")
def i18n_status(
    weeks: Annotated[list[str] | None, typer.Argument(help="weeks to check (default: all)")] = None,
    course: CourseOption = None,
) -> None:
    """Per week, the languages offered and what each catalog still lacks (exit 1 while an
    offered language lacks something, which `generate` refuses)."""
    from autograder.i18n.status import catalog_status

    found = Course.locate(course)
    rows = catalog_status(found, weeks=weeks or ())
    table = Table("catalog", "language", "offered", "messages", "lacking")
    for row in rows:
        colour = "red" if row.blocks else "yellow"
        table.add_row(row.catalog, row.language, row.offer, str(row.messages),
                      f"[{colour}]{row.lacking}[/]" if row.lacking else "0")
    out.print(table)
    if any(row.blocks for row in rows):
        raise typer.Exit(1)


@app.command()
def version(course: CourseOption = None) -> None:
    """Print the grader version: the autograder's code and the course's grading libraries."""
    from autograder.provenance import grader_version

    out.print(grader_version(Course.locate(course).grading.libraries))


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
