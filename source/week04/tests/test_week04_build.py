"""Task 2: building the K-D tree.

The tree stays in the worker; ``read_tree`` reads it back in one request (``student.walk``),
bounded by the number of points, so structure is inspected on small trees only. Every rule of the
notebook's Part B is checked on the copy read back: the split dimension is depth % n_features,
the split value is ``np.median`` of that dimension over the node's points, left holds
values < split and right values >= split, internal nodes hold more than leaf_size points,
and a leaf holds more than leaf_size points only when the split would leave a side empty.
The order of indices inside a leaf is free.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytest

from autograder.i18n import _

MAX_DEPTH = 64  # far deeper than any tree of these sizes: deeper means a cycle or no progress


class Leaf(NamedTuple):
    indices: np.ndarray


class Node(NamedTuple):
    dim: int
    split: float
    left: "Tree"
    right: "Tree"


Tree = Leaf | Node


def read_tree(student, root: object, n: int) -> Tree:
    """The remote tree of a build over ``n`` points as local ``Node``/``Leaf`` tuples,
    checking the types on the way. (Messages say "leaf" and "internal node", never the
    class names: the worker sends those as type names, and feedback drops a message that
    repeats a string the worker sent.)

    What the grader reads is bounded by ``n``, never by the tree the worker chose to
    return: the worker's walk stops after ``2 n + 1`` nodes or one index past ``n`` (one
    request), the grader accepts at most ``2 n`` nodes and ``n`` row indices
    in all, each leaf's indices checked for count and type before they are widened, so a
    tree of many or huge leaves fails here instead of filling the grader's memory."""
    budget = {"nodes": 2 * n, "indices": n}
    walked = student.walk(root, {"KDNode": ["dim", "split"], "KDLeaf": ["indices"]}, {"KDNode": ["left", "right"]},
                          max_nodes=2 * n, max_depth=MAX_DEPTH, max_items=n)

    def read(depth: int) -> Tree:
        kind, values = next(walked)
        assert depth <= MAX_DEPTH, _("the tree is far deeper than a median split allows (does each split make progress?)")
        budget["nodes"] -= 1
        assert budget["nodes"] >= 0, _("the tree has more nodes than a tree over these points can have (every leaf should hold at least one point)")
        assert kind in ("KDNode", "KDLeaf"), _("build_kdtree should build the tree from the node and leaf classes the notebook gives")
        if kind == "KDLeaf":
            (fetched,) = values
            assert isinstance(fetched, (list, tuple, np.ndarray)), _("a leaf's indices should be a 1-D array of integer row indices")
            assert len(fetched) <= budget["indices"], _("the leaves hold more indices in all than X has rows: every row index of X should be in exactly one leaf")
            indices = np.asarray(fetched)
            assert indices.ndim == 1 and (indices.size == 0 or np.issubdtype(indices.dtype, np.integer)), _("a leaf's indices should be a 1-D array of integer row indices")
            budget["indices"] -= indices.size
            return Leaf(indices.astype(np.int64))
        dim, split = values
        assert isinstance(dim, int) and not isinstance(dim, bool), _("an internal node's dim should be an integer")
        assert isinstance(split, (int, float)) and not isinstance(split, bool), _("an internal node's split should be a number")
        left = read(depth + 1)
        return Node(dim, float(split), left, read(depth + 1))

    return read(0)


def leaves(tree: Tree) -> list[np.ndarray]:
    if isinstance(tree, Leaf):
        return [tree.indices]
    return leaves(tree.left) + leaves(tree.right)


def check_rules(tree: Tree, X: np.ndarray, leaf_size: int) -> None:
    """Assert every building rule on a tree read back from the worker."""
    all_indices = np.sort(np.concatenate(leaves(tree)))
    assert len(all_indices) == len(X) and bool((all_indices == np.arange(len(X))).all()), _("every row index of X should be in exactly one leaf")
    check_subtree(tree, X, leaf_size, depth=0)


def check_subtree(tree: Tree, X: np.ndarray, leaf_size: int, depth: int) -> None:
    """Check the rules at ``tree`` (at ``depth``), then below it: the violation nearest the
    root is the one reported."""
    expected_dim = depth % X.shape[1]
    if isinstance(tree, Leaf):
        assert len(tree.indices) > 0, _("a leaf should never be empty")
        if len(tree.indices) > leaf_size:
            values = X[tree.indices, expected_dim]
            assert bool((values >= np.median(values)).all()), _("a leaf may hold more than leaf_size points only when splitting it would leave one side empty")
        return
    assert tree.dim == expected_dim, _("each node should split on dimension depth % n_features (the root has depth 0)")
    left, right = np.concatenate(leaves(tree.left)), np.concatenate(leaves(tree.right))
    indices = np.concatenate([left, right])
    assert len(indices) > leaf_size, _("a node holding at most leaf_size points should be a leaf")
    median = float(np.median(X[indices, tree.dim]))
    assert math.isclose(tree.split, median, rel_tol=1e-12, abs_tol=1e-12), _("each split value should be the median (np.median) of the node's points in the split dimension")
    assert bool((X[left, tree.dim] < tree.split).all()), _("the left subtree should hold only points whose value in the split dimension is < split")
    assert bool((X[right, tree.dim] >= tree.split).all()), _("the right subtree should hold only points whose value in the split dimension is >= split")
    check_subtree(tree.left, X, leaf_size, depth + 1)
    check_subtree(tree.right, X, leaf_size, depth + 1)


def is_partition_into_small_leaves(tree: Tree, n: int, leaf_size: int) -> bool:
    """Whether the leaves hold every row index once, none more than ``leaf_size``: what any
    tree built by the rules is on points that differ in every coordinate."""
    parts = leaves(tree)
    return all(len(part) <= leaf_size for part in parts) and sorted(np.concatenate(parts).tolist()) == list(range(n))


@pytest.mark.task(2)
@pytest.mark.points(6)
def test_worked_example(student, worked_example):
    """The notes' example (10 points, leaf_size=2): the root splits at x1 = 5.5, its children at x2 = 4 and x2 = 8."""
    root = student.build_kdtree(worked_example, leaf_size=2)
    assert student.typename(root) == "KDNode", _("the root of the example tree should be a KDNode")
    assert root.dim == 0 and math.isclose(root.split, 5.5), _("the example's root should split on x1 (dim 0) at the median 5.5")
    left, right = root.left, root.right
    assert student.typename(left) == "KDNode" and student.typename(right) == "KDNode", _("both children of the example's root should be internal nodes, not leaves")
    assert left.dim == 1 and math.isclose(left.split, 4.0), _("the example's left child (x1 < 5.5) should split on x2 (dim 1) at 4")
    assert right.dim == 1 and math.isclose(right.split, 8.0), _("the example's right child (x1 >= 5.5) should split on x2 (dim 1) at 8")


@pytest.mark.task(2)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, rng):
    """build_kdtree leaves the caller's X as it was (no in-place sorting of the points), while building a tree of it."""
    # Points without duplicates: a build that cannot handle duplicates is charged in the
    # duplicates test, not here.
    X = rng.normal(size=(30, 2))
    root = unchanged_inputs("build_kdtree", student.build_kdtree, X=X, leaf_size=2)
    assert is_partition_into_small_leaves(read_tree(student, root, len(X)), len(X), 2), _(
        "build_kdtree left X as it was, but this check counts only when it also builds the tree: "
        "on distinct points every row index in exactly one leaf of at most leaf_size points"
    )


@pytest.mark.task(2)
@pytest.mark.points(14)
def test_building_rules(student, float_sets, grid_sets, rng):
    """On random data with duplicates (1 to 3 features, leaf_size 1 to 3): alternating dimensions, median splits, left < split <= right, leaf sizes."""
    cases = [
        (grid_sets[0][0][:40], 1),
        (grid_sets[1][0][:40], 2),
        (float_sets[0][0][:50], 2),
        (float_sets[1][0][:45], 3),
        (rng.integers(0, 8, size=(25, 1)).astype(float), 2),
    ]
    for X, leaf_size in cases:
        check_rules(read_tree(student, student.build_kdtree(X, leaf_size=leaf_size), len(X)), X, leaf_size)


@pytest.mark.task(2)
@pytest.mark.points(8)
def test_duplicates_end_in_a_leaf(student, rng):
    """Identical points end together in one leaf instead of recursing forever: 50 identical points make a single leaf, and 3 points repeated 20 times make 3 leaves, one per point."""
    same = np.tile([[2.5, -1.0]], (50, 1))
    tree = read_tree(student, student.build_kdtree(same, leaf_size=2), len(same))
    assert isinstance(tree, Leaf), _("50 identical points cannot be split (one side would be empty): the tree should be a single leaf")
    assert sorted(tree.indices.tolist()) == list(range(50)), _("the single leaf should hold all the indices")
    # Three distinct points, 20 copies each, in 3-D: the median splits separate the three
    # points, and each one's copies then cannot be split.
    repeated = rng.permutation(np.repeat(rng.normal(size=(3, 3)), 20, axis=0))
    tree = read_tree(student, student.build_kdtree(repeated, leaf_size=2), len(repeated))
    copies = sorted(np.flatnonzero((repeated == point).all(axis=1)).tolist() for point in np.unique(repeated, axis=0))
    assert sorted(sorted(leaf.tolist()) for leaf in leaves(tree)) == copies, _(
        "three points repeated 20 times should make three leaves, each holding the 20 copies of one point"
    )
