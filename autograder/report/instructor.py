"""The instructor's report: ``report.html`` with plots, a table of every submission, and
``feedback/<key>.html`` beside it for each one (the pages students get).

Plots are embedded as base64 PNG so the report is one file that can be mailed or moved
together with its ``feedback/`` folder.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from autograder.course import Week
from autograder.exceptions import ReportError
from autograder.formats.atomic import write_text
from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_translations, translations
from autograder.i18n.runtime import N_, speaking, untranslated
from autograder.report import plots
from autograder.report.feedback import render_feedback
from autograder.report.similarity import Pair
from autograder.report.summary import summarize, test_breakdown
from autograder.report.templating import environment
from autograder.results import SubmissionResult

REPORT_NAME = "report.html"
FEEDBACK_DIR = "feedback"


@dataclass(frozen=True)
class Plot:
    title: str
    caption: str
    draw: Callable[[Sequence[SubmissionResult]], bytes]
    table: Callable[[Sequence[SubmissionResult]], plots.PlotTable]  # the numbers drawn, as text


# In the order the report shows them.
PLOTS = (
    Plot(N_("Score distribution"), N_("Total scores, stacked by status."), plots.score_distribution,
         plots.score_table),
    Plot(N_("Tasks"), N_("Per task: submissions with full marks, and the mean share of points."), plots.task_scores,
         plots.task_table),
    Plot(N_("Hidden tests"), N_("Share of submissions passing each hidden test, grouped by task."),
         plots.pass_rates_by_test, plots.hidden_test_table),
)
SLOWEST_SHOWN = 40  # the time chart names this many of the slowest submissions


@dataclass(frozen=True)
class TaskColumn:
    number: int
    title: str
    max_score: float


def task_columns(results: Sequence[SubmissionResult]) -> list[TaskColumn]:
    """One column per task seen in the batch, titled from the first result that has it."""
    seen: dict[int, TaskColumn] = {}
    for result in results:
        for task in result.tasks:
            seen.setdefault(task.task, TaskColumn(task.task, task.title, task.max_score))
    return [seen[n] for n in sorted(seen)]


def _check_keys(results: Sequence[SubmissionResult]) -> None:
    """Keys become file names: refuse any that would leave ``feedback/`` or collide."""
    seen: set[str] = set()
    for result in results:
        key = result.key
        if not key or key in {".", ".."} or "/" in key or "\\" in key or "\0" in key:
            raise ReportError(f"submission key {key!r} ({result.submission}) is not a safe file name")
        if key in seen:
            raise ReportError(f"two submissions share the key {key!r}: feedback pages would overwrite each other")
        seen.add(key)


def display_name(result: SubmissionResult) -> str:
    """The name the instructor knows the submission by: Moodle's full name, else its key."""
    participant = result.participant
    return (participant.full_name or participant.group_name or result.key) if participant else result.key


def write_report(results: Sequence[SubmissionResult], out_dir: Path, *, week_title: str,
                 similar: Sequence[Pair] = (), week: Week | None = None) -> Path:
    """Write ``out_dir/report.html`` and ``out_dir/feedback/<key>.html``; returns the report's path.

    The page works without a server: a sortable, filterable table (plain inline script),
    per-test pass rates with the commonest failure messages, the slowest submissions by
    name, and ``similar`` pairs of submissions with both listings side by side. Each feedback
    page is in its student's language (given the ``week``, its title too); the report itself
    is in the instructor's (``course.toml``)."""
    _check_keys(results)
    feedback_dir = Path(out_dir) / FEEDBACK_DIR
    feedback_dir.mkdir(parents=True, exist_ok=True)
    for result in results:
        write_text(feedback_dir / f"{result.key}.html", render_feedback(result, week_title=week_title, week=week))

    language = week.languages.instructor if week is not None else FRAMEWORK_SOURCE_LANGUAGE
    active = translations(week, language) if week is not None else framework_translations(language)
    if week is not None and active is not None:
        week_title = week.label(active)
    with speaking(active):  # the plots' labels, in the instructor's language
        images = [
            (plot, "data:image/png;base64," + base64.b64encode(plot.draw(results)).decode("ascii"), plot.table(results))
            for plot in PLOTS
        ]
    html = environment().get_template("report.html.j2").render(
        week_title=week_title,
        language=language,
        _=active.gettext if active is not None else untranslated,
        results=results,
        summary=summarize(results),
        breakdown=test_breakdown(results),
        slowest=sorted((r for r in results if r.duration_s > 0), key=lambda r: -r.duration_s)[:SLOWEST_SHOWN],
        names={r.key: display_name(r) for r in results},
        similar=list(similar),
        columns=task_columns(results),
        images=images,
        feedback_dir=FEEDBACK_DIR,
        grader_versions=sorted({r.grader_version for r in results if r.grader_version}),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    report = Path(out_dir) / REPORT_NAME
    write_text(report, html)
    return report
