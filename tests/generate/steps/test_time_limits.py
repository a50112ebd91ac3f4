"""Every student notebook states the CPU budgets it is graded under (issue 37): the
``Limits`` grading uses, and the per-call budgets hidden tests set with ``call_timeout``,
read from one function (``autograder.testing.budgets.week_budgets``) by the generate step
``TimeLimits`` and by the service's week page (tests/service/test_service_messages.py)."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Limits
from autograder.generate import generate_week
from autograder.generate.steps import TimeLimits
from autograder.i18n.languages import framework_translations
from autograder.testing import budgets
from autograder.testing.budgets import LIMITS_CELL_ID, TaskCallBudget, WeekBudgets, week_budgets


def test_a_weeks_budgets_name_the_tasks_whose_tests_set_their_own_call_budget(course: Course) -> None:
    """Weeks 4 and 6 give some of task 3's calls more than the default 10 s; week 1 none."""
    defaults = {"cell_s": 30.0, "call_s": 10.0, "notebook_s": 120.0}
    assert week_budgets(course.week("week04")) == WeekBudgets(**defaults, tasks=(TaskCallBudget(3, 30.0),))
    assert week_budgets(course.week("week06")) == WeekBudgets(
        **defaults, tasks=(TaskCallBudget(3, 20.0), TaskCallBudget(3, 30.0)))
    assert week_budgets(course.week("week01")) == WeekBudgets(**defaults)
    # a marker equal to the default is no exception to tell
    assert week_budgets(course.week("week04"), Limits(call_timeout_s=30.0)).tasks == ()


def test_every_languages_student_notebook_states_the_limits_grading_uses(
        course: Course, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Week 6 copied, its limits changed where grading's come from: each language's student
    notebook says the new numbers, after the title cell, in the language's words."""
    shutil.copy(course.root / "course.toml", tmp_path / "course.toml")
    shutil.copytree(course.week("week06").source_dir, tmp_path / "source" / "week06")
    monkeypatch.setattr(budgets, "Limits", functools.partial(Limits, cell_timeout_s=45.0, call_timeout_s=12.0,
                                                              submission_timeout_s=150.0))
    week = Course(tmp_path).week("week06")
    generate_week(week)
    for language in week.languages.offered:
        translations = framework_translations(language)
        say = translations.gettext if translations is not None else str
        rules = say(TimeLimits.rules).format(cell=45, call=12, notebook=150)
        exceptions = [say(TimeLimits.exception).format(task=3, seconds=s, call=12) for s in (20, 30)]
        for path in (week.assignment_notebook_in(language), week.solution_notebook_in(language)):
            cells = nbformat.read(path, as_version=4).cells
            assert cells[1].id == LIMITS_CELL_ID, path
            assert cells[1].source == "\n".join([rules, "", *(f"- {e}" for e in exceptions)]), path
        if language != "en":
            assert rules != TimeLimits.rules.format(cell=45, call=12, notebook=150)


# another thread of the process writes to fd 2 (as the service's log handler does) while the
# hidden tests are collected for a week page's budgets; it says how many lines it wrote
WRITER_DURING_COLLECTION = """
import os, threading, time
from autograder.course import Course
from autograder.testing.hidden import collect
week = Course.locate().week("week04")
stop = threading.Event()
def writer():
    n = 0
    while not stop.is_set():
        os.write(2, b"line\\n"); n += 1; time.sleep(0.001)
    os.write(2, f"wrote {n}\\n".encode())
thread = threading.Thread(target=writer); thread.start()
time.sleep(0.05); collect(week.tests_dir); time.sleep(0.05)
stop.set(); thread.join()
"""


@pytest.mark.slow
def test_collecting_a_weeks_markers_loses_no_line_another_thread_writes() -> None:
    run = subprocess.run([sys.executable, "-c", WRITER_DURING_COLLECTION], capture_output=True, text=True,
                         timeout=120, check=True, cwd=Path(__file__).resolve().parents[3])
    lines = run.stderr.splitlines()
    assert lines[-1] == f"wrote {lines.count('line')}", f"{lines.count('line')} lines arrived; {lines[-1]}"
