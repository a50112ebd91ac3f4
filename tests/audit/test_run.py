"""An audit's judgement of one graded mutant (autograder/audit/run.py): blame for a
notebook that ran to its end only."""

from __future__ import annotations

from autograder import results
from autograder.audit.audit_toml import AuditToml, BuildsOn
from autograder.audit.mutants import Mutant
from autograder.audit.run import judge
from autograder.results import Status, SubmissionResult, TaskResult


def test_blame_is_judged_only_for_a_notebook_that_ran_to_its_end() -> None:
    mutant = Mutant(number=1, task=1, cell=2, operator="constant", description="1 -> 2", line="return x + 1",
                    mutated="return x + 2", diff="", source="")
    declared = AuditToml(builds_on=(BuildsOn(number=1, task=3, uses=1, reason="task 3 builds on task 1"),))

    def result(status: Status) -> SubmissionResult:
        tests = [results.TestResult("test_one", 1, 0.0, 4.0, ""), results.TestResult("test_two", 2, 0.0, 5.0, ""),
                 results.TestResult("test_two_more", 2, 3.0, 3.0, ""),
                 results.TestResult("test_three", 3, 1.0, 6.0, "")]  # (imported by module: not a test class)
        return SubmissionResult(submission="m", key="m", status=status, tests=tests,
                                tasks=[TaskResult(1, 0.0, 4.0), TaskResult(2, 3.0, 8.0), TaskResult(3, 1.0, 6.0)])

    graded = judge(mutant, result(Status.GRADED), declared, None)
    assert graded.blamed and not graded.survived
    assert [(c.test, c.task, c.lost, c.declared is not None) for c in graded.cross] == [
        ("test_two", 2, 5.0, False), ("test_three", 3, 5.0, True)]  # its own task's loss is not blame
    late = judge(mutant, result(Status.TIMEOUT), declared, None)  # past the deadline: every later task lost
    assert not late.blamed and late.cross == ()
