"""The instructor's report: ``report.html`` with plots, a table of every submission, and
``feedback/<key>.html`` beside it for each one (the pages students get).

Its body (``report_body``: summary, plots, the table with its filters, the hidden tests) is
also the service's live report, ``/instructor/WEEK``: one renderer, two pages around it.

Plots are embedded as base64 PNG so the report is one file that can be mailed or moved
together with its ``feedback/`` folder.
"""

from __future__ import annotations

import base64
import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from gettext import NullTranslations
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup

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


def task_columns(results: Sequence[SubmissionResult], titles: Mapping[int, str] | None = None) -> list[TaskColumn]:
    """One column per task seen in the batch, titled from ``titles`` (the week's, in the
    report's language), else from the first result that has it (in its student's language)."""
    seen: dict[int, TaskColumn] = {}
    for result in results:
        for task in result.tasks:
            seen.setdefault(task.task, TaskColumn(task.task, (titles or {}).get(task.task, task.title), task.max_score))
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


@dataclass(frozen=True)
class Row:
    """One student's row of the report's table, in both reports: the batch's (a row per
    submission) and the service's live page (a row per student, their counted attempt's result).

    ``result`` is None while the student has no result yet (a hand-in queued, being graded or
    failed): ``state`` then says which (the row's status for the filter, its badge's class) and
    ``state_name`` in words the body translates. ``extra`` are the numbers of the body's
    ``extra_columns``, in their order (the live page's attempts and counted score)."""

    name: str
    link: str
    note: str
    note_title: str = ""
    result: SubmissionResult | None = None
    state: str = ""
    state_name: str = ""
    message: str = ""
    extra: tuple[float | None, ...] = ()


class _Drawn:
    """The plots last drawn, by what they were drawn from: the live page is fetched again every
    15 seconds, and drawing three matplotlib figures of 300 results takes far longer than
    reading them, so a page whose results and language have not changed reuses its pictures."""

    KEPT = 8  # pages of different weeks or languages open at once

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the kept pictures
        self._drawing = threading.Lock()  # one drawing at a time: plots._with_fonts sets matplotlib's
        # settings for the whole process (rc_context), which two threads drawing at once would mix up
        self._images: OrderedDict[str, list[tuple[Plot, str, plots.PlotTable]]] = OrderedDict()

    def images(self, results: Sequence[SubmissionResult], language: str,
               active: NullTranslations | None) -> list[tuple[Plot, str, plots.PlotTable]]:
        """Each plot as a data URI with its numbers as a table, in ``active``'s language."""
        # pickled, 300 results take 2 ms (their JSON 60 ms); equal results pickle alike, and
        # different ones never do, so a miss at worst draws again what it had
        key = language + ":" + hashlib.sha256(pickle.dumps(list(results))).hexdigest()
        if (kept := self._kept(key)) is not None:
            return kept
        with self._drawing:
            if (kept := self._kept(key)) is not None:  # drawn by the page that held the lock
                return kept
            with speaking(active):  # the plots' labels, in the instructor's language
                drawn = [(plot, "data:image/png;base64," + base64.b64encode(plot.draw(results)).decode("ascii"),
                          plot.table(results)) for plot in PLOTS]
            with self._lock:
                self._images[key] = drawn
                while len(self._images) > self.KEPT:
                    self._images.popitem(last=False)
        return drawn

    def _kept(self, key: str) -> list[tuple[Plot, str, plots.PlotTable]] | None:
        with self._lock:
            if key in self._images:
                self._images.move_to_end(key)
                return self._images[key]
        return None


_drawn = _Drawn()


def report_body(rows: Sequence[Row], *, language: str, active: NullTranslations | None, lang: str | None = None,
                extra_columns: Sequence[str] = (), week: Week | None = None) -> Markup:
    """The report's body: summary cards, the plots, the table of ``rows`` (sorted by name, with
    a column per task, filters and search; marks still to give shown as pending), and the
    hidden tests' pass rates. The one renderer of both reports: ``write_report``'s page puts
    it between its heading and the batch's own sections, the service's live page
    (``/instructor/WEEK``) between its links and its score posts.

    ``active`` translates it (``language`` names it, for the plots drawn once per language);
    ``lang`` writes its numbers in that language's form (the service's pages; None: as the
    batch's files write them). ``extra_columns`` are headings (marked with ``N_``) of columns
    after the score, each row's ``extra`` their numbers. Given the ``week`` (and ``active``
    holding its catalog), the task columns are titled as its notebook in ``language`` titles
    them, not in the language of whichever student's result came first. The page that shows
    the body includes ``report.js`` (``report_script``) after it for the sorting and the filters."""
    results = [row.result for row in rows if row.result is not None]
    waiting: dict[str, tuple[str, int]] = {}
    for row in rows:
        if row.result is None:
            words, count = waiting.get(row.state, (row.state_name, 0))
            waiting[row.state] = (words, count + 1)
    ordered = sorted(rows, key=lambda row: (row.name.casefold(), row.name, row.link))
    values = {"lang": lang} if lang is not None else {}
    return Markup(environment().get_template("report_body.html.j2").render(
        _=active.gettext if active is not None else untranslated,
        rows=ordered,
        summary=summarize(results),
        waiting=waiting,
        breakdown=test_breakdown(results),
        columns=task_columns(results, None if week is None else {
            task.number: active.gettext(task.title) if active is not None else task.title
            for task in week.tasks if task.title}),
        extra_columns=list(extra_columns),
        images=_drawn.images(results, language, active),
        **values,
    ))


def report_style() -> Markup:
    """The report's style sheet, for a page that shows ``report_body`` (the batch's page has it inline)."""
    return Markup(environment().get_template("style.css").render())


def report_script() -> Markup:
    """The table's sorting and filters, for a page that shows ``report_body``."""
    return Markup(environment().get_template("report.js").render())


def write_report(results: Sequence[SubmissionResult], out_dir: Path, *, week_title: str,
                 similar: Sequence[Pair] = (), week: Week | None = None) -> Path:
    """Write ``out_dir/report.html`` and ``out_dir/feedback/<key>.html``; returns the report's path.

    The page works without a server: the body (``report_body``: a sortable, filterable table,
    plain inline script, and per-test pass rates with the commonest failure messages), the
    slowest submissions by name, and ``similar`` pairs of submissions with both listings side
    by side. Each feedback page is in its student's language (given the ``week``, its title
    too); the report itself is in the instructor's (``course.toml``)."""
    _check_keys(results)
    feedback_dir = Path(out_dir) / FEEDBACK_DIR
    feedback_dir.mkdir(parents=True, exist_ok=True)
    for result in results:
        write_text(feedback_dir / f"{result.key}.html", render_feedback(result, week_title=week_title, week=week))

    language = week.languages.instructor if week is not None else FRAMEWORK_SOURCE_LANGUAGE
    active = translations(week, language) if week is not None else framework_translations(language)
    if week is not None and active is not None:
        week_title = week.label(active)
    names = {r.key: display_name(r) for r in results}
    rows = [Row(name=names[r.key], link=f"{FEEDBACK_DIR}/{quote(r.key, safe='')}.html", note=r.key,
                note_title=r.submission, result=r) for r in results]
    html = environment().get_template("report.html.j2").render(
        week_title=week_title,
        language=language,
        _=active.gettext if active is not None else untranslated,
        results=results,
        summary=summarize(results),
        body=report_body(rows, language=language, active=active, week=week),
        slowest=sorted((r for r in results if r.duration_s > 0), key=lambda r: -r.duration_s)[:SLOWEST_SHOWN],
        names=names,
        similar=list(similar),
        feedback_dir=FEEDBACK_DIR,
        grader_versions=sorted({r.grader_version for r in results if r.grader_version}),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    report = Path(out_dir) / REPORT_NAME
    write_text(report, html)
    return report
