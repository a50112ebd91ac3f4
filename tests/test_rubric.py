"""Rubric items and answer groups: the mark's definition, the gradebook keeping marks up to
date when an item changes, grouping in the course's four languages, and the CSV sheets
(``manual-marking.csv`` with ``manual-rubric.csv``) through ``merge-manual`` into the
worksheet and the feedback pages."""

from __future__ import annotations

import csv
import io
import random
import sqlite3
from pathlib import Path

import nbformat
import pytest

from autograder.batch import merge_manual, rewrite_outputs
from autograder.course import Course, Task
from autograder.database.migrate import SQLITE_USER_VERSION, head
from autograder.exceptions import GradebookError, ManualMarksError
from autograder.gradebook import MARKED_BY_SHEET, Gradebook
from autograder.grouping import group_answers
from autograder.manual import RUBRIC_CSV, read_marks, read_rubric_sheet, write_manual_sheet, write_rubric_sheet
from autograder.results import Participant, Status, SubmissionResult, TaskResult
from autograder.rubric import RubricItem, parse_item_numbers, rubric_comment, rubric_points
from autograder.submission import Submission

WEEK = "week01"


def item(number: int, points: float, comment: str, task: int = 3) -> RubricItem:
    return RubricItem(WEEK, task, number, points, comment)


# --- the definition of a rubric mark -------------------------------------------------------


def test_a_rubric_mark_is_the_items_sum_plus_adjustment_clipped_to_the_task() -> None:
    good, example, wrong = item(1, 12, "Names separability"), item(2, 8, "Gives an example"), item(3, -5, "Sign error")
    assert rubric_points([good, example], 0, 20) == 20
    assert rubric_points([good, example], 3, 20) == 20  # clipped to the task's points
    assert rubric_points([wrong], 0, 20) == 0  # a deduction alone gives 0, never less
    assert rubric_points([good, wrong], -1.5, 20) == 5.5
    assert rubric_comment([example, good], "See me.") == "Names separability (+12)\nGives an example (+8)\nSee me."
    assert rubric_comment([wrong], "") == "Sign error (-5)"


@pytest.mark.parametrize(("text", "numbers"), [("1 3", (1, 3)), ("3;1", (1, 3)), ("1, 3, 3", (1, 3)),
                                               ("R2+R1", (1, 2)), ("", ()), ("1 x", None), ("1.5", None)])
def test_item_numbers_are_read_as_a_marker_writes_them(text: str, numbers: tuple[int, ...] | None) -> None:
    assert parse_item_numbers(text) == numbers


# --- grouping -----------------------------------------------------------------------------

ANSWERS = {
    "en1": "The perceptron converges only if the data is linearly separable.",
    "en2": "It converges when the data are linearly separable",
    "en3": "the perceptron converges only if the data is linearly separable!",
    "lr1": "Because the learning rate is too large the weights oscillate.",
    "lr2": "A large learning rate makes the weights oscillate",
    "ja1": "データが線形分離可能な場合にのみパーセプトロンは収束する。",
    "ja2": "パーセプトロンはデータが線形分離可能なときだけ収束します。",
    "ja3": "学習率が大きすぎると重みが振動する。",
    "none1": "",
    "none2": "   ",
}


def test_similar_answers_group_together_in_latin_scripts_and_in_japanese() -> None:
    groups = group_answers(ANSWERS)
    where = {key: index for index, keys in enumerate(groups) for key in keys}
    assert where["en1"] == where["en2"] == where["en3"]
    assert where["lr1"] == where["lr2"] != where["en1"]
    assert where["ja1"] == where["ja2"]  # no spaces between words: character n-grams still match
    assert where["ja3"] != where["ja1"]
    assert where["none1"] == where["none2"] and groups[where["none1"]] == ["none1", "none2"]
    assert sorted(key for keys in groups for key in keys) == sorted(ANSWERS)  # each answer exactly once
    assert [len(keys) for keys in groups] == sorted((len(keys) for keys in groups), reverse=True)


def test_grouping_is_deterministic_whatever_the_order_of_the_answers() -> None:
    expected = {frozenset(keys) for keys in group_answers(ANSWERS)}
    keys = list(ANSWERS)
    for seed in range(5):
        random.Random(seed).shuffle(keys)
        assert {frozenset(group) for group in group_answers({k: ANSWERS[k] for k in keys})} == expected


def test_full_width_and_half_width_forms_are_one_answer() -> None:
    assert group_answers({"a": "ＳＶＭ　の　マージン", "b": "svm の マージン", "c": "Naive Bayes"}) == [["a", "b"], ["c"]]


# --- the gradebook ------------------------------------------------------------------------


def result(key: str) -> SubmissionResult:
    return SubmissionResult(
        submission=f"{key}.ipynb", key=key, status=Status.GRADED, week=WEEK,
        participant=Participant(participant_id=key[-3:], full_name=f"Student {key}",
                                folder=f"Student {key}_{key[-3:]}_assignsubmission_file"),
        tasks=[TaskResult(task=1, score=40, max_score=40), TaskResult(task=2, score=20, max_score=20),
               TaskResult(task=3, score=0, max_score=20, manual=True), TaskResult(task=4, score=0, max_score=20,
                                                                                 manual=True)],
        submission_sha256=key.ljust(64, "0"), tests_sha256="t" * 64, grader_version="0.1.0")


@pytest.fixture
def book(tmp_path: Path, database_url: str | None):
    with Gradebook.open(database_url or tmp_path / "gradebook.sqlite") as opened:
        for key in ("s-101", "s-102", "s-103"):
            opened.record(result(key))
        yield opened


def test_editing_an_item_updates_every_mark_that_uses_it_and_no_other(book: Gradebook) -> None:
    book.add_rubric_item(WEEK, 3, points=12, comment="Names separability")
    book.add_rubric_item(WEEK, 3, points=8, comment="Gives an example")
    book.add_rubric_item(WEEK, 3, points=-4, comment="Confuses the margin with the bias")
    for key in ("s-101", "s-102"):
        book.set_rubric_mark(WEEK, key, 3, items=[1, 2])
    book.set_rubric_mark(WEEK, "s-103", 3, items=[2, 3], adjustment=1, note="Close.")
    book.set_manual(WEEK, "s-101", 4, points=15, comment="direct")

    changed = book.edit_rubric_item(WEEK, 3, 1, points=10, comment="Says the data must be separable")

    assert changed == ["s-101", "s-102"]
    marks = book.manual_marks(WEEK)
    assert [marks[k][3].points for k in ("s-101", "s-102", "s-103")] == [18, 18, 5]
    assert marks["s-101"][3].comment == "Says the data must be separable (+10)\nGives an example (+8)"
    assert marks["s-103"][3].comment == "Gives an example (+8)\nConfuses the margin with the bias (-4)\nClose."
    assert marks["s-101"][4].points == 15 and not marks["s-101"][4].by_rubric
    assert {r.key: r.score for r in book.results(WEEK)} == {"s-101": 93, "s-102": 78, "s-103": 65}

    assert book.edit_rubric_item(WEEK, 3, 2, points=20, comment="Gives an example") == ["s-101", "s-102", "s-103"]
    assert book.manual_marks(WEEK)["s-101"][3].points == 20  # 10 + 20, clipped to the task's 20


def test_points_given_directly_replace_a_rubric_mark(book: Gradebook) -> None:
    book.add_rubric_item(WEEK, 3, points=12, comment="Names separability")
    book.set_rubric_mark(WEEK, "s-101", 3, items=[1])
    book.set_manual(WEEK, "s-101", 3, points=3, comment="by hand")
    assert book.edit_rubric_item(WEEK, 3, 1, points=2, comment="Names separability") == []
    assert book.manual_marks(WEEK)["s-101"][3].points == 3


@pytest.mark.parametrize(("action", "message"), [
    (lambda b: b.add_rubric_item(WEEK, 1, points=5, comment="x"), "autograded"),
    (lambda b: b.add_rubric_item(WEEK, 3, points=21, comment="x"), "outside -20..20"),
    (lambda b: b.add_rubric_item(WEEK, 3, points=5, comment=" "), "needs a comment"),
    (lambda b: b.set_rubric_mark(WEEK, "s-101", 3, items=[7]), "no rubric item 7"),
    (lambda b: b.edit_rubric_item(WEEK, 4, 1, points=1, comment="x"), "no rubric item 1"),
])
def test_bad_rubric_changes_are_refused_saying_why(book: Gradebook, action, message: str) -> None:
    with pytest.raises(GradebookError, match=message):
        action(book)


def test_a_version_2_gradebook_is_migrated_keeping_its_marks(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE manual_marks (week TEXT NOT NULL, key TEXT NOT NULL, task INTEGER NOT NULL, "
                   "points REAL NOT NULL, comment TEXT NOT NULL, marked TEXT NOT NULL, answer_sha256 TEXT, "
                   "PRIMARY KEY (week, key, task))")
        db.execute("INSERT INTO manual_marks VALUES ('week01', 'a', 3, 4.0, 'old', '2026-01-01', 'h')")
        db.execute("PRAGMA user_version = 2")
    with Gradebook.open(path) as book:
        mark = book.manual_marks(WEEK)["a"][3]
        assert (mark.points, mark.comment, mark.answer_sha256, mark.by_rubric) == (4.0, "old", "h", False)
        assert book.rubric(WEEK) == []
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SQLITE_USER_VERSION
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(head(),)]


# --- the CSV sheets -------------------------------------------------------------------------

TASKS = (Task(number=1, points=40, manual=False, title=""), Task(number=3, points=20, manual=True, title=""),
         Task(number=4, points=20, manual=True, title=""))


def notebook(answer: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    for number, text in ((3, answer), (4, "More epochs.")):
        nb.cells.append(nbformat.v4.new_markdown_cell(f"## Task {number}"))
        nb.cells.append(nbformat.v4.new_markdown_cell(text, metadata={"autograder": {"answer": number}}))
    return nbformat.writes(nb).encode()


def hand_ins() -> list[Submission]:
    answers = {"s-101": ANSWERS["en1"], "s-102": ANSWERS["ja1"], "s-103": ANSWERS["en2"], "s-104": ANSWERS["ja2"],
               "s-105": ANSWERS["lr1"]}
    return [Submission(origin=f"{key}.ipynb", key=key, content=notebook(text),
                       participant=Participant(participant_id=key[-3:], full_name=f"Student {key}",
                                               folder=f"Student {key}_{key[-3:]}_assignsubmission_file"))
            for key, text in answers.items()]


def rows_of(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def write_rows(path: Path, rows: list[dict[str, str]], delimiter: str = ",") -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def test_one_decision_on_a_group_row_marks_every_answer_of_the_group(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    count = write_manual_sheet(submissions=hand_ins(), tasks=TASKS, csv_path=sheet, html_path=tmp_path / "m.html")
    rows = rows_of(sheet)
    task3 = [r for r in rows if r["task"] == "3"]
    groups = [r for r in task3 if not r["key"]]
    assert count == 10 and len(rows) == count + len([r for r in rows if not r["key"]])
    assert [r["group"] for r in groups] == ["T3-G1", "T3-G2"]  # the English pair, the Japanese pair
    assert {r["key"] for r in task3 if r["group"] == "T3-G1" and r["key"]} == {"s-101", "s-103"}
    assert {r["key"] for r in task3 if r["group"] == "T3-G2" and r["key"]} == {"s-102", "s-104"}
    assert task3.index(groups[0]) == 0  # a group's row comes before its answers

    rubric = [item(1, 12, "Names separability"), item(2, 8, "Gives an example"), item(3, -4, "Sign error")]
    for row in rows:
        if row["key"] == "" and row["group"] == "T3-G1":
            row["rubric"], row["comment"] = "1 2", "Well argued."
        if row["key"] == "s-103" and row["task"] == "3":  # one answer of the group decided on its own
            row["rubric"], row["adjustment"] = "1", "-2,5"
        if row["key"] == "s-105" and row["task"] == "3":
            row["points"] = "3"
    write_rows(sheet, rows, delimiter=";")

    marks = read_marks(sheet, tasks=TASKS, rubric=rubric)

    assert (marks["s-101"][3].points, marks["s-101"][3].items, marks["s-101"][3].comment) == (20, (1, 2), "Well argued.")
    assert (marks["s-103"][3].points, marks["s-103"][3].adjustment) == (9.5, -2.5)
    assert marks["s-105"][3].points == 3 and not marks["s-105"][3].by_rubric
    assert "s-102" not in marks  # the Japanese group was left for later
    assert marks["s-101"][3].answer_sha256 == next(r["answer_sha256"] for r in rows if r["key"] == "s-101"
                                                    and r["task"] == "3")
    again = tmp_path / "again.csv"  # exported again: the rubric marks come back as written
    write_manual_sheet(submissions=hand_ins(), tasks=TASKS, csv_path=again, marks=marks)
    back = {(r["key"], r["task"]): r for r in rows_of(again)}
    assert (back["s-103", "3"]["rubric"], back["s-103", "3"]["adjustment"], back["s-103", "3"]["points"]) == (
        "1", "-2.5", "")
    assert back["s-103", "3"]["note"] == "9.5 points from the rubric"
    assert read_marks(again, tasks=TASKS, rubric=rubric) == marks


def test_bad_rubric_cells_are_reported_with_their_rows(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    write_manual_sheet(submissions=hand_ins(), tasks=TASKS, csv_path=sheet)
    rows = rows_of(sheet)
    cells = {"s-101": {"rubric": "4"}, "s-102": {"rubric": "1", "points": "3"}, "s-103": {"rubric": "one"},
             "s-104": {"adjustment": "2"}, "s-105": {"rubric": "1", "adjustment": "30"}}
    for row in rows:
        if row["key"] in cells and row["task"] == "3":
            row.update(cells[row["key"]])
    write_rows(sheet, rows)
    with pytest.raises(ManualMarksError) as caught:
        read_marks(sheet, tasks=TASKS, rubric=[item(1, 12, "Names separability")])
    message = str(caught.value)
    for expected in ("(s-101, task 3): task 3 has no rubric item 4: define it in manual-rubric.csv",
                     "(s-102, task 3): write points or rubric items, not both",
                     "(s-103, task 3): rubric 'one' is not a list of item numbers",
                     "(s-104, task 3): an adjustment but no rubric items",
                     "(s-105, task 3): adjustment '30' is not a number from -20 to 20"):
        assert expected in message


def test_the_rubric_sheet_round_trips_and_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    path = tmp_path / RUBRIC_CSV
    write_rubric_sheet([item(1, 12, "Names separability"), item(2, -4, "=sign error")], TASKS, path)
    rows = rows_of(path)
    assert [(r["task"], r["item"], r["points"]) for r in rows] == [("3", "1", "12"), ("3", "2", "-4"), ("4", "", "")]
    assert rows[1]["comment"] == "'=sign error"  # a spreadsheet shows it, never runs it
    rows[2].update(points="5", comment="Names a remedy")
    write_rows(path, rows)
    assert [(r.task, r.number, r.points, r.comment) for r in read_rubric_sheet(path, tasks=TASKS)] == [
        (3, 1, 12, "Names separability"), (3, 2, -4, "=sign error"), (4, None, 5, "Names a remedy")]
    write_rows(path, [{"task": "1", "item": "", "points": "5", "comment": "x"},
                      {"task": "3", "item": "1", "points": "25", "comment": "x"},
                      {"task": "3", "item": "2", "points": "2", "comment": ""}])
    with pytest.raises(ManualMarksError) as caught:
        read_rubric_sheet(path, tasks=TASKS)
    assert "row 2 (task 1, item new): task '1' is not a task marked by hand" in str(caught.value)
    assert "row 3 (task 3, item 1): points 25 outside -20 to 20" in str(caught.value)
    assert "row 4 (task 3, item 2): an item needs a comment" in str(caught.value)


def test_merge_manual_with_a_rubric_then_an_edited_item_updates_worksheet_and_feedback(
        tmp_path: Path, course: Course) -> None:
    week = course.week(WEEK)
    out = tmp_path / "results"
    with Gradebook.open(out / "gradebook.sqlite") as book:
        for submission in hand_ins():
            book.record(result(submission.key))
    rewrite_outputs(week, hand_ins(), out_dir=out)
    sheet, rubric_sheet = out / "manual-marking.csv", out / RUBRIC_CSV
    rubric_rows = rows_of(rubric_sheet)
    assert [(r["task"], r["item"]) for r in rubric_rows] == [("3", ""), ("4", "")]  # an empty row a task
    write_rows(rubric_sheet, [{"task": "3", "item": "", "points": "12", "comment": "Names separability"},
                              {"task": "3", "item": "", "points": "8", "comment": "Gives an example"},
                              {"task": "3", "item": "", "points": "-4", "comment": "Sign error"}])
    rows = rows_of(sheet)
    for row in rows:
        if not row["key"] and row["group"] == "T3-G1":  # s-101 and s-103
            row["rubric"] = "1"
        if row["task"] == "4" and not row["key"]:  # the five identical answers: one group
            row["points"] = "20"
    write_rows(sheet, rows)

    merge_manual(week, sheet, out_dir=out)

    def grade_of(key: str) -> str:
        return next(r["Grade"] for r in rows_of(out / "grades.csv") if r["Identifier"] == f"Participant {key[-3:]}")

    assert grade_of("s-101") == grade_of("s-103") == "92.00" and grade_of("s-102") == ""  # 40 + 20 + 12 + 20
    page = (out / "feedback" / "s-101.html").read_text(encoding="utf-8")
    assert "Names separability (+12)" in page

    rubric_rows = rows_of(rubric_sheet)  # written again by the merge, numbered: merging again adds nothing
    assert [(r["item"], r["points"]) for r in rubric_rows if r["task"] == "3"] == [("1", "12"), ("2", "8"),
                                                                                   ("3", "-4")]
    rubric_rows[0]["points"] = "15"
    write_rows(rubric_sheet, rubric_rows)
    stored, _, _ = merge_manual(week, sheet, out_dir=out)

    assert stored == 7  # 2 by the rubric, 5 by points
    items = Gradebook.open(out / "gradebook.sqlite").rubric(WEEK)  # the edited item changed, none added
    assert [(i.task, i.number, i.points, i.comment) for i in items] == [
        (3, 1, 15, "Names separability"), (3, 2, 8, "Gives an example"), (3, 3, -4, "Sign error")]
    assert grade_of("s-101") == grade_of("s-103") == "95.00"
    assert "Names separability (+15)" in (out / "feedback" / "s-103.html").read_text(encoding="utf-8")
    with Gradebook.open(out / "gradebook.sqlite") as book:  # every mark merged from the sheet says so
        assert {m.marker for marks in book.manual_marks(WEEK).values() for m in marks.values()} == {MARKED_BY_SHEET}


def test_the_marking_page_speaks_the_instructors_language(course: Course) -> None:
    from autograder.service.marking import Filters, TaskPage, TaskStats
    from autograder.service.pages import Pages

    # rendered as the task's marking route renders it: the language picks the catalog and the page's lang
    nothing = TaskPage(TaskStats(3, 20, 0, 0, None, None), 0, 0, [], True, [], [], -1, None, None, [], {},
                       None, None, None, None)
    page = bytes(Pages("ML autograder").render(
        "marking_task.html.j2", week=course.week(WEEK), task=3, page=nothing, filters=Filters(), query={},
        csrf="x", changed="marked", me="t", markers={}, count=3, language="ja").body).decode()
    assert '<html lang="ja">' in page and "この条件に合う解答はありません。" in page
    assert "<title>パーセプトロン: " in page and "The perceptron" not in page  # the week's catalog titles it
    assert "<h1>課題3: 現実の分類問題" in page and "real-world" not in page
    assert 'data-message="3件の解答を採点しました。"' in page  # what the live region announces
