"""The per-student feedback page: what passed, what failed and why, points per task.

The same HTML goes into Moodle's feedback.zip, so it is one self-contained file: inline
CSS, no scripts, no external assets. Tests with ``hidden`` visibility count towards the
score but are not described; the page says how many there were.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.course import Week
from autograder.i18n.languages import FRAMEWORK_SOURCE_LANGUAGE, framework_translations, translations
from autograder.i18n.runtime import untranslated
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


def render_feedback(result: SubmissionResult, *, week_title: str, week: Week | None = None) -> str:
    """The student's feedback page for ``result`` as one HTML document, in the result's
    language: the page's own words from the autograder's catalog and, given the ``week``,
    its title from the week's (``week_title`` is the fallback for results read back alone)."""
    language = result.language or (week.languages.source if week is not None else FRAMEWORK_SOURCE_LANGUAGE)
    if week is not None:
        language = week.languages.pick(language)
        active = translations(week, language)
        week_title = week.label(active)
    else:
        active = framework_translations(language)
    template = environment().get_template("feedback.html.j2")
    return template.render(result=result, week_title=week_title, sections=sections(result), language=language,
                           _=active.gettext if active is not None else untranslated)
