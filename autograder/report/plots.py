"""The instructor report's plots, drawn with matplotlib's object API on the Agg canvas.

Each function takes the batch and returns PNG bytes; no pyplot, so no global figure
state and no display needed. A plot with nothing to show says so instead of failing.
Labels are in the active language (``autograder.i18n``: the report sets the instructor's),
drawn with a font that covers Japanese, Chinese and Korean when one is installed, so names
and labels in those scripts are not empty boxes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, wraps
from pathlib import Path

from matplotlib import font_manager, rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from autograder.formats.points import format_points
from autograder.i18n.runtime import _
from autograder.report.templating import STATUS_NAME
from autograder.results import Status, SubmissionResult

STATUS_COLOURS: dict[Status, str] = {
    Status.GRADED: "#2f9e6a",
    Status.NOT_ATTEMPTED: "#9aa5b1",
    Status.ERROR: "#d64545",
    Status.TIMEOUT: "#e8a33d",
    Status.NOT_SUBMITTED: "#cbd2d9",
    Status.WRONG_WEEK: "#8e6bbf",
}
# Tasks are told apart by hue families that mean nothing about passing: no greens or reds.
# The report's task chips (style.css, --task-N) use the same hues with white text on them:
# each is dark enough for 4.8:1 against white (WCAG AA).
TASK_COLOURS = ("#3a75a8", "#8262af", "#986820", "#4a5d7a", "#a65592", "#217c8e", "#7d6b4f", "#5f6db8")
PENDING_PALER = 0.6  # a status whose hand marking is still to come: its colour, this far towards white
# Debian's fonts-noto-cjk (installed by `make setup`); the first face of the collection is
# the Japanese one, which also covers the common Chinese and Korean characters.
CJK_FONT_FILES = (Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),)


@cache
def font_families() -> tuple[str, ...]:
    """matplotlib's default face first (Latin text looks as before), then a CJK face for the
    characters it lacks: matplotlib falls back glyph by glyph along the list. The file is
    registered by path, so a font cache built before the font was installed does not hide it."""
    families = ["DejaVu Sans"]
    for path in CJK_FONT_FILES:
        if path.is_file():
            font_manager.fontManager.addfont(str(path))
            families.append(font_manager.FontProperties(fname=str(path)).get_name())
    return tuple(families)


def _with_fonts(draw: Callable[[Sequence[SubmissionResult]], bytes]) -> Callable[[Sequence[SubmissionResult]], bytes]:
    """Draw with ``font_families`` (matplotlib reads fonts when a text is made, so the whole
    drawing runs inside the setting), and with mathtext off: labels are test names and
    translated words, where a ``$`` is a character, not the start of a formula."""
    @wraps(draw)
    def drawn(results: Sequence[SubmissionResult]) -> bytes:
        with rc_context({"font.family": list(font_families()), "text.parse_math": False}):
            return draw(results)

    return drawn
WIDTH_IN = 7.0
DPI = 110


def _figure(height_in: float = 3.6) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _nothing(ax: Axes, what: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, what, ha="center", va="center", color="#616e7c", transform=ax.transAxes)


@dataclass(frozen=True)
class ScoreGroup:
    """One stack of the score histogram: its label, colour and the scores in it."""

    label: str
    colour: str
    scores: list[float]


def score_groups(results: Sequence[SubmissionResult]) -> list[ScoreGroup]:
    """The histogram's stacks, each holding at least one score (the legend lists exactly
    what is drawn): per status present, the final scores, then apart in a paler colour
    those still waiting for hand marking, whatever the status (a not-attempted notebook's
    free-text answer is marked too), since their score is not final."""
    scored = [r for r in results if r.status is not Status.NOT_SUBMITTED]
    groups = []
    for status in Status:
        mine = [r for r in scored if r.status is status]
        final = [r.score for r in mine if not r.pending_points]
        pending = [r.score for r in mine if r.pending_points]
        name = _(STATUS_NAME[status])
        if final:
            groups.append(ScoreGroup(name, STATUS_COLOURS[status], final))
        if pending:
            groups.append(ScoreGroup(_("{status}, hand marking pending").format(status=name),
                                     _paler(STATUS_COLOURS[status]), pending))
    return groups


def _paler(colour: str) -> str:
    """``colour`` mixed ``PENDING_PALER`` of the way towards white."""
    red, green, blue = (c + PENDING_PALER * (1 - c) for c in to_rgb(colour))
    return to_hex((red, green, blue))


def _score_bins(scored: Sequence[SubmissionResult]) -> tuple[float, int]:
    """The histogram's range (0 to this) and number of bins, the plot's and its table's."""
    top = max(max(r.max_score for r in scored), max(r.score for r in scored), 1.0)
    return top, min(20, max(5, len(scored) // 2))


@_with_fonts
def score_distribution(results: Sequence[SubmissionResult]) -> bytes:
    """Histogram of total scores, stacked by status so errors and timeouts stand out, and
    scores still waiting for hand marking apart from final ones."""
    fig, ax = _figure()
    scored = [r for r in results if r.status is not Status.NOT_SUBMITTED]
    if not scored:
        _nothing(ax, _("no submissions with a score in this batch"))
        return _png(fig)
    top, bins = _score_bins(scored)
    groups = score_groups(scored)
    ax.hist(
        [g.scores for g in groups],
        bins=bins,
        range=(0, top),
        stacked=True,
        color=[g.colour for g in groups],
        label=[g.label for g in groups],
        edgecolor="white",
    )
    ax.set_xlabel(_("score (of {top})").format(top=format_points(top)))
    ax.set_ylabel(_("submissions"))
    locator = ax.yaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # the default AutoLocator is one
        locator.set_params(integer=True)
    ax.legend(frameon=False, fontsize="small")
    return _png(fig)


@dataclass(frozen=True)
class Rate:
    """How a test or task fared: ``percent`` of the ``n`` submissions it was measured on."""

    label: str
    task: int
    percent: float
    n: int


def pass_rates(results: Sequence[SubmissionResult]) -> list[Rate]:
    """Per hidden test, in task order: the share of the submissions it ran on that passed it."""
    runs: dict[str, list[bool]] = {}
    task_of: dict[str, int] = {}
    for result in results:
        for test in result.tests:
            runs.setdefault(test.name, []).append(test.passed)
            task_of[test.name] = test.task
    names = sorted(runs, key=lambda n: (task_of[n], n))
    return [Rate(n, task_of[n], 100 * sum(runs[n]) / len(runs[n]), len(runs[n])) for n in names]


def task_rates(results: Sequence[SubmissionResult]) -> list[tuple[Rate, Rate]]:
    """Per task with points: (share of submissions with full marks, mean share of points).

    Manual tasks not marked yet are left out: their 0 is not a result."""
    shares: dict[int, list[float]] = {}
    for result in results:
        for task in result.tasks:
            if task.max_score > 0 and not task.pending:
                shares.setdefault(task.task, []).append(min(task.score / task.max_score, 1.0))
    return [
        (
            Rate(_("full marks"), n, 100 * sum(s >= 1.0 for s in shares[n]) / len(shares[n]), len(shares[n])),
            Rate(_("mean points"), n, 100 * sum(shares[n]) / len(shares[n]), len(shares[n])),
        )
        for n in sorted(shares)
    ]


@_with_fonts
def pass_rates_by_test(results: Sequence[SubmissionResult]) -> bytes:
    """Horizontal bars of ``pass_rates``, coloured by task (hues that do not read as pass/fail)."""
    rates = pass_rates(results)
    fig, ax = _figure(height_in=max(2.4, 0.8 + 0.28 * len(rates)))
    if not rates:
        _nothing(ax, _("no hidden tests in this batch"))
        return _png(fig)
    colours = [TASK_COLOURS[r.task % len(TASK_COLOURS)] for r in rates]
    ax.barh(range(len(rates)), [r.percent for r in rates], color=colours)
    ax.set_yticks(range(len(rates)), [f"T{r.task}  {r.label}" for r in rates], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel(_("passed (% of submissions the test ran on)"))
    for y, rate in enumerate(rates):
        ax.text(min(rate.percent + 1, 88), y, f"{rate.percent:.0f}%  (n={rate.n})", va="center", fontsize="x-small")
    return _png(fig)


@_with_fonts
def task_scores(results: Sequence[SubmissionResult]) -> bytes:
    """Grouped bars of ``task_rates``: full marks beside mean points, per task."""
    rates = task_rates(results)
    fig, ax = _figure()
    if not rates:
        _nothing(ax, _("no tasks with points in this batch"))
        return _png(fig)
    x = range(len(rates))
    ax.bar([i - 0.2 for i in x], [full.percent for full, _mean in rates], 0.4, label=_("full marks"), color="#4a5d7a")
    ax.bar([i + 0.2 for i in x], [mean.percent for _full, mean in rates], 0.4, label=_("mean points"), color="#3e7cb1")
    ax.set_xticks(list(x), [_("Task {number}").format(number=full.task) for full, _mean in rates])
    ax.set_ylim(0, 100)
    ax.set_ylabel(_("% of submissions / of points"))
    ax.legend(frameon=False, fontsize="small")
    return _png(fig)


# ---- the plots' numbers as tables: their text alternative (WCAG 1.1.1), shown under each ----


@dataclass(frozen=True)
class PlotTable:
    """A plot's numbers, for people who cannot see the image: column headings and rows of text."""

    headers: list[str]
    rows: list[list[str]]


def score_table(results: Sequence[SubmissionResult]) -> PlotTable:
    """The score histogram's bars: per score range, how many submissions of each stack."""
    scored = [r for r in results if r.status is not Status.NOT_SUBMITTED]
    if not scored:
        return PlotTable([_("no submissions with a score in this batch")], [])
    top, bins = _score_bins(scored)
    groups = score_groups(scored)
    edges = [top * i / bins for i in range(bins + 1)]
    counts = [[sum(edges[i] <= s < edges[i + 1] or (i == bins - 1 and s == top) for s in g.scores)
               for g in groups] for i in range(bins)]
    return PlotTable([_("Score"), *[g.label for g in groups]],
                     [[f"{edges[i]:.3g}–{edges[i + 1]:.3g}", *map(str, row)] for i, row in enumerate(counts)
                      if any(row)])


def task_table(results: Sequence[SubmissionResult]) -> PlotTable:
    """The task plot's bars: per task, the share with full marks and the mean share of points."""
    return PlotTable([_("Task"), _("full marks"), _("mean points"), _("submissions")],
                     [[_("Task {number}").format(number=full.task), f"{full.percent:.0f}%", f"{mean.percent:.0f}%",
                       str(full.n)] for full, mean in task_rates(results)])


def hidden_test_table(results: Sequence[SubmissionResult]) -> PlotTable:
    """The hidden-test plot's bars: per test, its task and the share of submissions passing it."""
    return PlotTable([_("Task"), _("Test"), _("Passed"), _("submissions")],
                     [[f"T{rate.task}", rate.label, f"{rate.percent:.0f}%", str(rate.n)]
                      for rate in pass_rates(results)])
