"""Grade a week's mutants through the real grading path, within a time budget.

Every mutant is a submission like any student's: run in the sandbox, checked by the
hidden tests, in ``--jobs`` warm grader processes (``grading.parallel.grade_batch``, 1 included).
The reference notebook goes first under the same seed: when it loses a point the audit
says nothing about the tests and stops. The week's negative control follows
(``grading.negative_control``): when its student notebook, untouched or with its answers
emptied, earns a point, the audit refuses the week, as ``generate`` does. All submissions
of one audit share one seed (the control's its own), so
``pytest source/weekNN/tests --seed N --submission mutant.ipynb`` reproduces a survivor.
Mutants are handed out in ``grading_order`` until the next one would end past the budget;
the rest are counted as skipped, never silently dropped.

Each graded mutant is judged twice from the one grading: for strength (did it lose points
on its own task?) and for blame (did it lose points on another task's tests?). Blame costs
no extra grading: every test's result is already in the mutant's result. A loss on task
M's tests from a mutant of task N is accepted only when audit.toml declares that task M
builds on task N; it is judged only when the mutant's notebook ran to its end (a notebook
past its deadline loses every later task whatever the tests do).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from autograder.audit.audit_toml import FILENAME, AuditToml, BuildsOn, Equivalent, read_audit_toml
from autograder.audit.mutants import Generated, Mutant, generate_mutants, grading_order, mutant_notebook
from autograder.course import Week
from autograder.exceptions import CourseError
from autograder.execution import Limits
from autograder.generate.week import plan_week
from autograder.results import Status, SubmissionResult
from autograder.submission import Submission

DEFAULT_SEED = 11
DEFAULT_BUDGET_S = 95.0  # grading time: with start-up and the last mutants, one week stays under 2 minutes
# A mutant that hangs is killed by these (and counts as killed) rather than eating the budget;
# each is well above what the reference needs.
AUDIT_LIMITS = Limits(cell_timeout_s=10.0, submission_timeout_s=30.0, tests_timeout_s=30.0, restarts=1)
REFERENCE = "reference"


@dataclass(frozen=True)
class CrossLoss:
    """Points a mutant of one task lost on a test of another task."""

    test: str
    task: int  # the test's task
    lost: float
    declared: BuildsOn | None  # the audit.toml entry accepting it, if any


@dataclass(frozen=True)
class MutantOutcome:
    """A graded mutant: the points of its task it kept, the entry explaining it if any, and
    the points it lost on other tasks' tests (``blamed``: its notebook ran to its end, so
    those losses are the tests' doing)."""

    mutant: Mutant
    score: float
    max_score: float
    status: str  # the submission's status (graded, timeout, error...)
    equivalent: Equivalent | None = None
    cross: tuple[CrossLoss, ...] = ()
    blamed: bool = True

    @property
    def survived(self) -> bool:
        return self.score >= self.max_score - 1e-9


@dataclass
class Audit:
    """What one audit found."""

    week: Week
    seed: int
    budget_s: float
    generated: Generated
    outcomes: list[MutantOutcome] = field(default_factory=list)  # in grading order
    skipped: list[Mutant] = field(default_factory=list)  # not graded: past the budget
    stale: list[Equivalent] = field(default_factory=list)  # match no mutant of the notebook
    unneeded: list[Equivalent] = field(default_factory=list)  # match only killed mutants
    unused: list[BuildsOn] = field(default_factory=list)  # every mutant of `uses` graded, none cost `task`
    seconds: float = 0.0

    @property
    def killed(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if not o.survived]

    @property
    def survivors(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.survived]

    @property
    def unexplained(self) -> list[MutantOutcome]:
        return [o for o in self.survivors if o.equivalent is None]

    @property
    def cross_losses(self) -> list[tuple[MutantOutcome, CrossLoss]]:
        """Every point a mutant lost on another task's tests, declared or not."""
        return [(o, loss) for o in self.outcomes for loss in o.cross]

    @property
    def undeclared(self) -> list[tuple[MutantOutcome, CrossLoss]]:
        """Cross-task losses no ``[[builds_on]]`` entry accepts: blame failures."""
        return [(o, loss) for o, loss in self.cross_losses if loss.declared is None]

    @property
    def unblamed(self) -> list[MutantOutcome]:
        """Mutants whose notebook did not run to its end: not judged for blame."""
        return [o for o in self.outcomes if not o.blamed]

    @property
    def passed(self) -> bool:
        return not self.unexplained and not self.undeclared


def run_audit(week: Week, *, jobs: int = 0, budget_s: float = DEFAULT_BUDGET_S, seed: int = DEFAULT_SEED,
              limits: Limits = AUDIT_LIMITS, on_start: Callable[[int], None] | None = None,
              on_result: Callable[[SubmissionResult], None] | None = None) -> Audit:
    """Generate the week's mutants, grade as many as the budget allows, and judge them.
    ``on_start`` learns how many notebooks there are to grade (the mutants and the reference);
    ``jobs`` 0 grades one mutant per core."""
    started = time.monotonic()
    jobs = jobs or os.cpu_count() or 1
    generated = generate_mutants(week)
    explained = read_audit_toml(week.source_dir / FILENAME, (t.number for t in week.tasks if not t.manual))
    equivalents = explained.equivalents
    order = grading_order(generated.mutants, seed)
    # pytest and the grader: only when grading
    from autograder.grading.negative_control import control_submissions, findings, refusal
    from autograder.grading.parallel import grade_batch

    controls = control_submissions(week, plan_week(week).files[week.assignment_notebook])
    if on_start is not None:
        on_start(len(order) + 1 + len(controls))
    by_name = {m.name: m for m in order}
    handed: list[Mutant] = []
    durations: list[float] = []
    results: dict[str, SubmissionResult] = {}

    def submissions() -> Iterator[Submission]:
        yield Submission(origin=REFERENCE, key=REFERENCE, content=mutant_notebook(week, None), seed=seed)
        yield from controls
        for mutant in order:
            expected = sum(durations) / len(durations) / jobs if durations else 0.0
            if time.monotonic() - started + expected > budget_s or _reference_lost(results.get(REFERENCE)):
                return
            handed.append(mutant)
            yield Submission(origin=mutant.name, key=mutant.name, content=mutant_notebook(week, mutant), seed=seed)

    def collect(result: SubmissionResult) -> None:
        results[result.key] = result
        durations.append(result.duration_s)
        if on_result is not None:
            on_result(result)

    grade_batch(week, submissions(), jobs=jobs, limits=limits, on_result=collect)
    _check_reference(week, results.get(REFERENCE), seed)
    found = findings(week, list(results.values()))
    if found:
        raise CourseError(refusal(found))
    audit = Audit(week=week, seed=seed, budget_s=budget_s, generated=generated,
                  skipped=[m for m in order if m not in handed])
    by_key = {e.key: e for e in equivalents}
    audit.outcomes = [judge(m, results[m.name], explained, by_key.get(m.key)) for m in handed]
    keys = {m.key for m in by_name.values()}
    used = {o.equivalent.key for o in audit.survivors if o.equivalent is not None}
    graded = {o.mutant.key for o in audit.outcomes}
    audit.stale = [e for e in equivalents if e.key not in keys]
    audit.unneeded = [e for e in equivalents if e.key in keys and e.key in graded and e.key not in used]
    audit.unused = _unused(explained, audit)
    audit.seconds = time.monotonic() - started
    return audit


def judge(mutant: Mutant, result: SubmissionResult, explained: AuditToml,
          equivalent: Equivalent | None) -> MutantOutcome:
    """A graded mutant judged for strength (the points of its own task it kept) and, when
    its notebook ran to its end, for blame (the points it lost on other tasks' tests)."""
    task = result.task(mutant.task)
    blamed = result.status is Status.GRADED
    return MutantOutcome(mutant=mutant, score=task.score, max_score=task.max_score, status=result.status.value,
                   equivalent=equivalent, cross=cross_losses(mutant, result, explained) if blamed else (),
                   blamed=blamed)


def cross_losses(mutant: Mutant, result: SubmissionResult, explained: AuditToml) -> tuple[CrossLoss, ...]:
    """The tests of other tasks ``mutant``'s result lost points on (the reference, graded
    first, earned every point: any loss is the mutant's doing), each with the
    ``[[builds_on]]`` entry that accepts it, if any."""
    return tuple(CrossLoss(test=t.name, task=t.task, lost=round(t.max_score - t.score, 6),
                           declared=explained.declared(t.task, mutant.task))
                 for t in result.tests if t.task != mutant.task and t.score < t.max_score - 1e-9)


def _unused(explained: AuditToml, audit: Audit) -> list[BuildsOn]:
    """``[[builds_on]]`` entries nothing needed: every mutant of task ``uses`` was graded and
    judged for blame, and none lost a point on task ``task``'s tests (with mutants left
    ungraded, an entry may be needed by one of those: it is kept quiet)."""
    judged = {o.mutant.name for o in audit.outcomes if o.blamed}
    needed = {loss.declared for _, loss in audit.cross_losses if loss.declared is not None}
    return [entry for entry in explained.builds_on if entry not in needed
            and all(m.name in judged for m in audit.generated.mutants if m.task == entry.uses)]


def _reference_lost(result: SubmissionResult | None) -> bool:
    """Whether the reference, once graded, lost a point (then no more mutants are handed out)."""
    return result is not None and any(not t.manual and t.score < t.max_score - 1e-9 for t in result.tasks)


def _check_reference(week: Week, result: SubmissionResult | None, seed: int) -> None:
    """Refuse to judge tests that fail the reference: every mutant would look killed."""
    if result is None:
        raise CourseError(f"{week.name}: the reference notebook was not graded")
    if _reference_lost(result):
        lost = [t for t in result.tasks if not t.manual and t.score < t.max_score - 1e-9]
        failed = [t.name for t in result.tests if t.score < t.max_score]
        raise CourseError(
            f"{week.name}: the reference solution loses points under the audit's seed {seed} "
            f"(task(s) {', '.join(str(t.task) for t in lost)}; failing: {', '.join(failed) or 'none'}; "
            f"status {result.status.value}; {'; '.join(result.messages)}): fix the hidden tests or the "
            f"reference first (pytest {week.tests_dir} --seed {seed})")
