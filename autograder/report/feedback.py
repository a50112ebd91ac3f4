"""The per-student feedback page: what passed, what failed and why, points per task.

The same HTML goes into Moodle's feedback.zip, so it is one self-contained file: inline
CSS, no scripts, no external assets. Tests with ``hidden`` visibility count towards the
score but are not described; the page says how many there were.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.report.templating import environment
from autograder.results import SubmissionResult, TaskResult, TestResult, Visibility


@dataclass(frozen=True)
class TaskSection:
    """One task as the page shows it; ``task`` is None for tests of a task the result lacks."""

    number: int
    task: TaskResult | None
    tests: list[TestResult]
    hidden: int  # tests not shown to the student


def sections(result: SubmissionResult) -> list[TaskSection]:
    """The result's tasks in order, each with its tests; stray tests get their own section."""
    numbers = sorted({t.task for t in result.tasks} | {t.task for t in result.tests})
    tasks = {t.task: t for t in result.tasks}
    out = []
    for number in numbers:
        tests = [t for t in result.tests if t.task == number]
        shown = [t for t in tests if t.visibility is not Visibility.HIDDEN]
        out.append(TaskSection(number=number, task=tasks.get(number), tests=shown, hidden=len(tests) - len(shown)))
    return out


def render_feedback(result: SubmissionResult, *, week_title: str) -> str:
    """The student's feedback page for ``result`` as one HTML document."""
    template = environment().get_template("feedback.html.j2")
    return template.render(result=result, week_title=week_title, sections=sections(result))
