"""The feedback page and the instructor report, read back as HTML: escaping, contents,
self-containment, one row and one feedback page per submission, real PNG plots."""

from __future__ import annotations

import base64
import copy
import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from autograder import results as r
from autograder.exceptions import ReportError
from autograder.report import render_feedback, summarize, write_report
from autograder.report.instructor import PLOTS, _drawn
from autograder.report.plots import pass_rates, score_groups, task_rates

WEEK_TITLE = "Week 1: The Perceptron"
HOSTILE = "<script>alert('x')</script>"


class Page(HTMLParser):
    """The parts of an HTML page the tests look at: tags with attributes, and the text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.tags if t == tag]

    @property
    def plain(self) -> str:
        return " ".join(" ".join(self.text).split())


def make_result(
    key: str,
    name: str,
    status: r.Status = r.Status.GRADED,
    passes: tuple[bool, bool, bool] = (True, False, True),
    manual: float = 0.0,
    comment: str = "",
    messages: tuple[str, ...] = (),
) -> r.SubmissionResult:
    ran = status in (r.Status.GRADED, r.Status.TIMEOUT)
    tests = [
        r.TestResult("test_fit", 1, 6.0 if passes[0] else 0.0, 6.0, "fit() converges on separable data"),
        r.TestResult(
            "test_errors", 1, 4.0 if passes[1] else 0.0, 4.0,
            "errors_ has one entry per epoch" + ("" if passes[1] else "\nerrors_ is shorter than n_iter"),
        ),
        r.TestResult("test_secret", 2, 5.0 if passes[2] else 0.0, 5.0, "SECRET-CHECK-TEXT", visibility=r.Visibility.HIDDEN),
    ] if ran else []
    tasks = [
        r.TaskResult(1, sum(t.score for t in tests if t.task == 1), 10.0, title="Implement the Perceptron"),
        r.TaskResult(2, sum(t.score for t in tests if t.task == 2), 5.0, title="Learning rate"),
        r.TaskResult(3, manual, 5.0, manual=True, title="Discuss convergence", comment=comment,
                     marked=bool(manual or comment)),
    ]
    return r.SubmissionResult(
        submission=f"export.zip!{name}_{key}_assignsubmission_file/week01.ipynb",
        key=key,
        status=status,
        tasks=tasks if status is not r.Status.NOT_SUBMITTED else [],
        tests=tests,
        week="week01",
        participant=r.Participant(participant_id=key, full_name=name),
        messages=list(messages),
        duration_s=0.25,
        grader_version="0.1.0",
    )


@pytest.fixture
def batch() -> list[r.SubmissionResult]:
    return [
        make_result("101", "Jane Doe", manual=4.0, comment="Good argument."),
        make_result("102", "山田 太郎", passes=(True, True, True)),
        make_result("103", HOSTILE, messages=(f"Cell 2 printed {HOSTILE}",), comment=f"marker wrote {HOSTILE}"),
        make_result("104", "João", status=r.Status.NOT_ATTEMPTED),
        make_result("105", "Ana", status=r.Status.ERROR, messages=("The notebook is not valid JSON",)),
        make_result("106", "Li", status=r.Status.TIMEOUT, passes=(True, False, False)),
        make_result("107", "Max", status=r.Status.NOT_SUBMITTED, messages=("no .ipynb; files seen: a.pdf",)),
    ]


def test_feedback_shows_what_passed_what_failed_and_why() -> None:
    result = make_result("101", "Jane Doe", manual=4.0, comment="Good argument, cite the theorem.")
    page = Page(render_feedback(result, week_title=WEEK_TITLE))
    text = page.plain
    assert WEEK_TITLE in text and "Jane Doe" in text
    assert "15 / 20 points" in text  # the total includes the manual mark
    assert "Task 1: Implement the Perceptron 6 / 10" in text
    assert "Task 3: Discuss convergence 4 / 5" in text
    assert "Good argument, cite the theorem." in text
    assert "fit() converges on separable data" in text
    assert "errors_ is shorter than n_iter" in text  # why it failed
    assert [s.get("title") for s in page.all("span") if s.get("title") in {"passed", "failed"}] == ["passed", "failed"]


def test_a_task_not_marked_yet_is_pending_not_zero() -> None:
    result = make_result("102", "Ann", passes=(True, True, True))
    text = Page(render_feedback(result, week_title=WEEK_TITLE)).plain
    assert "15 of the 15 points graded automatically; 5 pending marking by hand" in text
    assert "Task 3: Discuss convergence pending / 5" in text and "0 / 5" not in text

    marked = make_result("101", "Jane", passes=(True, True, True), manual=4.0)
    page = Page(render_feedback(marked, week_title=WEEK_TITLE)).plain
    assert "pending marking" not in page and "pending / 5" not in page and "Discuss convergence 4 / 5" in page


def test_hidden_tests_count_but_are_not_described() -> None:
    html = render_feedback(make_result("101", "Jane"), week_title=WEEK_TITLE)
    assert "SECRET-CHECK-TEXT" not in html and "test_secret" not in html
    assert "1 further check not shown here." in Page(html).plain


def test_student_strings_are_escaped(batch: list[r.SubmissionResult]) -> None:
    html = render_feedback(batch[2], week_title=f"Week <1> {HOSTILE}")
    assert "<script" not in html
    page = Page(html)
    # shown as text: twice in <title> (week, name), the heading, the name, a message, a comment
    assert page.plain.count(HOSTILE) == 6
    assert not page.all("script")


def test_feedback_is_self_contained(batch: list[r.SubmissionResult]) -> None:
    for result in batch:
        page = Page(render_feedback(result, week_title=WEEK_TITLE))
        assert not page.all("script") and not page.all("link") and not page.all("img")
        assert len(page.all("style")) == 1
        assert page.all("meta")[0] == {"charset": "utf-8"}


@pytest.mark.parametrize("status", list(r.Status))
def test_every_status_explains_itself(status: r.Status) -> None:
    from autograder.report.templating import STATUS_TEXT

    page = Page(render_feedback(make_result("1", "A", status=status), week_title=WEEK_TITLE)).plain
    assert STATUS_TEXT[status] in page and status.value.replace("_", " ") in page


def test_report_has_a_row_and_a_feedback_page_per_submission(tmp_path: Path, batch: list[r.SubmissionResult]) -> None:
    report = write_report(batch, tmp_path, week_title=WEEK_TITLE)
    assert report == tmp_path / "report.html"
    html = report.read_text(encoding="utf-8")
    # one script, the grader's own sorting and filtering; nothing from a submission runs
    assert html.count("<script") == 1
    script = html.split("<script>", 1)[1].split("</script>", 1)[0]
    assert script.strip() == (Path(write_report.__code__.co_filename).parent / "templates" / "report.js").read_text().strip()
    page = Page(html)
    assert len([tag for tag, attrs in page.tags if tag == "tr" and "data-status" in attrs]) == len(batch)
    links = [a["href"] for a in page.all("a")]
    assert len(links) == len(batch)
    by_name = sorted(batch, key=lambda res: res.participant.full_name.casefold())  # type: ignore[union-attr]
    assert by_name[0].key == "103" and by_name[-1].key == "102"  # "<script>…" first, 山田 last: by name, not key
    for result, href in zip(by_name, links, strict=True):
        assert href is not None
        target = tmp_path / unquote(href)
        assert target == tmp_path / "feedback" / f"{result.key}.html"
        assert target.read_text(encoding="utf-8") == render_feedback(result, week_title=WEEK_TITLE)
    text = page.plain
    for name in ("Jane Doe", "山田 太郎", HOSTILE, "João", "Ana", "Li", "Max"):
        assert name in text
    for status in r.Status:
        assert status.value.replace("_", " ") in text
    assert "The notebook is not valid JSON" in text


def test_report_embeds_every_plot_as_png(tmp_path: Path, batch: list[r.SubmissionResult]) -> None:
    page = Page(write_report(batch, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8"))
    images = page.all("img")
    assert [img["alt"] for img in images] == [plot.title for plot in PLOTS]
    for img in images:
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.removeprefix("data:image/png;base64,"))
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000


def test_an_overridden_task_says_so_and_what_the_checks_gave(tmp_path: Path, batch: list[r.SubmissionResult]) -> None:
    task = batch[1].tasks[0]
    task.autograded_score, task.score, task.override_reason = task.score, 8.0, "the data set was the wrong one"
    page = Page(write_report(batch, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8"))
    marks = [s.get("title") for s in page.all("span") if "override" in (s.get("class") or "")]
    assert marks == ["overridden by an instructor (the checks gave 10)"]


def test_the_plots_are_drawn_again_only_when_the_results_change(batch: list[r.SubmissionResult]) -> None:
    """The live page asks for its plots every 15 s: the same results read again reuse the
    pictures; a new mark or another language draws them again."""
    first = _drawn.images(batch, "en", None)
    assert _drawn.images(copy.deepcopy(batch), "en", None) is first
    marked = copy.deepcopy(batch)
    marked[1].tasks[2].score, marked[1].tasks[2].marked = 5.0, True  # 山田's pending task marked
    again = _drawn.images(marked, "en", None)
    assert again is not first and again[0][2] != first[0][2]  # the histogram's numbers moved
    assert _drawn.images(batch, "ja", None) is not first


@pytest.mark.parametrize("size", [0, 1])
def test_report_of_a_batch_with_nothing_graded(tmp_path: Path, size: int) -> None:
    batch = [make_result("1", "Max", status=r.Status.NOT_SUBMITTED)][:size]
    page = Page(write_report(batch, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8"))
    assert len(page.all("img")) == len(PLOTS)
    assert len([tag for tag, attrs in page.tags if tag == "tr" and "data-status" in attrs]) == size


@pytest.mark.parametrize("key", ["../escape", "a/b", "..", "", "x\\y"])
def test_keys_that_are_not_file_names_are_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ReportError, match="not a safe file name"):
        write_report([make_result(key, "A")], tmp_path / "out", week_title=WEEK_TITLE)
    assert not (tmp_path / "escape").exists()


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="share the key"):
        write_report([make_result("1", "A"), make_result("1", "B")], tmp_path, week_title=WEEK_TITLE)


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


@pytest.mark.slow
def test_the_mean_says_how_points_awaiting_hand_marking_are_counted(tmp_path: Path,
                                                                    batch: list[r.SubmissionResult]) -> None:
    text = Page(write_report(batch, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8")).plain
    assert summarize(batch)["graded_pending"] == 1  # 102: graded, task 3 not marked yet
    assert "mean score of graded (of 20) 1 of them await hand marking: points not marked yet count as 0" in text
    marked = [b for b in batch if b.status is not r.Status.GRADED or not b.pending_points]
    text = Page(write_report(marked, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8")).plain
    assert "count as 0" not in text


def test_summary_counts_statuses_and_means_graded_scores(batch: list[r.SubmissionResult]) -> None:
    summary = summarize(batch)
    assert json.loads(json.dumps(summary)) == summary
    assert summary["submissions"] == 7
    assert summary["status"] == {"graded": 3, "not_attempted": 1, "error": 1, "timeout": 1, "not_submitted": 1,
                                 "wrong_week": 0}
    graded = [b.score for b in batch if b.status is r.Status.GRADED]
    assert summary["mean_score"] == round(sum(graded) / 3, 4) and summary["max_score"] == 20.0
    assert summarize([])["mean_score"] is None


def test_summary_counts_timeouts_pending_and_stale_marks(batch: list[r.SubmissionResult]) -> None:
    from autograder.exceptions import StudentTimeout
    from autograder.grading.judge import describe_failure

    assert describe_failure(StudentTimeout(10)).timed_out and not describe_failure(AssertionError("x")).timed_out
    batch[0].tests[0].timed_out = batch[0].tests[1].timed_out = True  # one submission, two tests hit the limit
    batch[2].task(3).stale, batch[2].task(3).marked = True, False
    summary = summarize(batch)
    assert summary["timed_out_tests"] == 2
    assert summary["timed_out_submissions"] == 2  # 101's calls and 106's notebook
    assert summary["stale_marks"] == 1
    assert summary["pending_marking"] == 5  # all but 101 (marked) and 107 (nothing handed in); 103's is stale


def test_per_test_breakdown_names_the_commonest_failures(batch: list[r.SubmissionResult]) -> None:
    from autograder.report.summary import test_breakdown

    by_name = {b.name: b for b in test_breakdown(batch)}
    errors = by_name["test_errors"]
    assert (errors.task, errors.passed, errors.ran) == (1, 1, 4)
    assert errors.failures == [("errors_ has one entry per epoch\nerrors_ is shorter than n_iter", 3)]
    assert by_name["test_fit"].failures == []


def test_similarity_finds_the_copied_pair_and_ignores_the_given_code() -> None:
    import nbformat

    from autograder.report.similarity import own_code, similar_pairs

    given = nbformat.v4.new_notebook()
    scaffold = "import numpy as np\n\ndef load(path):\n    return np.loadtxt(path, delimiter=',')\n"
    given.cells = [nbformat.v4.new_code_cell(scaffold), nbformat.v4.new_code_cell("def fit(X, y):\n    raise NotImplementedError")]

    def handed_in(fit: str) -> bytes:
        nb = nbformat.from_dict(given)
        nb.cells[1] = nbformat.v4.new_code_cell(fit)
        return nbformat.writes(nb).encode()

    alice = ("def fit(X, y):\n    w = np.zeros(X.shape[1])\n    for epoch in range(100):\n"
             "        for xi, yi in zip(X, y):\n            if yi * (w @ xi) <= 0:\n                w += yi * xi\n    return w\n")
    bob = alice.replace("epoch", "e").replace("    return w", "    return w  # done")  # renamed a variable
    carol = ("def fit(X, y):\n    from sklearn.linear_model import Perceptron\n    model = Perceptron(max_iter=50)\n"
             "    model.fit(X, y)\n    coefficients = model.coef_.ravel()\n    return coefficients\n")
    codes = {name: own_code(handed_in(fit), given) for name, fit in (("alice", alice), ("bob", bob), ("carol", carol))}
    assert "np.loadtxt" not in codes["alice"]  # the given cell is not the student's own code
    pairs = similar_pairs(codes, given_code=scaffold)
    assert [(p.first, p.second) for p in pairs] == [("alice", "bob")]
    assert pairs[0].score > 0.8 and pairs[0].listings == (codes["alice"], codes["bob"])
    same_scaffold = {"x": scaffold, "y": scaffold}  # only given code in common: nothing to report
    assert similar_pairs(same_scaffold, given_code=scaffold) == []


def test_plot_labels_are_text_not_formulas():
    """A `$` in a test name or a translated label is a character: matplotlib's mathtext
    would refuse "$$" (found by tests/test_fuzz_inputs.py) and draw "$x$" as a formula."""
    from autograder.report import plots

    results = [r.SubmissionResult(submission="a", key="0", status=r.Status.GRADED, tasks=[r.TaskResult(1, 1.0, 40.0)],
                                  tests=[r.TestResult("$$", 1, 1.0, 1.0, "x"), r.TestResult("$\\frac{", 1, 0, 1, "y")])]
    for draw in (plots.score_distribution, plots.task_scores, plots.pass_rates_by_test):
        assert draw(results).startswith(b"\x89PNG")


def test_the_feedback_footer_keeps_its_sentences_apart() -> None:
    result = make_result("101", "Jane Doe")
    result.submission_sha256 = "c51" + "0" * 61
    html = render_feedback(result, week_title=WEEK_TITLE)
    footer = html[html.index("<footer"):html.index("</footer>")]
    assert "autograder 0.1.0. Submission SHA-256 <code>c51000000000</code>." in footer, footer
