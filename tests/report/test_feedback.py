"""The student's feedback page (autograder/report/feedback.py), read back as HTML: what
passed, what failed and why, pending hand marks, hidden checks counted but not described,
escaping, self-containment, every status explained."""

from __future__ import annotations

import pytest

from autograder import results as r
from autograder.report.feedback import render_feedback
from tests.report.samples import HOSTILE, WEEK_TITLE, Page, make_result, seven_results


@pytest.fixture
def batch() -> list[r.SubmissionResult]:
    return seven_results()


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


def test_the_feedback_footer_keeps_its_sentences_apart() -> None:
    result = make_result("101", "Jane Doe")
    result.submission_sha256 = "c51" + "0" * 61
    html = render_feedback(result, week_title=WEEK_TITLE)
    footer = html[html.index("<footer"):html.index("</footer>")]
    assert "autograder 0.1.0. Submission SHA-256 <code>c51000000000</code>." in footer, footer
