"""A week whose hidden tests do, on purpose, what no real week may: grader-side work sized
by the student's values. The grader's bounds must hold whatever a hidden test does, so
they are proven against this suite, not against the six weeks (whose tests are reviewed
so they never do this; see docs/SECURITY.md).

Six tasks of 10 points, one test each, in this order:

1. ``refit``: scikit-learn's Perceptron built with ``ppn.get_params()`` and fitted in the
   grader (what week 1 once did: ``max_iter=2**32-1, tol=None`` fit for hours);
2. ``tree``: a tree read leaf by leaf, every leaf widened to int64 and concatenated
   (what week 4 does: a lazily generated tree of int8 leaves grew the grader by GBs);
3. ``count``: ``sum(range(count))``: a C loop that holds the interpreter;
4. ``table``: ``np.ones(size)`` allocated in the grader;
5. ``pause``: the grader sleeps ``pause`` seconds: blocked, no CPU spent;
6. ``output``: the grader prints ``line`` ``lines`` times, and checks that what a test
   prints goes to ``/dev/null`` (not to a file pytest would read back into memory).

``write_course`` lays it out as a course in a folder: ``Course(root).week("week09")``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

SUITE = '''import os
import time

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.linear_model import Perceptron as SkPerceptron


@pytest.mark.task(1)
@pytest.mark.points(10)
def test_refit(student):
    """ppn's settings, fitted by the grader, separate the blobs"""
    params = student.ppn.get_params()
    X, y = make_blobs(n_samples=80, centers=2, cluster_std=1.0, random_state=0)
    model = SkPerceptron(**params).fit(X, y)
    assert model.score(X, y) >= 0.9, "ppn's settings should separate the blobs"


def read_leaves(student, node, depth=0):
    if student.typename(node) == "Leaf":
        return [np.asarray(node.indices).astype(np.int64)]
    assert depth < 64, "the tree is too deep"
    return read_leaves(student, node.left, depth + 1) + read_leaves(student, node.right, depth + 1)


@pytest.mark.task(2)
@pytest.mark.points(10)
def test_tree(student):
    """every index is in exactly one leaf"""
    found = np.sort(np.concatenate(read_leaves(student, student.build_tree(16))))
    assert found.shape == (16,) and bool((found == np.arange(16)).all()), "every index should be in one leaf"


@pytest.mark.task(3)
@pytest.mark.points(10)
def test_count(student):
    """the grader sums the numbers below count"""
    n = student.count
    assert sum(range(n)) == n * (n - 1) // 2, "the sum should match"


@pytest.mark.task(4)
@pytest.mark.points(10)
def test_table(student):
    """the grader fills a table of size ones"""
    size = student.size
    assert int(np.ones(size, dtype=np.int8).sum()) == size, "the table should hold size ones"


@pytest.mark.task(5)
@pytest.mark.points(10)
def test_pause(student):
    """the grader waits pause seconds"""
    time.sleep(student.pause)


@pytest.mark.task(6)
@pytest.mark.points(10)
def test_output(student):
    """the grader prints line, lines times, to nowhere"""
    line, lines = student.line, student.lines
    for _ in range(lines):
        print(line)
    assert os.path.samefile("/proc/self/fd/1", os.devnull), "a test's output should go nowhere"
    assert os.path.samefile("/proc/self/fd/2", os.devnull), "a test's errors should go nowhere"
'''

HONEST = '''
import numpy as np
from sklearn.linear_model import Perceptron

ppn = Perceptron(max_iter=50, tol=1e-3, random_state=0)


class Leaf:
    def __init__(self, indices):
        self.indices = indices


class Node:
    def __init__(self, left, right):
        self.left, self.right = left, right


def build_tree(n, indices=None):
    indices = np.arange(n) if indices is None else indices
    if len(indices) <= 4:
        return Leaf(indices)
    half = len(indices) // 2
    return Node(build_tree(n, indices[:half]), build_tree(n, indices[half:]))


count = 1000
size = 1000
pause = 0.01
line = "a line of output"
lines = 100
'''

TASKS = ("refit", "tree", "count", "table", "pause", "output")


def notebook(*cells: str) -> bytes:
    """A week-9 notebook: the title, the six tasks' headings, then ``cells``."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Week 9: The grader's work (60 points)"),
                *(nbformat.v4.new_markdown_cell(f"## Task {n} (10 points): {name}")
                  for n, name in enumerate(TASKS, start=1)),
                *(nbformat.v4.new_code_cell(c) for c in cells)]
    return nbformat.writes(nb).encode()


def write_course(root: Path) -> Path:
    """The week as a course under ``root``: its reference notebook and hidden suite."""
    week = root / "source" / "week09"
    (week / "tests").mkdir(parents=True)
    (week / "week09.ipynb").write_bytes(notebook("### BEGIN SOLUTION\n" + HONEST + "\n### END SOLUTION"))
    (week / "tests" / "test_week09_work.py").write_text(SUITE)
    return root
