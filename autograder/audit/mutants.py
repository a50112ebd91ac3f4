"""A week's mutants: each solution region mutated once, as a notebook to grade.

Only the code between the solution markers is mutated (what a student writes); the task a
mutant belongs to is the task whose heading comes last before its cell, so a survivor is
judged on the points of the task the student would have got wrong. Mutants that do not
compile are dropped, as are duplicates (the same cell text reached by two operators).
"""

from __future__ import annotations

import difflib
import random
from collections import defaultdict
from dataclasses import dataclass

import nbformat

from autograder.audit.operators import Mutation, mutations, parsable
from autograder.authoring.markers import find_regions
from autograder.course import Week
from autograder.exceptions import CourseError


@dataclass(frozen=True)
class Mutant:
    """One mutated copy of the reference notebook."""

    number: int  # 1-based, in source order: stable for one version of the notebook
    task: int
    cell: int  # 0-based cell index
    operator: str
    description: str
    line: str  # the first changed line as written (stripped)
    mutated: str  # that line in the mutant (stripped)
    diff: str  # unified diff of the cell
    source: str  # the mutated cell's whole source

    @property
    def name(self) -> str:
        return f"mutant{self.number:03d}"

    @property
    def key(self) -> tuple[int, str, str, str]:
        """What an equivalents entry names: task, operator, line before and after."""
        return (self.task, self.operator, self.line, self.mutated)


@dataclass(frozen=True)
class Generated:
    """Every mutant of a week, and how many candidate mutations were dropped and why."""

    mutants: tuple[Mutant, ...]
    duplicates: int
    not_compiling: int


def task_of_cells(week: Week) -> dict[int, int]:
    """Cell index -> the task whose heading precedes it (cells before any task: none)."""
    headings = sorted((t.cell, t.number) for t in week.spec.tasks)
    owner: dict[int, int] = {}
    for index in range(len(week.notebook.cells)):
        before = [number for cell, number in headings if cell < index]
        if before:
            owner[index] = before[-1]
    return owner


def generate_mutants(week: Week) -> Generated:
    """All mutants of the week's autograded solution regions, in source order."""
    manual = {t.number for t in week.tasks if t.manual}
    owner = task_of_cells(week)
    seen: set[tuple[int, str]] = set()
    found: list[Mutant] = []
    duplicates = not_compiling = 0
    for index, cell in enumerate(week.notebook.cells):
        if cell.cell_type != "code":
            continue
        source = cell.source
        regions = find_regions(source, path=week.source_notebook, cell=index)
        if not regions:
            continue
        task = owner.get(index)
        if task is None:
            raise CourseError(f"{week.source_notebook}: cell {index + 1} holds a solution region before any task "
                              "heading: the audit cannot tell which task it belongs to")
        if task in manual:
            continue
        try:
            compile(parsable(source), f"cell {index + 1}", "exec")
        except SyntaxError as exc:
            raise CourseError(f"{week.source_notebook}: cell {index + 1} does not compile ({exc.msg}, line "
                              f"{exc.lineno}): the audit mutates only code that runs") from None
        seen.add((index, source))
        for region in regions:
            # ast lines are 1-based: the region's inner lines are region.begin + 2 .. region.end
            for mutation in mutations(source, region.begin + 2, region.end):
                changed = mutation.apply(source)
                if (index, changed) in seen:
                    duplicates += 1
                    continue
                seen.add((index, changed))
                try:
                    compile(parsable(changed), f"cell {index + 1}", "exec")
                except SyntaxError:
                    not_compiling += 1
                    continue
                found.append(_mutant(len(found) + 1, task, index, mutation, source, changed))
    return Generated(tuple(found), duplicates, not_compiling)


def _mutant(number: int, task: int, cell: int, mutation: Mutation, before: str, after: str) -> Mutant:
    old, new = before.split("\n"), after.split("\n")
    first = min(e.start for e in mutation.edits)
    line_no = before[:first].count("\n")
    # the mutated line: the same line, unless the edit removed line breaks before it
    mutated_line = new[line_no] if line_no < len(new) else ""
    diff = "\n".join(difflib.unified_diff(old, new, fromfile=f"cell {cell + 1} (reference)",
                                          tofile=f"cell {cell + 1} ({mutation.operator})", n=1, lineterm=""))
    return Mutant(number=number, task=task, cell=cell, operator=mutation.operator, description=mutation.description,
                  line=old[line_no].strip(), mutated=mutated_line.strip(), diff=diff, source=after)


def grading_order(mutants: tuple[Mutant, ...], seed: int) -> list[Mutant]:
    """The order mutants are graded in: shuffled by ``seed``, then dealt round-robin over
    (task, operator), so a budget that stops early has still tried every kind on every task."""
    groups: dict[tuple[int, str], list[Mutant]] = defaultdict(list)
    shuffled = list(mutants)
    random.Random(seed).shuffle(shuffled)
    for mutant in shuffled:
        groups[(mutant.task, mutant.operator)].append(mutant)
    order: list[Mutant] = []
    queues = [groups[k] for k in sorted(groups)]
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return order


def mutant_notebook(week: Week, mutant: Mutant | None) -> bytes:
    """The reference notebook with ``mutant``'s cell swapped in (None: the reference itself)."""
    nb = nbformat.from_dict(week.notebook)  # a deep copy: the week's notebook stays as read
    if mutant is not None:
        nb.cells[mutant.cell].source = mutant.source
    return str(nbformat.writes(nb)).encode("utf-8")
