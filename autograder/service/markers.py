"""Marking split among markers: which marker marks which student's hand-in of a week, each
marker's queue and progress, and who marked what.

A marker is a course user whose last launch opened the instructor pages (``users.py``). An
instructor splits a week's hand-ins to mark (each student's latest scored attempt with a
hand-graded task: one a regrade queued again keeps its place) among the markers they
select, by student and evenly: ``plan_split`` decides, ``split`` stores it in
``marker_assignments`` (course, week, student -> marker). A split is stable: the same
markers over the same hand-ins give the same split, a re-split moves only hand-ins nobody
has marked yet, and as few of them as evenness allows (each keeps its marker while that
marker is selected and under its share); a hand-in with a mark stays with whoever gave the
latest one (``ManualMark.marker``). A hand-in uploaded after the split has no marker until
the next one.

The marking pages show a marker's queue, the hand-ins ``assignments`` gives them; marks name
their marker whichever queue they were saved from, so two markers saving the same answer
both succeed, the later save standing under its marker's name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import delete, insert, select

from autograder.database.tables import marker_assignments
from autograder.gradebook import MARKED_BY_SHEET, read_marks

if TYPE_CHECKING:
    from autograder.service.store import Store


@dataclass(frozen=True)
class HandIn:
    """A student's latest scored attempt of a week that has hand-graded tasks."""

    student: str  # the LMS user who handed it in
    answers: int  # its hand-graded tasks
    marked: int  # of them, those with a mark that counts (not one given to another answer)
    marked_by: str | None  # the course user who gave its latest mark; None: no mark, or none by a user
    has_marks: bool  # any mark at all, from the service, a sheet or before markers were kept


@dataclass(frozen=True)
class Progress:
    """One marker's share of a week: ``marked`` of ``answers`` in ``hand_ins`` hand-ins."""

    marker: str
    name: str
    hand_ins: int
    answers: int
    marked: int


def hand_ins(store: Store, context: str, week: str) -> dict[str, HandIn]:
    """The week's hand-ins to mark in one course, by student (their latest scored attempt, as
    the marking pages show it), in three reads whatever their number."""
    latest = {a.user: a for a in store.week_attempts(context=context, week=week) if a.scored}
    results = store.results_of(list(latest.values()))
    with store.database.read() as db:
        marks = read_marks(db, week, [a.key for a in latest.values()])
    found = {}
    for student, attempt in latest.items():
        result = results.get(attempt.id)
        manual = [task for task in result.tasks if task.manual] if result else []
        if not manual:
            continue
        given = marks.get(attempt.key, {})
        by_users = sorted((m.marked, m.marker) for m in given.values() if m.marker not in (None, MARKED_BY_SHEET))
        found[student] = HandIn(student, len(manual), sum(t.marked and not t.stale for t in manual),
                                by_users[-1][1] if by_users else None, bool(given))
    return found


def assignments(store: Store, context: str, week: str) -> dict[str, str]:
    """The week's stored split: student -> marker."""
    table = marker_assignments.c
    with store.database.read() as db:
        rows = db.execute(select(table.user, table.marker).where(table.context == context, table.week == week))
        return {student: marker for student, marker in rows}


def deal_order(week: str, student: str) -> str:
    """Where a student's hand-in comes in a split: a hash, so neither the LMS's ids nor names
    decide who marks whom, the same every time."""
    return hashlib.sha256(f"{week}\0{student}".encode()).hexdigest()


def plan_split(week: str, found: Mapping[str, HandIn], current: Mapping[str, str],
               markers: Sequence[str]) -> dict[str, str]:
    """The split of the hand-ins ``found`` among ``markers`` (in the order given), from the
    ``current`` one (student -> marker): student -> marker for every hand-in.

    A hand-in with a mark stays: with the user who gave its latest mark, else where it was.
    The others are shared so that the selected markers' totals differ by at most one where
    the staying ones allow; each keeps its current marker while that one has room, in the
    deal order, and the rest go, one by one, to the marker with the most room left."""
    if not markers:
        raise ValueError("a split needs at least one marker")
    stay, movable = {}, []
    for student, hand_in in found.items():
        keeper = hand_in.marked_by or (current.get(student) if hand_in.has_marks else None)
        if keeper is not None:
            stay[student] = keeper
        else:
            movable.append(student)
    movable.sort(key=lambda student: deal_order(week, student))
    rank = {marker: place for place, marker in enumerate(markers)}
    load = {marker: sum(1 for m in stay.values() if m == marker) for marker in markers}
    room = dict.fromkeys(markers, 0)
    for _ in movable:  # fill the lightest first: the shares as even as the staying hand-ins allow
        lightest = min(markers, key=lambda m: (load[m] + room[m], rank[m]))
        room[lightest] += 1
    plan = dict(stay)
    for student in movable:
        kept = current.get(student)
        if kept in room and room[kept] > 0:
            plan[student], room[kept] = kept, room[kept] - 1
    for student in movable:
        if student not in plan:
            roomiest = max(markers, key=lambda m: (room[m], -rank[m]))
            plan[student], room[roomiest] = roomiest, room[roomiest] - 1
    return plan


def split(store: Store, context: str, week: str, markers: Sequence[str]) -> dict[str, str]:
    """Split the week's hand-ins among ``markers`` (``plan_split``) and store it in place of
    the week's earlier split, in one transaction; the new split, student -> marker.
    ``markers`` are the caller's to check (the course's: ``Users.markers``). Two splits of
    one week at once take turns (a lock on the course's week), each planned from the split
    before it: the later one stands."""
    table = marker_assignments.c
    with store.database.write() as db:
        store.database.lock(db, "marker split", context, week)
        plan = plan_split(week, hand_ins(store, context, week), assignments(store, context, week), markers)
        db.execute(delete(marker_assignments).where(table.context == context, table.week == week))
        if plan:
            db.execute(insert(marker_assignments), [{"context": context, "week": week, "user": student,
                                                     "marker": marker} for student, marker in plan.items()])
    return plan


def progress(store: Store, context: str, found: Mapping[str, HandIn], split: Mapping[str, str],
             markers: Mapping[str, str]) -> list[Progress]:
    """Each marker's share of the week's hand-ins ``found`` under ``split`` and how much of it
    is marked, by name: the course's ``markers`` (user -> name, ``Users.markers``) and anyone
    else a hand-in is assigned to."""
    shares: dict[str, list[HandIn]] = {marker: [] for marker in markers}
    for student, hand_in in found.items():
        if student in split:
            shares.setdefault(split[student], []).append(hand_in)
    others = store.user_names(context, [marker for marker in shares if marker not in markers])
    rows = [Progress(marker, markers.get(marker) or others.get(marker) or marker, len(mine),
                     sum(h.answers for h in mine), sum(h.marked for h in mine)) for marker, mine in shares.items()]
    return sorted(rows, key=lambda row: (row.name, row.marker))
