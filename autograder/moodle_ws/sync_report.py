"""How a sync run is shown: what was pushed on stdout, everything else on stderr.

Apart from ``sync`` so the service can log a report its own way."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autograder.formats.points import format_points
from autograder.moodle_ws.sync import SyncReport


def print_report(report: SyncReport, *, out: Console, err: Console) -> None:
    """A table of the grades pushed (or, dry run, to push); what was left alone and why."""
    assignment = report.assignment
    if report.pushed:
        table = Table(title=f"{'would push' if report.dry_run else 'pushed'} to {assignment.name} "
                            f"(assignment {assignment.id}, out of {format_points(assignment.max_grade)})")
        for column in ("student", "grade", "feedback"):
            table.add_column(column, overflow="fold")
        for push in report.pushed:
            table.add_row(escape(push.name), push.shown(), "comment" + (" + page" if push.page is not None else ""))
        out.print(table)
    err.print(f"{len(report.fetched)} new or changed hand-in(s) downloaded, {report.graded} graded, "
              f"{len(report.pushed)} {'to push' if report.dry_run else 'pushed'}, {report.unchanged} unchanged "
              "since the last push", highlight=False)
    for name, why in sorted(report.kept.items()):
        err.print(f"[yellow]kept[/] {escape(name)}: {escape(why)}", highlight=False)
    for name, why in sorted(report.left.items()):
        err.print(f"[yellow]not pushed[/] {escape(name)}: {escape(why)}", highlight=False)
    for note in report.notes:
        err.print(f"note: {escape(note)}", highlight=False)
    if report.interrupted:
        err.print(f"[bold red]stopped early:[/] {escape(report.interrupted)}; the next run pushes what is missing",
                  highlight=False)
