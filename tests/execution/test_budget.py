"""CPU-time budgets in the sandbox, their wall-clock backstop, and the cause a student is
told (issue 37).

Code that computes is stopped by its CPU time; code that waits (a sleep, a read that never
returns) spends none, and is stopped by the backstop, ``wall_backstop`` times the limit.
A test that misses a name a stopped cell would have defined says which cell was stopped
and by what, not "your notebook does not define".
"""

from __future__ import annotations

import pytest

from autograder.exceptions import MissingName, StudentTimeout
from autograder.execution import Limits, SubmissionRun, ZygoteSlot
from autograder.grading.judge import describe_failure
from autograder.testing.student import Student

pytestmark = pytest.mark.sandbox

LIMITS = Limits(cell_timeout_s=1, call_timeout_s=1, submission_timeout_s=20, tests_timeout_s=20, wall_backstop=3)
SPIN = "import time\nstarted = time.process_time()\nwhile time.process_time() - started < 5:\n    pass\n"
BLOCK = "import os\nreading, writing = os.pipe()\nos.read(reading, 1)\n"  # nobody ever writes


@pytest.fixture
def run(slot: ZygoteSlot):
    runs: list[SubmissionRun] = []

    def start(*cells: str) -> SubmissionRun:
        slot.limits = LIMITS
        runs.append(SubmissionRun(slot, list(cells), LIMITS))
        runs[-1].execute()
        return runs[-1]

    yield start
    for earlier in runs:
        earlier.close()


def test_a_missing_name_is_blamed_on_the_cpu_limit_that_stopped_its_cell(run) -> None:
    notebook = run("x = 1", SPIN + "accuracies = {'pocket': 1.0}", "y = 2")
    assert notebook.messages == ["code cell 2 (`import time`) was stopped after 1 s of CPU time; it was skipped and "
                                 "the notebook run again without it"]
    student = Student(notebook)
    with pytest.raises(MissingName) as caught:
        student.accuracies  # noqa: B018 - the lookup itself must raise
    assert describe_failure(caught.value, cells=notebook.cells, dropped=notebook.dropped).reason == (
        "code cell 2 (`import time`) was stopped after 1 s of CPU time, so `accuracies` was never defined")
    with pytest.raises(MissingName) as caught:
        student.nowhere  # noqa: B018
    assert describe_failure(caught.value, cells=notebook.cells, dropped=notebook.dropped).reason == (
        "your notebook does not define `nowhere`")  # no cell assigns it: the notebook's own omission
    assert (student.x, student.y) == (1, 2)


def test_code_that_waits_is_stopped_by_the_wall_clock_backstop_and_told_so(run) -> None:
    notebook = run(BLOCK + "model = 1", "import time\ndef wait():\n    time.sleep(1e9)")
    assert notebook.messages == ["code cell 1 (`import os`) was stopped after 3 s of wall-clock time (a backstop for "
                                 "code that waits instead of computing); it was skipped and the notebook run again "
                                 "without it"]
    student = Student(notebook)
    with pytest.raises(MissingName) as caught:
        student.model  # noqa: B018
    assert describe_failure(caught.value, cells=notebook.cells, dropped=notebook.dropped).reason.startswith(
        "code cell 1 (`import os`) was stopped after 3 s of wall-clock time")
    with pytest.raises(StudentTimeout) as stopped:
        student.wait()
    assert stopped.value.feedback() == ("your code did not finish within 3 s of wall-clock time (a backstop for code "
                                        "that waits instead of computing)")
