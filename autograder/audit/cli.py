"""What ``autograder audit WEEK`` prints: a progress bar and notes on stderr, the survivors'
table and the verdict on stdout, and the HTML page."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.table import Table

from autograder.audit.mutants import mutant_notebook
from autograder.audit.report import survivor_entry, write_html
from autograder.audit.run import Audit, run_audit
from autograder.course import Week


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
        (folder / f"{outcome.mutant.name}.ipynb").write_bytes(mutant_notebook(audit.week, outcome.mutant))
    return folder


def print_audit(audit: Audit, *, out: Console, err: Console) -> None:
    """The survivors' table (with each diff), stale entries, and one summary line."""
    if audit.survivors:
        table = Table(title=f"{audit.week.name}: survivors (mutants that keep every point of their task)",
                      show_lines=True)
        for column in ("mutant", "task", "operator", "diff", "verdict"):
            table.add_column(column, overflow="fold")
        for o in audit.survivors:
            m = o.mutant
            verdict = f"[green]equivalent[/]: {escape(o.equivalent.reason)}" if o.equivalent else (
                "[bold red]unexplained[/]: strengthen a test, or add to audit.toml:\n" + escape(survivor_entry(o)))
            diff = "\n".join(line for line in m.diff.split("\n")[2:] if line.startswith(("-", "+")))
            table.add_row(m.name, str(m.task), f"{m.operator}\n{escape(m.description)}",
                          Syntax(diff, "diff", theme="ansi_light", word_wrap=True), verdict)
        out.print(table)
    for e in audit.stale:
        err.print(f"[yellow]stale[/] audit.toml entry {e.number} (task {e.task}, {e.operator}: "
                  f"{escape(e.mutant)}) matches no mutant: remove it", highlight=False)
    for e in audit.unneeded:
        err.print(f"[yellow]unneeded[/] audit.toml entry {e.number} (task {e.task}, {e.operator}: "
                  f"{escape(e.mutant)}): the tests now kill that mutant: remove it", highlight=False)
    explained = len(audit.survivors) - len(audit.unexplained)
    verdict = ("[bold green]passed[/]" if audit.passed
               else f"[bold red]failed[/]: {len(audit.unexplained)} unexplained survivor(s)")
    out.print(f"{audit.week.name}: {len(audit.generated.mutants)} mutants, {len(audit.outcomes)} graded, "
              f"{len(audit.killed)} killed, {explained} equivalent, {len(audit.skipped)} skipped (budget) "
              f"in {audit.seconds:.0f} s (seed {audit.seed}): {verdict}", highlight=False)
