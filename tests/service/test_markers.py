"""Marking split among markers (``autograder/service/markers.py``): the split itself (even,
the same each time, marked hand-ins staying with their marker), each marker's queue and
progress, who marked what, and the course's markers from their launches' roles; on SQLite
and on a real PostgreSQL server (the ``database_url`` fixture)."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import event

from autograder.service.lti import INSTRUCTOR_ROLES
from autograder.service.markers import HandIn, Progress, assignments, hand_ins, plan_split, progress, split
from autograder.service.store import Store
from tests.service.test_store import OPEN, T0, A, notebook, result

INSTRUCTOR, TEACHING_ASSISTANT = INSTRUCTOR_ROLES[0], INSTRUCTOR_ROLES[3]
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


def unmarked(*students: str) -> dict[str, HandIn]:
    return {s: HandIn(s, 1, 0, None, False) for s in students}


def test_a_split_is_even_and_the_same_split_each_time() -> None:
    found = unmarked(*(f"s{n}" for n in range(10)))
    plan = plan_split("week01", found, {}, ["ann", "bob", "cy"])
    assert set(plan) == set(found) and sorted(Counter(plan.values()).values()) == [3, 3, 4]
    assert plan_split("week01", found, {}, ["ann", "bob", "cy"]) == plan  # from nothing: the same
    assert plan_split("week01", found, plan, ["ann", "bob", "cy"]) == plan  # again over itself: nothing moves
    assert plan_split("week01", found, {}, ["ann"]) == dict.fromkeys(found, "ann")


def test_a_new_split_keeps_marked_hand_ins_with_their_marker_and_moves_as_few_others_as_it_can() -> None:
    found = unmarked(*(f"s{n}" for n in range(12)))
    before = plan_split("week01", found, {}, ["ann", "bob"])
    anns = sorted(s for s, m in before.items() if m == "ann")
    bobs = sorted(s for s, m in before.items() if m == "bob")
    # ann marked three of hers, and one of bob's from his queue; one of bob's was marked by a sheet
    for student in anns[:3] + bobs[:1]:
        found[student] = HandIn(student, 1, 1, "ann", True)
    found[bobs[1]] = HandIn(bobs[1], 1, 1, None, True)
    after = plan_split("week01", found, before, ["ann", "bob", "cy"])
    assert all(after[s] == "ann" for s in anns[:3] + bobs[:1]) and after[bobs[1]] == "bob"
    assert sorted(Counter(after.values()).values()) == [4, 4, 4]
    moved = {s for s in found if after[s] != before[s]}
    assert moved - {bobs[0]} == {s for s in found if after[s] == "cy"}  # only to the newcomer, 4 of them
    # the one marker who is not selected keeps what they marked; the unmarked rest goes
    alone = plan_split("week01", found, after, ["cy"])
    assert {s: m for s, m in alone.items() if m != "cy"} == {s: "ann" for s in anns[:3] + bobs[:1]} | {bobs[1]: "bob"}


@pytest.fixture
def store(tmp_path: Path, database_url: str | None):
    with Store(tmp_path / "data", database=database_url) as s:
        yield s


def graded(store: Store, *students: str) -> dict[str, int]:
    """Each student's one attempt at week01, graded with task 2 to mark by hand: attempt ids."""
    ids = {}
    for student in students:
        store.remember_user(A, student, f"Student {student}", None, [LEARNER])
        ids[student] = store.submit(context=A, user=student, week="week01", content=notebook(student),
                                    policy=OPEN, now=T0).id
    while (attempt := store.claim()) is not None:
        store.record_result(attempt.id, result(5.0, answer=f"answer of {attempt.user}"), week_title="week01")
    return ids


def shares(store: Store) -> list[Progress]:
    """Each marker's share of course A's week01, as the markers page shows it."""
    return progress(store, A, hand_ins(store, A, "week01"), assignments(store, A, "week01"), store.users.markers(A))


def test_the_courses_markers_are_those_whose_last_launch_let_them_in(store: Store) -> None:
    store.remember_user(A, "t-1", "Tess", None, [INSTRUCTOR])
    store.remember_user(A, "t-2", "Abe", None, [TEACHING_ASSISTANT, LEARNER])
    store.remember_user(A, "s-1", "Sam", None, [LEARNER])
    store.remember_user(A, "t-3", "Tom", None, [INSTRUCTOR])
    store.remember_user(A, "t-3", "Tom", None, [LEARNER])  # a teacher no more in this course
    store.remember_user("another course", "t-4", "Ida", None, [INSTRUCTOR])
    assert store.users.markers(A) == {"t-2": "Abe", "t-1": "Tess"}


def test_a_class_is_named_in_one_read(store: Store) -> None:
    """The pages that name a class (the live report, results.zip, the markers and marking pages)
    read its names at once: one statement for 40 students, not one each."""
    for n in range(40):
        store.remember_user(A, f"s-{n}", f"名前 {n}", None, [LEARNER])
    store.remember_user("another course", "s-1", "Ida", None, [LEARNER])
    statements: list[str] = []
    event.listen(store.database.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    names = store.user_names(A, [f"s-{n}" for n in range(40)] + ["never-launched"])
    assert names == {f"s-{n}": f"名前 {n}" for n in range(40)}  # who never launched is left out
    assert [s for s in statements if s.lstrip().upper().startswith("SELECT")] == statements[-1:]
    assert store.users.user_names(A, ["s-1"]) == {"s-1": "名前 1"} and store.user_names(A, []) == {}


def test_a_split_gives_each_marker_a_queue_and_progress_and_each_mark_names_its_marker(store: Store) -> None:
    ids = graded(store, *(f"s{n}" for n in range(5)))
    store.remember_user(A, "t-1", "Tess", None, [INSTRUCTOR])
    store.remember_user(A, "t-2", "Abe", None, [TEACHING_ASSISTANT])
    plan = split(store, A, "week01", ["t-1", "t-2"])
    assert sorted(Counter(plan.values()).values()) == [2, 3]
    assert assignments(store, A, "week01") == plan
    tess = sorted(student for student, marker in plan.items() if marker == "t-1")
    first = ids[tess[0]]
    store.mark(first, context=A, task=2, points=3.0, marker="t-1")
    store.rubric_mark([first], context=A, task=2, items=[], adjustment=4.0, note="fine", marker="t-2")
    mark = store.gradebook.manual_marks("week01")[f"attempt-{first}"][2]
    assert (mark.points, mark.marker) == (4.0, "t-2")  # the later save stands, under its marker
    assert {p.marker: (p.hand_ins, p.marked, p.answers) for p in shares(store)} == {
        "t-1": (len(tess), 1, len(tess)), "t-2": (5 - len(tess), 0, 5 - len(tess))}
    # split again: the hand-in t-2 marked goes to t-2, the rest stay where they were
    again = split(store, A, "week01", ["t-1", "t-2"])
    moved = {s for s in again if again[s] != plan[s]}
    student = next(s for s, i in ids.items() if i == first)
    assert again[student] == "t-2" and moved <= {student} | {s for s in plan if plan[s] == "t-2"}
    assert sorted(Counter(again.values()).values()) == [2, 3]


def test_a_regrade_under_way_keeps_each_markers_share_and_progress(store: Store) -> None:
    ids = graded(store, "s1", "s2")
    store.remember_user(A, "t-1", "Tess", None, [INSTRUCTOR])
    split(store, A, "week01", ["t-1"])
    store.mark(ids["s1"], context=A, task=2, points=3.0, marker="t-1")
    assert store.regrade(context=A, week="week01") == 2  # both queued again, their results standing
    assert [(p.marker, p.hand_ins, p.marked) for p in shares(store)] == [("t-1", 2, 1)]
    assert split(store, A, "week01", ["t-1"]) == {"s1": "t-1", "s2": "t-1"}


def test_two_instructors_splitting_at_once_both_go_through_and_one_split_stands(store: Store) -> None:
    graded(store, *(f"s{n}" for n in range(6)))
    for marker in ("t-1", "t-2", "t-3"):
        store.remember_user(A, marker, marker, None, [INSTRUCTOR])
    done, barrier = [], threading.Barrier(2)

    def split_often(markers: list[str]) -> None:
        barrier.wait()
        for _ in range(10):
            split(store, A, "week01", markers)
        done.append(markers)

    threads = [threading.Thread(target=split_often, args=(m,)) for m in (["t-1", "t-2"], ["t-2", "t-3"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(done) == 2  # neither split failed
    assert sorted(Counter(assignments(store, A, "week01").values()).values()) == [3, 3]


def test_two_markers_saving_the_same_answer_at_once_both_land_and_the_mark_is_one_of_theirs(store: Store) -> None:
    ids = graded(store, "s1")
    saved, barrier = [], threading.Barrier(2)

    def save(marker: str, points: float) -> None:
        barrier.wait()
        for _ in range(5):
            store.mark(ids["s1"], context=A, task=2, points=points, comment=marker, marker=marker)
        saved.append(marker)

    threads = [threading.Thread(target=save, args=args) for args in (("t-1", 1.0), ("t-2", 2.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(saved) == ["t-1", "t-2"]
    mark = store.gradebook.manual_marks("week01")[f"attempt-{ids['s1']}"][2]
    assert (mark.marker, mark.points, mark.comment) in {("t-1", 1.0, "t-1"), ("t-2", 2.0, "t-2")}


def test_a_mark_keeps_its_marker_when_its_rubric_item_changes_and_when_it_carries(store: Store) -> None:
    ids = graded(store, "s1")
    item = store.gradebook.add_rubric_item("week01", 2, points=3.0, comment="good")
    store.rubric_mark([ids["s1"]], context=A, task=2, items=[item.number], marker="t-1")
    store.edit_rubric_item("week01", 2, item.number, points=4.0, comment="very good")
    second = store.submit(context=A, user="s1", week="week01", content=notebook("s1 again"), policy=OPEN, now=T0)
    claimed = store.claim()
    assert claimed is not None
    store.record_result(claimed.id, result(9.0, answer="answer of s1"), week_title="week01")  # the same answer
    marks = store.gradebook.manual_marks("week01")
    assert [(marks[f"attempt-{i}"][2].points, marks[f"attempt-{i}"][2].marker) for i in (ids["s1"], second.id)] == [
        (4.0, "t-1"), (4.0, "t-1")]
