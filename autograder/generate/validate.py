"""The whole source week checked before anything is written: every problem at once.

What is refused, and why it matters: a hand-graded task without a model-answer cell (its
answer would reach students as ordinary text), points that disagree between a heading and
its metadata or do not add up to the week's total, a task with no hidden test or a test
naming a task the notebook lacks (found otherwise only at grading time), a notebook
that does not say which week it is, and a public check (``"check": true``) that would not
reach students whole or would not run on Colab.
"""

from __future__ import annotations

import ast

from nbformat import NotebookNode

from autograder.authoring import TaskSpec, read_spec
from autograder.authoring.markers import BEGIN, END, has_marker_text
from autograder.course import Week
from autograder.exceptions import CourseError, GenerationError
from autograder.testing.hidden import MISSING, Markers, collect, read_markers


def validate_week(week: Week, source: NotebookNode) -> None:
    """Raise GenerationError listing every problem of ``week``; return quietly if none."""
    spec = read_spec(source)
    problems = list(spec.problems)
    if spec.week is None:
        problems.append(f"the notebook does not say which week it is: open it with a title cell "
                        f"'# Week {week.name.removeprefix('week').lstrip('0') or '0'}: title (100 points)'")
    elif spec.week != week.name:
        problems.append(f"the notebook says it is {spec.week!r} but lives in source/{week.name}: fix its title "
                        "heading or metadata, or move it")
    if spec.week is not None and not spec.title:
        problems.append("the notebook has no title: write it after the week in the title cell, "
                        "'# Week 7: k-means (100 points)'")
    if not spec.tasks:
        problems.append("no tasks: open each task with a markdown heading such as '## Task 1 (10 points): what to do'")
    answered = set(spec.answers.values())
    manual = {t.number for t in spec.tasks if t.manual}
    for index, number in sorted(spec.answers.items()):
        if number not in manual:
            problems.append(f"cell {index + 1}: a model answer to task {number}, which is not graded by hand: write "
                            f"'by hand' in task {number}'s heading, or drop the cell's 'Model answer' heading")
    for task in spec.tasks:
        if task.manual and task.number not in answered:
            problems.append(f"cell {task.cell + 1}: task {task.number} is graded by hand but has no model-answer cell, "
                            "so the answer would reach students as it is: start the markdown cell holding it with "
                            "'### Model answer'")
    task_sum = sum(t.points for t in spec.tasks)
    if spec.total is not None and spec.tasks and abs(task_sum - spec.total) > 1e-9:
        listed = " + ".join(f"{t.points:g}" for t in spec.tasks)
        problems.append(f"the tasks' points add up to {task_sum:g} ({listed}), the week's total is {spec.total:g}: "
                        "fix a task's points or the total in the title heading")
    problems += _check_cell_problems(source)
    problems += _test_problems(week, spec.tasks)
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise GenerationError(f"{week.source_notebook}: nothing was written; fix these and generate again:\n{listing}")


def _check_cell_problems(source: NotebookNode) -> list[str]:
    """What is wrong with the cells marked ``"autograder": {"check": true}``, the public
    checks: students run them as handed out, on Colab too, so each must be a code cell
    that reaches students whole (no solution region, which would become a stub) and
    needs nothing from this package (which Colab does not have)."""
    problems = []
    for index, cell in enumerate(source.cells):
        mine = cell.get("metadata", {}).get("autograder", {})
        if not isinstance(mine, dict) or mine.get("check") is not True:
            continue
        where = f"cell {index + 1}: a public check (metadata \"check\": true)"
        if cell.cell_type != "code":
            problems.append(f"{where} must be a code cell of plain asserts: remove \"check\" from this "
                            f"{cell.cell_type} cell's metadata")
        elif any(line.strip() in (BEGIN, END) or has_marker_text(line) for line in cell.source.split("\n")):
            problems.append(f"{where} holds a solution region, so students would get a stub instead of the check: "
                            "move the solution to a cell of its own")
        elif _imports_autograder(cell.source):
            problems.append(f"{where} imports autograder, which students' Colab does not have: "
                            "write it with plain asserts (and numpy or scikit-learn)")
    return problems


def _imports_autograder(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False  # not Python (IPython magics): nothing to judge here
    for node in ast.walk(tree):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(name == "autograder" or name.startswith("autograder.") for name in names):
            return True
    return False


def _marked_tests(week: Week) -> list[Markers]:
    """The markers of every hidden test of ``week``; none when the week has no tests folder."""
    if not week.tests_dir.is_dir():
        return []
    try:
        items = collect(week.tests_dir)
    except CourseError:
        raise GenerationError(f"{week.tests_dir}: the hidden tests do not collect, so nothing was written: "
                              f"run `pytest {week.tests_dir}` to see why") from None
    return [read_markers(item) for item in items]


def _test_problems(week: Week, tasks: list[TaskSpec]) -> list[str]:
    where = week.tests_dir
    tests = _marked_tests(week)
    problems = [f"{where}/{problem}" for t in tests for problem in t.problems]
    for t in tests:
        if not t.problems and (t.task is None or t.points is None):
            problems.append(f"{where / t.nodeid}: {MISSING}")
    known = {t.number: t for t in tasks}
    for number in sorted({t.task for t in tests if t.task is not None} - set(known)):
        names = ", ".join(t.nodeid for t in tests if t.task == number)
        problems.append(f"{where}: hidden tests name task {number}, which the notebook lacks ({names}): "
                        "fix their @pytest.mark.task or add the task")
    for task in tasks:
        mine = [t for t in tests if t.task == task.number]
        total = sum(t.points or 0 for t in mine)
        if task.manual and mine:
            problems.append(f"cell {task.cell + 1}: task {task.number} is graded by hand but has hidden tests "
                            f"({', '.join(t.nodeid for t in mine)}): remove them or drop 'by hand' from its heading")
        elif not task.manual and not mine:
            problems.append(f"cell {task.cell + 1}: task {task.number} has no hidden test: add one marked "
                            f"@pytest.mark.task({task.number}) in {where}, or write 'by hand' in its heading")
        elif not task.manual and abs(total - task.points) > 1e-9:
            problems.append(f"cell {task.cell + 1}: the hidden tests of task {task.number} add up to {total:g} points, "
                            f"the task is worth {task.points:g}: fix their @pytest.mark.points")
    return problems
