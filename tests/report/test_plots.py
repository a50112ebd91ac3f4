"""The report's plots (autograder/report/plots.py): pass rates per test and task, the
histogram's groups (scores awaiting hand marking kept apart, a bar for every group its
legend lists), labels drawn as text, and Japanese labels drawn without missing glyphs."""

from __future__ import annotations

import warnings

import pytest
from babel.messages.catalog import Catalog

from autograder import results as r
from autograder.i18n import speaking
from autograder.i18n.catalog import CatalogTranslations
from autograder.report import plots
from autograder.report.plots import pass_rates, score_groups, task_rates
from tests.report.samples import make_result, seven_results


@pytest.fixture
def batch() -> list[r.SubmissionResult]:
    return seven_results()


def test_pass_rates_per_test_and_task(batch: list[r.SubmissionResult]) -> None:
    rates = {rate.label: (rate.task, round(rate.percent, 1), rate.n) for rate in pass_rates(batch)}
    # tests ran on the four graded/timeout submissions; test_errors passed only for 102
    assert rates == {"test_fit": (1, 100.0, 4), "test_errors": (1, 25.0, 4), "test_secret": (2, 75.0, 4)}
    per_task = {full.task: (round(full.percent, 1), round(mean.percent, 1), full.n) for full, mean in task_rates(batch)}
    # six submissions have tasks (not the not-submitted one); task 1: 102 full, 101/103/106 at 6/10
    assert per_task[1] == (round(100 / 6, 1), round(100 * (0.6 * 3 + 1) / 6, 1), 6)
    # task 3 is marked by hand for 101 (4/5) and 103 (0, with a comment) only: the others are pending, not 0
    assert per_task[3] == (0.0, 40.0, 2)


def test_the_histogram_keeps_scores_awaiting_hand_marking_apart(batch: list[r.SubmissionResult]) -> None:
    groups = {g.label: sorted(g.scores) for g in score_groups(batch)}
    # 101 and 103 are marked; 102 still waits for its task 3 mark; so do 104 (not attempted), 105 and 106
    assert groups["graded"] == sorted([batch[0].score, batch[2].score])
    assert groups["graded, hand marking pending"] == [batch[1].score]
    assert groups["not attempted, hand marking pending"] == [batch[3].score]
    assert "timeout, hand marking pending" in groups and "not submitted" not in groups


def test_the_histogram_draws_a_bar_for_every_group_its_legend_lists(batch: list[r.SubmissionResult]) -> None:
    marked = make_result("108", "Eve", status=r.Status.NOT_ATTEMPTED, manual=1.0)  # not attempted, marked
    for results in (batch, [*batch, marked], [batch[3]]):
        groups = score_groups(results)
        assert all(g.scores for g in groups), [g.label for g in groups if not g.scores]
        drawn = sorted(s for g in groups for s in g.scores)
        assert drawn == sorted(x.score for x in results if x.status is not r.Status.NOT_SUBMITTED)
    assert {g.label for g in score_groups([*batch, marked])} >= {"not attempted", "not attempted, hand marking pending"}


def test_plot_labels_are_text_not_formulas():
    """A `$` in a test name or a translated label is a character: matplotlib's mathtext
    would refuse "$$" (found by tests/test_fuzz_inputs.py) and draw "$x$" as a formula."""
    from autograder.report import plots

    results = [r.SubmissionResult(submission="a", key="0", status=r.Status.GRADED, tasks=[r.TaskResult(1, 1.0, 40.0)],
                                  tests=[r.TestResult("$$", 1, 1.0, 1.0, "x"), r.TestResult("$\\frac{", 1, 0, 1, "y")])]
    for draw in (plots.score_distribution, plots.task_scores, plots.pass_rates_by_test):
        assert draw(results).startswith(b"\x89PNG")


def test_plot_labels_in_japanese_draw_without_missing_glyphs():
    assert len(plots.font_families()) > 1, "install fonts-noto-cjk (scripts/install-system-packages)"
    catalog = Catalog(locale="ja")
    catalog.add("submissions", "提出数")
    catalog.add("full marks", "満点")
    results = [r.SubmissionResult(submission="a", key="山田", status=r.Status.GRADED,
                                  tasks=[r.TaskResult(1, 5, 10, title="パーセプトロン")],
                                  tests=[r.TestResult("test_重み", 1, 5, 10, "重みベクトル: passed")])]
    with warnings.catch_warnings(record=True) as caught, speaking(CatalogTranslations([catalog])):
        warnings.simplefilter("always")
        for draw in (plots.score_distribution, plots.task_scores, plots.pass_rates_by_test):
            assert draw(results).startswith(b"\x89PNG")
    assert not [w for w in caught if "missing from font" in str(w.message)]
