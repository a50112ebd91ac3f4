"""Grade a week's mutants through the real grading path, within a time budget.

Every mutant is a submission like any student's: run in the sandbox, checked by the
hidden tests, in ``--jobs`` warm grader processes (``grade_parallel``) or one (``grade``).
The reference notebook goes first under the same seed: when it loses a point the audit
says nothing about the tests and stops. All submissions of one audit share one seed, so
``pytest source/weekNN/tests --seed N --submission mutant.ipynb`` reproduces a survivor.
Mutants are handed out in ``grading_order`` until the next one would end past the budget;
the rest are counted as skipped, never silently dropped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from autograder.audit.equivalents import FILENAME, Equivalent, read_equivalents
from autograder.audit.mutants import Generated, Mutant, generate_mutants, grading_order, mutant_notebook
from autograder.course import Week
from autograder.exceptions import CourseError
from autograder.execution import Limits, Sandboxed
from autograder.results import SubmissionResult
from autograder.submission import Submission

DEFAULT_SEED = 11
DEFAULT_BUDGET_S = 95.0  # grading time: with start-up and the last mutants, one week stays under 2 minutes
# A mutant that hangs is killed by these (and counts as killed) rather than eating the budget;
# each is well above what the reference needs.
AUDIT_LIMITS = Limits(cell_timeout_s=10.0, submission_timeout_s=30.0, tests_timeout_s=30.0, restarts=1)
REFERENCE = "reference"


@dataclass(frozen=True)
class Outcome:
    """A graded mutant: the points of its task it kept, and the entry explaining it if any."""

    mutant: Mutant
    score: float
    max_score: float
    status: str  # the submission's status (graded, timeout, error...)
    equivalent: Equivalent | None = None

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
    outcomes: list[Outcome] = field(default_factory=list)  # in grading order
    skipped: list[Mutant] = field(default_factory=list)  # not graded: past the budget
    stale: list[Equivalent] = field(default_factory=list)  # match no mutant of the notebook
    unneeded: list[Equivalent] = field(default_factory=list)  # match only killed mutants
    seconds: float = 0.0

    @property
    def killed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.survived]

    @property
    def survivors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.survived]

    @property
    def unexplained(self) -> list[Outcome]:
        return [o for o in self.survivors if o.equivalent is None]

    @property
    def passed(self) -> bool:
        return not self.unexplained


def run_audit(week: Week, *, jobs: int = 0, budget_s: float = DEFAULT_BUDGET_S, seed: int = DEFAULT_SEED,
              limits: Limits = AUDIT_LIMITS, on_start: Callable[[int], None] | None = None,
              on_result: Callable[[SubmissionResult], None] | None = None) -> Audit:
    """Generate the week's mutants, grade as many as the budget allows, and judge them.
    ``on_start`` learns how many notebooks there are to grade (the mutants and the reference);
    ``jobs`` 0 grades one mutant per core."""
    started = time.monotonic()
    jobs = jobs or os.cpu_count() or 1
    generated = generate_mutants(week)
    equivalents = read_equivalents(week.source_dir / FILENAME)
    order = grading_order(generated.mutants, seed)
    if on_start is not None:
        on_start(len(order) + 1)
    by_name = {m.name: m for m in order}
    handed: list[Mutant] = []
    durations: list[float] = []
    results: dict[str, SubmissionResult] = {}

    def submissions() -> Iterator[Submission]:
        yield Submission(origin=REFERENCE, key=REFERENCE, content=mutant_notebook(week, None), seed=seed)
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

    _grade(week, submissions(), jobs=jobs, limits=limits, on_result=collect)
    _check_reference(week, results.get(REFERENCE), seed)
    audit = Audit(week=week, seed=seed, budget_s=budget_s, generated=generated,
                  skipped=[m for m in order if m not in handed])
    by_key = {e.key: e for e in equivalents}
    for mutant in handed:
        result = results[mutant.name]
        task = result.task(mutant.task)
        audit.outcomes.append(Outcome(mutant=mutant, score=task.score, max_score=task.max_score,
                                      status=result.status.value, equivalent=by_key.get(mutant.key)))
    keys = {m.key for m in by_name.values()}
    used = {o.equivalent.key for o in audit.survivors if o.equivalent is not None}
    graded = {o.mutant.key for o in audit.outcomes}
    audit.stale = [e for e in equivalents if e.key not in keys]
    audit.unneeded = [e for e in equivalents if e.key in keys and e.key in graded and e.key not in used]
    audit.seconds = time.monotonic() - started
    return audit


def _grade(week: Week, submissions: Iterator[Submission], *, jobs: int, limits: Limits,
           on_result: Callable[[SubmissionResult], None]) -> None:
    if jobs > 1:
        from autograder.grading.parallel import grade_parallel

        grade_parallel(week, submissions, jobs=jobs, limits=limits, on_result=on_result)
    else:
        from autograder.grading.grader import grade

        grade(week, submissions, isolation=Sandboxed(limits), on_result=on_result)


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
