"""Warm workers, no leaks: what one submission does to numpy, scikit-learn or its working
folder is gone for the next submission forked from the same zygote."""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.course import Course
from autograder.execution import Limits, Sandboxed, SubmissionRun, ZygoteSlot
from autograder.grading.grader import grade
from autograder.grading.parallel import grade_parallel
from autograder.results import Status
from autograder.submission import Submission
from autograder.testing.student import Student
from tests.helpers import notebook_bytes

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "week01"

MUTATE = """
import os, sys
import numpy as np, sklearn, sklearn.linear_model
np.random.seed(123)
sklearn.set_config(assume_finite=True)
np.mean = lambda *args, **kwargs: 42.0
np.dot = lambda a, b: 0.0
np.set_printoptions(precision=1)
np.linalg.norm = lambda x: 0.0
np.typecodes['AllFloat'] = ''  # a module-level dict, changed in place
os.environ['LEAKED'] = '1'
sklearn.linear_model.Perceptron = None
open('leftover.txt', 'w').write('from the previous submission')
"""

PROBE = """
import os
import numpy as np, sklearn
from sklearn.linear_model import Perceptron
draw = float(np.random.random())
assume_finite = sklearn.get_config()['assume_finite']
mean = float(np.mean([1.0, 3.0]))
dot = float(np.dot([1.0, 2.0], [3.0, 4.0]))
norm = float(np.linalg.norm([3.0, 4.0]))
precision = np.get_printoptions()['precision']
float_codes = np.typecodes['AllFloat']
leaked = 'LEAKED' in os.environ
perceptron = Perceptron is not None
leftover = os.path.exists('leftover.txt')
files = sorted(os.listdir('.'))
"""

NAMES = ("draw", "assume_finite", "mean", "dot", "norm", "precision", "float_codes", "leaked", "perceptron", "leftover", "files")


def probe(slot: ZygoteSlot, *cells: str) -> dict[str, object]:
    """Run ``cells`` as one submission's notebook in a worker of ``slot``; read the probe's names."""
    run = SubmissionRun(slot, list(cells), Limits())
    run.execute()
    try:
        assert run.messages == [], run.messages  # every cell ran through
        student = Student(run)
        return {name: getattr(student, name) for name in NAMES if name in student}
    finally:
        run.close()


def test_module_state_and_files_do_not_reach_the_next_submission(slot: ZygoteSlot):
    before = probe(slot, PROBE)
    zygote = slot.zygote
    mutated = probe(slot, MUTATE, PROBE)
    after = probe(slot, PROBE)
    assert slot.zygote is zygote and zygote is not None and zygote.alive  # one zygote throughout
    assert mutated["mean"] == 42.0 and mutated["leftover"] is True  # the mutations did happen, in their worker
    assert after == before
    assert after["draw"] != np.random.RandomState(123).random_sample()
    assert (after["assume_finite"], after["mean"], after["dot"], after["norm"]) == (False, 2.0, 11.0, 5.0)
    assert after["float_codes"] and after["precision"] == 8
    assert after["leaked"] is False and after["perceptron"] is True and after["leftover"] is False


def test_a_correct_notebook_after_a_mutating_one_keeps_full_marks(course: Course, slot: ZygoteSlot):
    correct = (FIXTURES / "correct_fresh_notebook.ipynb").read_bytes()
    notebook = nbformat.reads(correct.decode(), as_version=4)
    cell = nbformat.v4.new_code_cell(MUTATE)
    cell.pop("id")  # the fixture is nbformat 4.4: no cell ids
    notebook.cells.append(cell)
    mutating = nbformat.writes(notebook).encode()
    results = grade(course.week("week01"), [
        Submission(origin="mutating.ipynb", key="mutating", content=mutating),
        Submission(origin="correct.ipynb", key="correct", content=correct),
    ], isolation=Sandboxed(slot=slot))
    assert results[1].status is Status.GRADED
    assert all(task.score == task.max_score for task in results[1].tasks if not task.manual)


# A correct notebook that keeps its Perceptron only while its pid, its threads' ids and its
# children's pids look like those of a worker forked first: anything the batch before it
# did to the sandbox's pid counter would cost it both tasks.
PID_SENSITIVE = """
import os, threading
kept = Perceptron
ids = []
spy = threading.Thread(target=lambda: ids.append(threading.get_native_id()))
spy.start(); spy.join()
child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
if os.getpid() > 12 or ids[0] > 12 or child > 12:
    Perceptron = None
"""

# moves the pid counter: threads and children, then ends
SPINNER = """
import os, threading
for _ in range(100):
    t = threading.Thread(target=int); t.start(); t.join()
for _ in range(30):
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
"""


def test_a_regrade_alone_scores_exactly_what_the_batch_gave(course: Course):
    """Each worker is pid 1 of its own PID namespace: where a submission sits in the batch
    cannot change what it sees, so its regrade alone (same seed) gives the same result,
    test by test."""
    week = course.week("week01")
    nb = nbformat.reads((FIXTURES / "correct_fresh_notebook.ipynb").read_bytes(), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PID_SENSITIVE))
    target = Submission(origin="target", key="target", content=nbformat.writes(nb).encode(), seed=7)
    spinners = [Submission(origin=f"spin{i}", key=f"spin{i}", content=notebook_bytes(SPINNER), seed=1)
                for i in range(2)]
    in_batch = grade_parallel(week, [*spinners, target], jobs=1)[-1]
    alone = grade_parallel(week, [target], jobs=1)[0]
    assert alone.score == 60.0, alone.messages
    assert [(t.name, t.score) for t in in_batch.tests] == [(t.name, t.score) for t in alone.tests]
