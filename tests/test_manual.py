"""Marking free-text tasks by hand: export the answers, read the marks, fold them in."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import nbformat
import pytest

from autograder.course import Task
from autograder.exceptions import ManualMarksError
from autograder.gradebook import apply_marks
from autograder.manual import Mark, answer_sha256, read_marks, write_manual_sheet
from autograder.results import Participant, Status, SubmissionResult, TaskResult
from autograder.submission import Submission

TASKS = (
    Task(number=1, points=40, manual=False, title="the perceptron update"),
    Task(number=3, points=10, manual=True, title="why does it converge?"),
    Task(number=4, points=5, manual=True, title="what would you change?"),
)


def student_notebook(answers: dict[int, str], *, keep_metadata: bool = True) -> bytes:
    nb = nbformat.v4.new_notebook()
    for number, text in answers.items():
        nb.cells.append(nbformat.v4.new_markdown_cell(f"## Task {number} (10 points): question"))
        if number == 4:
            nb.cells.append(nbformat.v4.new_code_cell("x = 1"))  # a code cell between heading and answer
        meta = {"autograder": {"answer": number}} if keep_metadata else {}
        nb.cells.append(nbformat.v4.new_markdown_cell(text, metadata=meta))
    return nbformat.writes(nb).encode()


def submissions() -> list[Submission]:
    return [
        Submission(
            origin="e.zip!a", key="participant-1", participant=Participant(participant_id="1", full_name="山田 太郎"),
            content=student_notebook({3: "Because the data are <separable>.", 4: "More epochs,\nsmaller eta."}),
        ),
        Submission(  # an editor dropped the cell metadata: found after the "Task N" heading
            origin="e.zip!b", key="participant-2", participant=Participant(participant_id="2", full_name="Ann Poe"),
            content=student_notebook({3: "It converges, margin.", 4: "Nothing."}, keep_metadata=False),
        ),
        Submission(origin="e.zip!c", key="participant-3", content=None, status=Status.NOT_SUBMITTED,
                   message="no .ipynb notebook handed in; files seen: answers.pdf",
                   participant=Participant(participant_id="3", full_name="No Book")),
        Submission(origin="bob.ipynb", key="bob", content=b"{ not json"),
    ]


def read_sheet(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def fill(path: Path, marks: dict[tuple[str, str], tuple[str, str]], delimiter: str = ",") -> None:
    rows = read_sheet(path)
    for row in rows:
        row["points"], row["comment"] = marks.get((row["key"], row["task"]), ("", ""))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def test_the_sheet_lists_every_answer_to_every_manual_task(tmp_path: Path) -> None:
    count = write_manual_sheet(
        submissions=submissions(), tasks=TASKS, csv_path=tmp_path / "m.csv", html_path=tmp_path / "m.html",
        title="week01",
    )

    rows = read_sheet(tmp_path / "m.csv")
    assert count == len(rows) == 8
    assert (tmp_path / "m.csv").read_bytes().startswith("\ufeff".encode())
    answers = {(r["key"], r["task"]): r["answer"] for r in rows}
    assert answers[("participant-1", "3")] == "Because the data are <separable>."
    assert answers[("participant-1", "4")] == "More epochs,\nsmaller eta."
    assert answers[("participant-2", "3")] == "It converges, margin."
    assert answers[("participant-2", "4")] == "Nothing."
    assert answers[("participant-3", "3")].startswith("(no notebook: no .ipynb notebook handed in")
    assert answers[("bob", "4")].startswith("(the notebook cannot be read")
    first = rows[0]
    assert (first["identifier"], first["full_name"], first["max_points"]) == ("Participant 1", "山田 太郎", "10")
    assert first["points"] == first["comment"] == ""
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert "Because the data are &lt;separable&gt;." in page and "山田 太郎" in page


def test_marks_round_trip_with_decimal_comma_and_semicolons(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    write_manual_sheet(submissions=submissions(), tasks=TASKS, csv_path=sheet)
    fill(sheet, {("participant-1", "3"): ("7,5", "good; say why"), ("participant-1", "4"): ("5", ""),
                 ("participant-2", "3"): ("0", "")}, delimiter=";")

    marks = read_marks(sheet, tasks=TASKS)

    assert plain(marks) == {
        "participant-1": {3: Mark(7.5, "good; say why"), 4: Mark(5.0, "")},
        "participant-2": {3: Mark(0.0, "")},
    }
    assert read_marks(sheet) == marks  # maxima from the sheet's own max_points column


def plain(marks):
    """Marks without the answer fingerprint the sheet adds."""
    return {key: {task: Mark(m.points, m.comment) for task, m in tasks.items()} for key, tasks in marks.items()}


def test_bad_marks_are_all_reported_with_their_rows(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    write_manual_sheet(submissions=submissions(), tasks=TASKS, csv_path=sheet)
    fill(sheet, {("participant-1", "3"): ("ten", ""), ("participant-1", "4"): ("6", ""),
                 ("participant-2", "3"): ("-1", ""), ("participant-2", "4"): ("", "see me")})

    with pytest.raises(ManualMarksError) as caught:
        read_marks(sheet, tasks=TASKS)
    message = str(caught.value)
    assert "row 2 (participant-1, task 3): points 'ten' is not a number" in message
    # rows go task by task (similar answers together), so a task's answers are read in one go
    assert "row 6 (participant-1, task 4): points 6 outside 0 to 5" in message
    assert "row 3 (participant-2, task 3): points -1 outside 0 to 10" in message
    assert "row 7 (participant-2, task 4): a comment but no points" in message


def test_a_mark_for_a_task_not_marked_by_hand_is_refused(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    sheet.write_text("key,task,max_points,points,comment\nparticipant-1,1,40,3,\nparticipant-1,1,40,3,\n")

    with pytest.raises(ManualMarksError, match="task 1 is not marked by hand"):
        read_marks(sheet, tasks=TASKS)
    with pytest.raises(ManualMarksError, match="row 3 .*marked twice"):
        read_marks(sheet)


def test_exporting_again_keeps_the_marks_already_given(tmp_path: Path) -> None:
    marks = {"participant-1": {3: Mark(7.5, "good")}}
    write_manual_sheet(submissions=submissions(), tasks=TASKS, csv_path=tmp_path / "m.csv", marks=marks)

    assert plain(read_marks(tmp_path / "m.csv", tasks=TASKS)) == marks


def result() -> SubmissionResult:
    return SubmissionResult(
        submission="e.zip!a",
        key="participant-1",
        status=Status.GRADED,
        tasks=[
            TaskResult(task=1, score=30, max_score=40),
            TaskResult(task=3, score=0, max_score=10, manual=True),
            TaskResult(task=4, score=0, max_score=5, manual=True),
        ],
    )


def test_apply_marks_scores_manual_tasks_and_totals_follow() -> None:
    assert result().pending_points == 15 and apply_marks(result(), {}).score == 30
    marked = apply_marks(result(), {3: Mark(7.5, "good"), 1: Mark(3, "not a manual task: ignored")})

    assert (marked.task(3).score, marked.task(3).comment) == (7.5, "good")
    assert marked.task(1).score == 30 and marked.task(4).score == 0 and marked.score == 37.5
    assert marked.max_score == 55
    assert not marked.task(3).pending and marked.task(4).pending and marked.pending_points == 5


def test_a_mark_given_to_another_answer_is_stale_and_the_task_pending() -> None:
    graded = result()
    graded.task(3).answer_sha256 = "a" * 64
    marked = apply_marks(graded, {3: Mark(7.5, "good", answer_sha256="b" * 64)})

    assert marked.task(3).stale and marked.task(3).pending and marked.task(3).score == 0
    assert marked.task(3).comment == "good" and marked.score == 30


def test_the_marker_sees_cells_the_student_added_to_the_task(tmp_path: Path) -> None:
    """An answer written in a new cell below the prompt (not the tagged one) reaches the marker."""
    given = nbformat.v4.new_notebook()
    given.cells = [
        nbformat.v4.new_markdown_cell("## Task 3 (10 points): why?", metadata={"autograder": {"task": 3}}),
        nbformat.v4.new_markdown_cell("*Write your answer to task 3 here.*", metadata={"autograder": {"answer": 3}}),
        nbformat.v4.new_markdown_cell("## Task 4 (5 points): what?", metadata={"autograder": {"task": 4}}),
        nbformat.v4.new_markdown_cell("*Write your answer to task 4 here.*", metadata={"autograder": {"answer": 4}}),
    ]
    student = nbformat.from_dict(nbformat.v4.new_notebook())
    student.cells = [nbformat.from_dict(c) for c in given.cells]
    student.cells.insert(2, nbformat.v4.new_markdown_cell("Because the classes are separable."))
    student.cells.insert(3, nbformat.v4.new_code_cell("plt.plot(errors)  # see: it reaches 0"))
    submission = Submission(origin="s.ipynb", key="s", content=nbformat.writes(student).encode())

    write_manual_sheet(submissions=[submission], tasks=TASKS, csv_path=tmp_path / "m.csv", given=given)

    answers = {r["task"]: r["answer"] for r in read_sheet(tmp_path / "m.csv")}
    assert "*Write your answer to task 3 here.*" in answers["3"]
    assert "Because the classes are separable." in answers["3"] and "plt.plot(errors)" in answers["3"]
    assert "separable" not in answers["4"]  # the next task's section is its own
    assert answers["4"] == "*Write your answer to task 4 here.*"


def test_the_sheet_escapes_what_a_spreadsheet_would_run(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    hostile = Submission(origin="e.zip!h", key="h", participant=Participant(participant_id="9", full_name="@SUM(A1)"),
                         content=student_notebook({3: '=HYPERLINK("http://evil","x")', 4: "-1+2"}))
    write_manual_sheet(submissions=[hostile], tasks=TASKS, csv_path=sheet, marks={"h": {3: Mark(2, "+bad")}})

    rows = read_sheet(sheet)
    for row in rows:
        for column in ("answer", "full_name", "comment"):
            assert not row[column].startswith(("=", "+", "-", "@")), (column, row[column])
    assert rows[0]["answer"] == "'=HYPERLINK(\"http://evil\",\"x\")" and rows[0]["full_name"] == "'@SUM(A1)"
    assert read_marks(sheet, tasks=TASKS)["h"][3][:2] == (2, "+bad")  # the comment reads back as written


def test_a_longer_answer_than_a_cell_holds_is_cut_in_the_sheet_and_the_sheet_reads_back(tmp_path: Path) -> None:
    sheet, page = tmp_path / "m.csv", tmp_path / "m.html"
    essay = "The margin grows. " * 7779 + "ENDEND"  # 140,028 characters: this stopped merge-manual for the class
    long = Submission(origin="l.ipynb", key="long", content=student_notebook({3: essay, 4: "x"}))
    write_manual_sheet(submissions=[long, *submissions()[:1]], tasks=TASKS, csv_path=sheet, html_path=page)
    fill(sheet, {("long", "3"): ("6", "read it all")})

    marks = read_marks(sheet, tasks=TASKS)

    row = next(r for r in read_sheet(sheet) if (r["key"], r["task"]) == ("long", "3"))
    assert len(row["answer"]) <= 32_000 and row["answer"].startswith("The margin grows. ")
    assert row["answer"].endswith("more characters; the whole answer is in m.html beside this sheet and the notebook]")
    assert "ENDEND" in page.read_text(encoding="utf-8")  # the HTML view keeps the whole answer
    assert marks["long"][3].points == 6 and marks["long"][3].answer_sha256 == answer_sha256(essay)


def test_a_cell_longer_than_the_reader_takes_is_refused_saying_where(tmp_path: Path) -> None:
    sheet = tmp_path / "m.csv"
    write_manual_sheet(submissions=submissions()[:1], tasks=TASKS, csv_path=sheet)
    fill(sheet, {("participant-1", "3"): ("1", "x" * 200_000)})
    with pytest.raises(ManualMarksError, match=r"m\.csv, row 2: field larger than field limit .*shorten that cell"):
        read_marks(sheet, tasks=TASKS)


def test_a_mark_given_to_another_answer_is_stale_and_must_be_given_again(tmp_path: Path) -> None:
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    old = Submission(origin="a.ipynb", key="a", content=student_notebook({3: "It converges.", 4: "x"}))
    write_manual_sheet(submissions=[old], tasks=TASKS, csv_path=first)
    fill(first, {("a", "3"): ("8", "clear"), ("a", "4"): ("5", "")})
    marks = read_marks(first, tasks=TASKS)
    assert marks["a"][3].answer_sha256 == read_sheet(first)[0]["answer_sha256"]

    new = Submission(origin="a.ipynb", key="a", content=student_notebook({3: "It diverges!", 4: "x"}))
    write_manual_sheet(submissions=[new], tasks=TASKS, csv_path=second, marks=marks)

    rows = {r["task"]: r for r in read_sheet(second)}
    assert rows["3"]["points"] == "" and rows["3"]["note"].startswith("STALE") and "8 points" in rows["3"]["note"]
    assert rows["4"]["points"] == "5" and rows["4"]["note"] == ""  # the unchanged answer keeps its mark
    assert set(read_marks(second, tasks=TASKS)["a"]) == {4}  # merging unread confirms nothing stale


def test_a_task_heading_is_what_the_source_notebook_calls_one() -> None:
    """Without metadata, a task's section starts at a heading ``autograder.authoring`` reads
    as a task (any case); a sentence that merely opens with "Task 4" stays in its section."""
    from autograder.authoring import read_spec
    from autograder.manual import task_answer

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## task 3 (10 points, by hand): why?"),
                nbformat.v4.new_markdown_cell("It converges.\n\nTask 4 below is easier."),
                nbformat.v4.new_markdown_cell("Task 4 needs the same margin argument."),
                nbformat.v4.new_markdown_cell("## TASK 4 (5 points, by hand): what?"),
                nbformat.v4.new_markdown_cell("More epochs.")]
    assert [t.number for t in read_spec(nb).tasks] == [3, 4]

    added = task_answer(nb, 3, given=set())
    assert added is not None and "It converges." in added and "same margin argument" in added
    assert "More epochs." not in added
    assert task_answer(nb, 4) == "More epochs."
