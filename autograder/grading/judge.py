"""From test outcomes to a result: feedback text, points per task, the submission's status.

Feedback is built from the test's docstring and a student-safe reason. Assertion
rewriting is off during grading, so an ``AssertionError`` carries only the message the
instructor wrote, never the compared values.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autograder.course import Week
from autograder.exceptions import (
    MissingName,
    NotAttempted,
    NotPlainData,
    ProtocolError,
    StudentCodeError,
    StudentTimeout,
)
from autograder.execution.heard import Heard
from autograder.i18n.languages import translations
from autograder.i18n.runtime import _, speaking
from autograder.notebook import cell_line, declared_language
from autograder.results import Status, SubmissionResult, TaskResult, TestResult
from autograder.submission import Submission
from autograder.testing.hidden import HiddenTest


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    reason: str = ""  # student-safe
    not_attempted: bool = False
    timed_out: bool = False  # the student's code ran past a time limit


def describe_failure(exc: BaseException, *, stubs_left: bool = False, heard: Heard | None = None,
                     cells: list[str] | None = None, dropped: Mapping[int, str] | None = None) -> CheckOutcome:
    """A student-safe reason for a failed test, in the grader's words only: a fixed
    sentence, the name the test asked for, a built-in exception type, the instructor's
    assertion message. With ``stubs_left`` (a cell of the notebook still raised
    NotImplementedError), a missing name counts as not attempted: the stub stopped the cell
    before it defined the name. An assertion message that repeats a word the test sent to
    the student's code (``heard``) outside the instructor's own text (``message_template``)
    is replaced by a fixed sentence. Where the student's code
    raised is quoted from ``cells``, the grader's copy of the notebook, never the
    exception's message (it could repeat the test's hidden inputs). A missing name that a
    cell left out of the run (``dropped``: its 1-based index and what stopped it) assigns
    is blamed on what stopped that cell, not on the notebook."""
    if isinstance(exc, NotAttempted):
        return CheckOutcome(False, exc.feedback(), not_attempted=True)
    if isinstance(exc, MissingName) and dropped:
        cause = next((why for index, why in sorted(dropped.items())
                      if cells is not None and exc.name in assigned_names(cells[index - 1])), None)
        if cause is not None:
            return CheckOutcome(False, _("{cause}, so `{name}` was never defined").format(cause=cause, name=exc.name))
    if isinstance(exc, MissingName) and stubs_left:
        return CheckOutcome(False, _("{reason} (a cell still raises NotImplementedError)").format(
            reason=exc.feedback()), not_attempted=True)
    if isinstance(exc, StudentTimeout):
        return CheckOutcome(False, exc.feedback(), timed_out=True)
    if isinstance(exc, StudentCodeError):
        site = cell_line(cells or [], exc.where)
        if site is None:
            return CheckOutcome(False, exc.feedback())
        return CheckOutcome(False, _("{reason} at code cell {cell}, line {line}: `{text}`").format(
            reason=exc.feedback(), cell=site[0], line=site[1], text=site[2]))
    if isinstance(exc, (MissingName, NotPlainData)):
        return CheckOutcome(False, exc.feedback())
    if isinstance(exc, AssertionError):
        text = str(exc).strip()
        message = text.splitlines()[0] if text else ""
        if message and heard is not None:
            template = message_template(exc)
            if heard.disclosed_in(message, None if template is None else _(template)):  # the line shown
                message = ""
        return CheckOutcome(False, message or _("the check did not hold"))
    if isinstance(exc, ProtocolError):
        return CheckOutcome(False, _("your code's answer could not be read as plain data"))
    return CheckOutcome(False, _("the check could not be completed with what your code returned ({name})").format(
        name=type(exc).__name__))


def assigned_names(source: str) -> frozenset[str]:
    """The names a cell binds in the notebook's namespace: assignments, ``def``, ``class``,
    imports, loop and ``with`` targets, outside function and class bodies. Empty for a cell
    that does not parse (IPython syntax): then no cell is blamed, and the plain message stands."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # what a body binds is the function's or the class's own
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        if not isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            pending.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def message_template(exc: AssertionError) -> str | None:
    """The instructor's text an assertion's message was made from: the literal of
    ``_("...")``, alone or ``.format``-ted, in the ``assert`` statement that raised
    ``exc``, read from the hidden test's source (every hidden-test message is written so:
    tests/test_translatable_feedback.py). ``None`` for any other message, or when the
    statement cannot be told: then every word of the message counts as filled in."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    try:
        stat = os.stat(path)
    except OSError:
        return None
    found = [literal for first, last, literal in _asserts(path, stat.st_mtime_ns, stat.st_size)
             if first <= tb.tb_lineno <= last]
    return found[0] if len(found) == 1 else None


@functools.lru_cache(maxsize=64)
def _asserts(path: str, _mtime_ns: int, _size: int) -> tuple[tuple[int, int, str | None], ...]:
    """Every ``assert`` of a module: its first and last line and its message's literal
    (``None`` unless the message is ``_("...")`` or ``_("...").format(...)``). Cached per
    file version: a grader meets the same few test files again and again."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    return tuple((node.lineno, node.end_lineno or node.lineno, _translated_literal(node.msg))
                 for node in ast.walk(tree) if isinstance(node, ast.Assert))


def _translated_literal(node: ast.expr | None) -> str | None:
    """The literal of ``_("...")`` or ``_("...").format(...)``; ``None`` for anything else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        node = node.func.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" \
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def build_result(
    *,
    week: Week,
    tests: list[HiddenTest],
    outcomes: dict[str, CheckOutcome],
    base: SubmissionResult,
    timed_out: bool,
) -> SubmissionResult:
    """Fill ``base`` (identity, hashes, messages) with test and task results and a status.

    The tests are listed in task order (in collection order within a task): a week's test
    files need not follow its tasks, and every reader of a result expects task 1 first."""
    test_results = []
    for test in sorted(tests, key=lambda t: t.task):
        outcome = outcomes.get(test.nodeid, CheckOutcome(False, _("the test did not run")))
        text = (_("{check}: passed") if outcome.passed else _("{check}: failed")).format(check=_(test.description))
        if outcome.reason and not outcome.passed:
            text += f" ({outcome.reason})"
        test_results.append(
            TestResult(
                name=test.name,
                task=test.task,
                score=test.points if outcome.passed else 0.0,
                max_score=test.points,
                output=text,
                not_attempted=outcome.not_attempted,
                timed_out=outcome.timed_out,
            )
        )
    tasks = []
    for task in week.tasks:
        mine = [t for t in test_results if t.task == task.number]
        tasks.append(
            TaskResult(
                task=task.number,
                title=_(task.title),
                score=0.0 if task.manual else round(sum(t.score for t in mine), 6),
                max_score=task.points,
                manual=task.manual,
                not_attempted=bool(mine) and all(t.not_attempted for t in mine),
            )
        )
    base.tests = test_results
    base.tasks = tasks
    autograded = [t for t in tasks if not t.manual]
    if timed_out:
        base.status = Status.TIMEOUT
    elif autograded and all(t.not_attempted for t in autograded):
        base.status = Status.NOT_ATTEMPTED
    else:
        base.status = Status.GRADED
    return base


def base_result(week: Week, submission: Submission) -> SubmissionResult:
    """Who and what a result is about (identity, hashes, grader version), status ``error``
    until grading says otherwise: every result starts here."""
    return SubmissionResult(
        submission=submission.origin, key=submission.key, status=Status.ERROR, week=week.name,
        participant=submission.participant, submission_sha256=submission.sha256,
        tests_sha256=week.tests_sha256, grader_version=week.grader_version,
    )


def lost_result(week: Week, submission: Submission, why: str) -> SubmissionResult:
    """The result of a submission whose grading process (or cluster worker) was lost: status
    ``error``, zero for every task, and a message saying it was not graded and why."""
    base = base_result(week, submission)
    base.messages.append(f"grading stopped unexpectedly while this submission was graded ({why}); "
                         "it was not graded: grade it again")
    return empty_result(week, base)


def overrun_result(week: Week, submission: Submission, check: str, *, cpu: bool, seconds: float) -> SubmissionResult:
    """The result of a submission whose hidden check ``check`` made the grader's own work
    run past its wall (or, with ``cpu``, CPU) time of ``seconds`` (the parent stopped that
    grader process): status ``error``, zero for every task, and a message the student can
    act on, in the notebook's language (``check`` was named in it by the grader process)."""
    base = base_result(week, submission)
    base.language = week.languages.pick(declared_language(submission.content or b""))
    with speaking(translations(week, base.language)):
        budget = (_("CPU time limit of {seconds} s") if cpu else _("time limit of {seconds} s")).format(
            seconds=f"{seconds:g}")
        base.messages.append(_("the check \"{check}\" made the grader itself work past its {budget}, so grading this "
                               "notebook was stopped and it was not graded: make sure the objects and settings "
                               "your code gives the checks are the ones the task asks for").format(
                                   check=check, budget=budget))
        return empty_result(week, base)


def empty_result(week: Week, base: SubmissionResult) -> SubmissionResult:
    """Zero for every task: a submission that could not be run at all."""
    base.tasks = [TaskResult(t.number, 0.0, t.points, manual=t.manual, title=_(t.title)) for t in week.tasks]
    return base
