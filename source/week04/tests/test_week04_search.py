"""Task 3: nearest-neighbour and k-nearest search in the K-D tree, with pruning.

So that this task is graded on its own, the correctness tests search a tree built here
by COURSE.md's rules and constructed in the worker from the notebook's given ``KDNode``
and ``KDLeaf`` classes: a wrong ``build_kdtree`` costs points in Task 2 only. The
pruning test needs a tree of 10,000 points, too big to send node by node, and searches
the student's own ``build_kdtree`` tree (uniform random points: no duplicates).

Ties: COURSE.md says equal distances go to the smaller index. ``sklearn.neighbors.KDTree``
promises nothing about which of several equally distant points it returns. So against
KDTree we require the same distances (to 1e-9); the indices must be exactly the rule's,
computed here by brute force (stable sort by distance). The data has duplicate points
(ties between copies) and integer grid points (ties between distinct points, in
different leaves).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.neighbors import KDTree

PRUNING_N = 10_000
PRUNING_QUERIES = 100
# The reference search computes 6.7 distances per query on average here (0.07 % of n:
# the query's leaf and a few neighbouring ones). A correct search that descends to the
# query's side first stays within a few times that; one that always visits left before
# right needs about 1,200 (12 %), and brute force 10,000. The bound, 2 % of n (200),
# leaves a margin of 30 times the reference and fails any search that looks at a large
# part of the data.
PRUNING_BOUND = 0.02 * PRUNING_N


def send_tree(student, X: np.ndarray, leaf_size: int) -> object:
    """Build the tree by COURSE.md's rules here, node by node in the worker; return its root."""

    def build(indices: np.ndarray, depth: int) -> object:
        if len(indices) <= leaf_size:
            return student.KDLeaf(indices)
        dim = depth % X.shape[1]
        values = X[indices, dim]
        split = float(np.median(values))
        go_left = values < split
        if not go_left.any():
            return student.KDLeaf(indices)
        return student.KDNode(dim, split, build(indices[go_left], depth + 1), build(indices[~go_left], depth + 1))

    return build(np.arange(len(X), dtype=np.int64), 0)


def neighbour_order(X: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``X`` by distance to ``query`` (equal distances by index) and the sorted distances."""
    distances = np.sqrt(((X - query) ** 2).sum(axis=1))
    order = np.argsort(distances, kind="stable")
    return order, distances[order]


def search_result(result: object, n: int) -> tuple[int, float, int]:
    """``nearest_neighbor``'s answer, after checking its shape: (index, distance, count)."""
    assert isinstance(result, (tuple, list)) and len(result) == 3, "nearest_neighbor should return a tuple (index, distance, n_distance_computations)"
    index, distance, count = (value.item() if isinstance(value, np.ndarray) and value.size == 1 else value for value in result)
    assert isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n, "the first element should be a row index of X"
    assert isinstance(distance, (int, float)) and not isinstance(distance, bool), "the second element should be a distance (a number)"
    assert isinstance(count, int) and not isinstance(count, bool), "the third element should be the number of distances computed (an int)"
    return index, float(distance), count


def index_list(result: object, what: str) -> list[int]:
    """A returned sequence of indices as a list of ints."""
    assert isinstance(result, (list, tuple, np.ndarray)), f"{what} should return a list or array of indices"
    values = np.asarray(result)
    assert values.ndim == 1 and (values.size == 0 or np.issubdtype(values.dtype, np.integer)), f"{what} should return a 1-D sequence of integer indices"
    return [int(v) for v in values]


@pytest.mark.task(3)
@pytest.mark.points(6)
def test_worked_example(student, worked_example):
    """The notes' example: (5, 4) is the nearest point to (6, 4), at distance 1, and k_nearest orders the next ones by distance."""
    tree = send_tree(student, worked_example, leaf_size=2)
    index, distance, _ = search_result(student.nearest_neighbor(tree, worked_example, np.array([6.0, 4.0])), len(worked_example))
    assert index == 1 and math.isclose(distance, 1.0), "in the notes' example, (5, 4) at distance 1 should be the nearest point to (6, 4)"
    # then (7, 2) at sqrt(5), then (9, 6) and (4, 7), both at sqrt(13): the smaller index first
    got = index_list(student.k_nearest(tree, worked_example, np.array([6.0, 4.0]), 4), "k_nearest")
    assert got == [1, 5, 2, 3], "in the notes' example, k_nearest((6, 4), k=4) should list the 4 nearest points by distance, equal distances by index"


@pytest.mark.task(3)
@pytest.mark.points(8)
def test_nearest_matches_sklearn_kdtree(student, float_sets):
    """nearest_neighbor finds the same distance as sklearn's KDTree on random data with duplicates (2-D and 3-D), and the smallest index among equally near copies."""
    for (X, queries), leaf_size in zip(float_sets, (2, 3)):
        tree = send_tree(student, X, leaf_size)
        sklearn_distances, _ = KDTree(X).query(queries, k=1)
        for query, sklearn_distance in zip(queries, sklearn_distances[:, 0]):
            index, distance, _ = search_result(student.nearest_neighbor(tree, X, query), len(X))
            order, _ = neighbour_order(X, query)
            assert math.isclose(distance, float(sklearn_distance), rel_tol=1e-9, abs_tol=1e-12), "nearest_neighbor's distance differs from sklearn's KDTree: the search misses the nearest point (check the pruning condition)"
            assert math.isclose(distance, float(np.sqrt(((X[index] - query) ** 2).sum())), rel_tol=1e-9, abs_tol=1e-12), "the distance returned should be the Euclidean distance from the query to the point returned"
            assert index == int(order[0]), "among equally near points (duplicates), nearest_neighbor should return the smallest index"


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_ties_go_to_the_smaller_index(student, grid_sets):
    """On integer grid data, where distinct points in different leaves tie exactly, nearest_neighbor and k_nearest put the smaller index first."""
    for (X, queries), leaf_size in zip(grid_sets, (1, 2)):
        tree = send_tree(student, X, leaf_size)
        for query in queries:
            order, _ = neighbour_order(X, query)
            index, _, _ = search_result(student.nearest_neighbor(tree, X, query), len(X))
            assert index == int(order[0]), "of several equally near points, nearest_neighbor should return the one with the smallest index (visit a far side even when its plane is exactly at the best distance)"
            got = index_list(student.k_nearest(tree, X, query, 6), "k_nearest")
            assert got == order[:6].tolist(), "k_nearest should sort equally distant points by index, and keep the smaller indices at the k-th place"


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_k_nearest_matches_sklearn_kdtree(student, float_sets):
    """k_nearest returns the k nearest indices sorted by distance, with the same distances as sklearn's KDTree (k = 1, 5, 12, and k >= n)."""
    for (X, queries), leaf_size in zip(float_sets, (3, 2)):
        tree = send_tree(student, X, leaf_size)
        for k in (1, 5, 12, len(X) + 3):
            kept = min(k, len(X))
            sklearn_distances, _ = KDTree(X).query(queries[::3], k=kept)
            for query, expected_distances in zip(queries[::3], sklearn_distances):
                got = index_list(student.k_nearest(tree, X, query, k), "k_nearest")
                assert len(got) == kept, "k_nearest should return k indices (all n of them when k >= n)"
                distances = np.sqrt(((X[got] - query) ** 2).sum(axis=1))
                assert max(abs(a - b) for a, b in zip(distances, expected_distances)) <= 1e-9, "k_nearest's neighbours are not the k nearest found by sklearn's KDTree, in order of distance"
                order, _ = neighbour_order(X, query)
                assert got == order[:kept].tolist(), "among equally distant points (duplicates), k_nearest should list the smaller index first"


@pytest.mark.task(3)
@pytest.mark.points(6)
@pytest.mark.call_timeout(30)
def test_pruning_skips_most_of_the_tree(student):
    """Pruning works: on 10,000 uniform 2-D points, nearest_neighbor finds the right point with a mean distance count far below n (under 2 %)."""
    rng = np.random.default_rng(47)
    X = rng.uniform(size=(PRUNING_N, 2))
    queries = rng.uniform(size=(PRUNING_QUERIES, 2))
    tree = student.build_kdtree(X, leaf_size=2)
    counts = []
    for query in queries:
        index, _, count = search_result(student.nearest_neighbor(tree, X, query), PRUNING_N)
        order, _ = neighbour_order(X, query)
        assert index == int(order[0]), "nearest_neighbor on a large tree should still find the nearest point"
        assert count >= 1, "the third element should count the query-to-point distances computed (at least the query's leaf)"
        counts.append(count)
    assert sum(counts) / len(counts) < PRUNING_BOUND, "nearest_neighbor computes too many distances per query on a large uniform data set: descend to the query's leaf first, and skip a far side whose plane is farther than the best distance"
