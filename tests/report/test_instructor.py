"""The instructor's report (autograder/report/instructor.py), written by ``write_report`` and
read back as HTML: one row and one feedback page per submission, the plots as embedded
PNGs drawn again only when the results change, overrides, unsafe or duplicate keys refused."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from urllib.parse import unquote

import pytest

from autograder import results as r
from autograder.exceptions import ReportError
from autograder.report.feedback import render_feedback
from autograder.report.instructor import PLOTS, _drawn, write_report
from autograder.report.summary import summarize
from tests.report.samples import HOSTILE, WEEK_TITLE, Page, make_result, seven_results


@pytest.fixture
def batch() -> list[r.SubmissionResult]:
    return seven_results()


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


@pytest.mark.slow
def test_the_mean_says_how_points_awaiting_hand_marking_are_counted(tmp_path: Path,
                                                                    batch: list[r.SubmissionResult]) -> None:
    text = Page(write_report(batch, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8")).plain
    assert summarize(batch)["graded_pending"] == 1  # 102: graded, task 3 not marked yet
    assert "mean score of graded (of 20) 1 of them await hand marking: points not marked yet count as 0" in text
    marked = [b for b in batch if b.status is not r.Status.GRADED or not b.pending_points]
    text = Page(write_report(marked, tmp_path, week_title=WEEK_TITLE).read_text(encoding="utf-8")).plain
    assert "count as 0" not in text
