"""The negative control: a week whose hidden tests give a point to a notebook with no
answer in it is refused.

A hidden test that passes without the student's answer checks nothing, and every student
keeps its points whatever they hand in (an imported otter test that only *defines* its
check function is one: it passes for everyone). Passing on the reference, which every
week's tests must, cannot show it. So ``import``, ``generate`` and ``audit`` grade two
notebooks per week through the real sandbox, as any hand-in is graded:

- ``untouched``: the student notebook as handed out, every answer still the stub that
  raises ``NotImplementedError``;
- ``emptied``: the same notebook with every solution region (``authoring.markers``) an
  empty ``pass``, so its cells run on without an answer: a test that only checks a name
  defined outside the regions, or calls the student's function without looking at what
  it returns, passes here where the stub's error would have hidden it.

Either earning any autograded point refuses the week, naming each test. Every week's
two notebooks are graded in one ``GraderPool`` (one grader process per week, at most one
per core), under one fixed seed so the instructor can replay a finding with
``pytest source/WEEK/tests --seed 1 --submission NOTEBOOK``.

``generate`` and ``grading`` share a floor and never import each other: callers above
both (the CLI, ``interop``, ``audit``) build the student notebook and pass it here.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass

import nbformat
from nbformat import NotebookNode

from autograder.authoring.markers import find_regions, rewrite
from autograder.course import Week
from autograder.exceptions import CourseError
from autograder.execution import Limits
from autograder.grading.pool import GraderPool
from autograder.results import SubmissionResult, TestResult
from autograder.submission import Submission
from autograder.testing.budgets import source_cells

UNTOUCHED = "negative-control-untouched"
EMPTIED = "negative-control-emptied"
SEED = 1
# An emptied region can leave a loop that never ends (``while`` waiting on an answer): each
# cell is stopped well before the batch default, and the controls never restart a worker.
CONTROL_LIMITS = Limits(cell_timeout_s=10.0, submission_timeout_s=60.0, tests_timeout_s=60.0, restarts=0)
_SAID = {UNTOUCHED: "the untouched student notebook", EMPTIED: "the student notebook with every answer emptied"}


@dataclass(frozen=True)
class Finding:
    """A hidden test that earned points on a control notebook."""

    week: Week
    control: str  # UNTOUCHED or EMPTIED
    test: TestResult

    def __str__(self) -> str:
        test = self.test
        return (f"{test.name} (task {test.task}) earns {test.score:g} of {test.max_score:g} point(s) on "
                f"{_SAID[self.control]}")


def control_submissions(week: Week, student: bytes) -> list[Submission]:
    """The week's two control notebooks as hand-ins: ``student`` (the source language's
    student notebook, the bytes ``generate`` writes) untouched, and with its answers emptied."""
    empty = nbformat.writes(emptied(week, nbformat.reads(student.decode("utf-8"), as_version=4))).encode()
    return [Submission(origin=f"{week.name}: {_SAID[key]}", key=key, content=content, seed=SEED)
            for key, content in ((UNTOUCHED, student), (EMPTIED, empty))]


def emptied(week: Week, student: NotebookNode) -> NotebookNode:
    """``student`` with each code cell that holds a solution region in the source notebook
    rewritten from the source, every region a ``pass`` at its indentation: the stub gone,
    nothing in its place, the rest of the cell as handed out."""
    source = week.notebook
    nb = copy.deepcopy(student)
    cells = source_cells(nb.cells)  # without the "Time limits" cell generation adds
    if len(source.cells) != len(cells):
        raise CourseError(f"{week.name}: the student notebook has {len(cells)} cells from the source, the source "
                          f"{len(source.cells)}: run `autograder generate {week.name}` first")
    for index, (given, cell) in enumerate(zip(source.cells, cells)):
        if given.cell_type != "code":
            continue
        regions = find_regions(given.source, path=week.source_notebook, cell=index)
        if regions:
            cell.source = rewrite(given.source, regions, lambda region, inner: [region.indent + "pass"])
    return nb


def findings(week: Week, results: Sequence[SubmissionResult]) -> list[Finding]:
    """The tests that earned any point on ``week``'s control notebooks among ``results``."""
    return [Finding(week, result.key, test) for result in results if result.key in _SAID
            for test in result.tests if test.score > 0]


def refusal(found: Sequence[Finding]) -> str:
    """What the instructor is told: each week's tests that pass without an answer, and what to do."""
    weeks: dict[str, list[str]] = {}
    for finding in found:
        weeks.setdefault(finding.week.name, []).append(str(finding))
    said = "; ".join(f"{name}: {', '.join(tests)}" for name, tests in weeks.items())
    return (f"hidden tests give points to a notebook with no answer in it: {said}. A test that passes without "
            "the student's answer checks nothing: make it call the student's code and compare what comes back "
            f"with the reference (docs/AUTHORING.md, 'The negative control'); replay one with `pytest "
            f"source/WEEK/tests --seed {SEED} --submission NOTEBOOK`")


def check_weeks(weeks: Sequence[tuple[Week, bytes]], *, jobs: int = 0,
                limits: Limits = CONTROL_LIMITS) -> list[Finding]:
    """Grade every week's control notebooks (``(week, student notebook)`` pairs) in one pool
    of ``jobs`` grader processes (0: one per core, never more than the weeks) and return
    what earned points."""
    if not weeks:
        return []
    pool = GraderPool(min(jobs or os.cpu_count() or 1, len(weeks)), limits)
    try:
        graded = pool.grade_weeks([(week, control_submissions(week, student)) for week, student in weeks])
    finally:
        pool.close()
    return [f for (week, _), results in zip(weeks, graded) for f in findings(week, results)]


def refuse(weeks: Sequence[tuple[Week, bytes]], *, jobs: int = 0) -> None:
    """``check_weeks``, raising ``CourseError`` with ``refusal`` when anything earned a point."""
    found = check_weeks(weeks, jobs=jobs)
    if found:
        raise CourseError(refusal(found))
