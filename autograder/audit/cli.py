"""What ``autograder audit WEEK`` prints: a progress bar and notes on stderr, the survivors'
and the cross-task losses' tables and the verdict on stdout, and the HTML page.

The audit.toml entries to paste are printed below the tables, never inside a cell: a
table wraps its cells at the terminal's width, and a wrapped entry no longer pastes."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.table import Table

from autograder.audit.audit_toml import builds_on_text
from autograder.audit.mutants import mutant_notebook
from autograder.audit.report import survivor_entry, write_html
from autograder.audit.run import Audit, MutantOutcome, run_audit
from autograder.course import Week
from autograder.formats.atomic import write_bytes
from autograder.formats.points import format_points


def run(week: Week, *, jobs: int, budget_s: float, seed: int, html: Path, out: Console, err: Console) -> bool:
    """Audit ``week`` and print what was found; True when every survivor is explained."""
    err.print(f"{week.name}: auditing with seed {seed} (reproduce: --seed {seed}), {jobs or 'one per core'} job(s), "
              f"budget {budget_s:g} s", highlight=False)
    with Progress(TextColumn("grading mutants"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        bar = progress.add_task(week.name, total=None)
        audit = run_audit(week, jobs=jobs, budget_s=budget_s, seed=seed,
                          on_start=lambda total: progress.update(bar, total=total),
                          on_result=lambda _: progress.advance(bar))
    print_audit(audit, out=out, err=err)
    err.print(f"report: {escape(str(write_html(audit, html)))}", highlight=False)
    if audit.survivors:
        folder = write_survivors(audit, html.with_suffix(""))
        err.print(f"survivors' notebooks (replay one: pytest {week.tests_dir} --seed {seed} --submission "
                  f"NOTEBOOK): {escape(str(folder))}", highlight=False)
    return audit.passed


def write_survivors(audit: Audit, folder: Path) -> Path:
    """Each survivor as a notebook, ``folder/mutantNNN.ipynb``, so it can be graded or replayed."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("mutant*.ipynb"):
        stale.unlink()
    for outcome in audit.survivors:
        write_bytes(folder / f"{outcome.mutant.name}.ipynb", mutant_notebook(audit.week, outcome.mutant))
    return folder


def print_audit(audit: Audit, *, out: Console, err: Console) -> None:
    """The survivors' and cross-task losses' tables (with each diff), the entries to paste,
    stale and unneeded entries, and one summary line."""
    if audit.survivors:
        table = Table(title=f"{audit.week.name}: survivors (mutants that keep every point of their task)",
                      show_lines=True)
        for column in ("mutant", "task", "operator", "diff", "verdict"):
            table.add_column(column, overflow="fold")
        for o in audit.survivors:
            m = o.mutant
            verdict = f"[green]equivalent[/]: {escape(o.equivalent.reason)}" if o.equivalent else (
                f"[bold red]unexplained[/]: strengthen a test, or record it as equivalent ({m.name}'s entry below)")
            table.add_row(m.name, str(m.task), f"{m.operator}\n{escape(m.description)}", _diff(o), verdict)
        out.print(table)
        if audit.unexplained:
            out.print(f"If a survivor behaves as the reference does, paste its entry into "
                      f"source/{audit.week.name}/audit.toml and write the reason:", highlight=False)
            for o in audit.unexplained:
                _paste(out, f"# {o.mutant.name}\n{survivor_entry(o)}")
    if audit.cross_losses:
        _print_cross(audit, out)
    for e in audit.stale:
        err.print(f"[yellow]stale[/] audit.toml entry {e.number} (task {e.task}, {e.operator}: "
                  f"{escape(e.mutant)}) matches no mutant: remove it", highlight=False)
    for e in audit.unneeded:
        err.print(f"[yellow]unneeded[/] audit.toml entry {e.number} (task {e.task}, {e.operator}: "
                  f"{escape(e.mutant)}): the tests now kill that mutant: remove it", highlight=False)
    for b in audit.unused:
        err.print(f"[yellow]unneeded[/] audit.toml {escape('[[builds_on]]')} entry {b.number} "
                  f"(task {b.task} uses task {b.uses}): no mutant of task {b.uses} costs task {b.task} a point: "
                  "remove it", highlight=False)
    explained = len(audit.survivors) - len(audit.unexplained)
    declared = len(audit.cross_losses) - len(audit.undeclared)
    wrong = ([f"{len(audit.unexplained)} unexplained survivor(s)"] if audit.unexplained else []) + (
        [f"{len(audit.undeclared)} cross-task loss(es)"] if audit.undeclared else [])
    verdict = "[bold green]passed[/]" if audit.passed else f"[bold red]failed[/]: {', '.join(wrong)}"
    unblamed = f", {len(audit.unblamed)} not judged for blame (past the notebook's deadline)" if audit.unblamed else ""
    out.print(f"{audit.week.name}: {len(audit.generated.mutants)} mutants, {len(audit.outcomes)} graded, "
              f"{len(audit.killed)} killed, {explained} equivalent, {len(audit.skipped)} skipped (budget), "
              f"{len(audit.cross_losses)} cross-task loss(es) ({declared} declared){unblamed} "
              f"in {audit.seconds:.0f} s (seed {audit.seed}): {verdict}", highlight=False, soft_wrap=True)


def _print_cross(audit: Audit, out: Console) -> None:
    """One row per mutant that lost points on another task's tests: the tests, their tasks,
    and whether a ``[[builds_on]]`` entry accepts the loss; then the entries' syntax."""
    table = Table(title=f"{audit.week.name}: cross-task losses (a mutant of one task losing points on another "
                        "task's tests)", show_lines=True)
    for column in ("mutant", "task", "diff", "tests that lost points", "verdict"):
        table.add_column(column, overflow="fold")
    pairs: set[tuple[int, int]] = set()
    for o in audit.outcomes:
        if not o.cross:
            continue
        tests = "\n".join(f"{escape(c.test)} (task {c.task}, -{format_points(c.lost)})" for c in o.cross)
        verdicts = []
        for task in sorted({c.task for c in o.cross}):
            entry = next(c.declared for c in o.cross if c.task == task)
            if entry is None:
                pairs.add((task, o.mutant.task))
                verdicts.append(f"[bold red]undeclared[/]: task {task}'s tests use task {o.mutant.task}'s code")
            else:
                verdicts.append(f"[green]declared[/] (task {task} builds on task {o.mutant.task}): "
                                f"{escape(entry.reason)}")
        table.add_row(o.mutant.name, str(o.mutant.task), _diff(o), tests, "\n".join(verdicts))
    out.print(table)
    if pairs:
        out.print("Make each such test check its own task only (build what it needs from another task with the "
                  "grader's own code). Only where a task's instructions say it builds on the other, declare it in "
                  f"source/{audit.week.name}/audit.toml with that reason:", highlight=False)
        for task, uses in sorted(pairs):
            _paste(out, builds_on_text(task, uses))


def _diff(o: MutantOutcome) -> Syntax:
    diff = "\n".join(line for line in o.mutant.diff.split("\n")[2:] if line.startswith(("-", "+")))
    return Syntax(diff, "diff", theme="ansi_light", word_wrap=True)


def _paste(out: Console, entry: str) -> None:
    """An audit.toml entry as it must be pasted: never wrapped, cropped or marked up."""
    out.print(entry, markup=False, highlight=False, soft_wrap=True, emoji=False)
