"""The ``autograder`` command: a thin layer over the keyword-only Python API.

stdout carries only what was asked for (a table, or with ``--json`` one JSON array);
progress, warnings and logs go to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from autograder import __version__
from autograder.course import Course
from autograder.exceptions import AutograderError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Generate, grade and return machine-learning notebook assignments.")
out = Console()
err = Console(stderr=True)

CourseOption = Annotated[Optional[Path], typer.Option("--course", help="the course folder (holds source/); "
                                                      "default: found from the working directory")]


def _fail(exc: AutograderError) -> None:
    err.print(f"[bold red]error:[/] {exc}", highlight=False)
    raise typer.Exit(2)


@app.command()
def generate(
    weeks: Annotated[Optional[list[str]], typer.Argument(help="weeks to generate (default: all)")] = None,
    check: Annotated[bool, typer.Option("--check", help="write nothing; exit 1 if committed files differ")] = False,
    course: CourseOption = None,
) -> None:
    """Write assignments/WEEK (student notebook) and solutions/WEEK from source/WEEK."""
    from autograder.generate.week import generate_course

    try:
        found = Course.locate(course)
        differences = generate_course(found, weeks=weeks or (), check=check)
    except AutograderError as exc:
        _fail(exc)
    for difference in differences:
        (err if check else out).print(str(difference), highlight=False)
    if check and differences:
        err.print(f"[red]{len(differences)} generated file(s) out of date:[/] run `autograder generate`")
        raise typer.Exit(1)
    if not differences:
        err.print("generated files are up to date")


@app.command()
def grade(
    week: Annotated[str, typer.Argument(help="the week, e.g. week01")],
    paths: Annotated[list[Path], typer.Argument(help="notebooks, folders of notebooks, or Moodle exports (.zip or folder)")],
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="write DIR/<name>.json per submission")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON array on stdout, nothing else")] = False,
    course: CourseOption = None,
) -> None:
    """Grade submissions: run each notebook sandboxed, then the week's hidden tests."""
    from autograder.formats.result_json import to_dict
    from autograder.grading.grader import grade as grade_api
    from autograder.sources import collect

    try:
        the_week = Course.locate(course).week(week)
        submissions = collect(paths, week=the_week.name)
    except AutograderError as exc:
        _fail(exc)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    with Progress(TextColumn("grading {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        bar = progress.add_task(the_week.name, total=len(submissions))

        def on_result(result: object) -> None:
            if out_dir is not None:
                _write_json(out_dir / f"{result.key}.json", to_dict(result))  # type: ignore[attr-defined]
            progress.advance(bar)

        try:
            results = grade_api(the_week, submissions, on_result=on_result)
        except AutograderError as exc:
            _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps([to_dict(r) for r in results], ensure_ascii=False, indent=1) + "\n")
        return
    table = Table(title=f"{the_week.name}: {the_week.title}")
    for column in ("submission", "status", "score", *[f"task {t.number}" + (" (hand)" if t.manual else "")
                                                      for t in the_week.tasks]):
        table.add_column(column, overflow="fold")
    for r in results:
        table.add_row(r.key, r.status.value, f"{r.score:g} / {r.max_score:g}",
                      *[f"{t.score:g}/{t.max_score:g}" + (" n/a" if t.not_attempted else "") for t in r.tasks])
    out.print(table)


def _write_json(path: Path, data: dict) -> None:
    """Write atomically: a killed run never leaves half a file."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


@app.command()
def version() -> None:
    """Print the grader version."""
    out.print(__version__)


def main() -> None:
    app()
