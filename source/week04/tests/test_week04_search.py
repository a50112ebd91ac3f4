"""Task 3: nearest-neighbour and k-nearest search in the K-D tree, with pruning.

So that this task is graded on its own, the correctness tests search a tree built here
by COURSE.md's rules and constructed in the worker from the notebook's given ``KDNode``
and ``KDLeaf`` classes: a wrong ``build_kdtree`` costs points in Task 2 only.

Pruning is measured here, never taken from the count the search reports: the pruning
test moves the points of leaves the search must skip next to the query, so a search
that looks at them (brute force over ``X``, no pruning, far side first) returns one.

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

from autograder.i18n import _

PRUNING_N = 1_000
PRUNING_QUERIES = 30
PRUNING_LEAF_SIZE = 4


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


def leaf_paths(X: np.ndarray, leaf_size: int) -> list[tuple[np.ndarray, list[tuple[int, float, bool]]]]:
    """The leaves of ``send_tree``'s tree, each with its path from the root: the
    (dim, split, went_left) of every node above it. Built here, never asked of the worker."""
    leaves = []

    def build(indices: np.ndarray, depth: int, path: list[tuple[int, float, bool]]) -> None:
        if len(indices) <= leaf_size:
            leaves.append((indices, path))
            return
        dim = depth % X.shape[1]
        values = X[indices, dim]
        split = float(np.median(values))
        go_left = values < split
        if not go_left.any():
            leaves.append((indices, path))
            return
        build(indices[go_left], depth + 1, path + [(dim, split, True)])
        build(indices[~go_left], depth + 1, path + [(dim, split, False)])

    build(np.arange(len(X), dtype=np.int64), 0, [])
    return leaves


def pruned_leaves(X: np.ndarray, leaves: list, query: np.ndarray, k: int = 1) -> tuple[list[np.ndarray], int, int]:
    """Which leaves every search by the notes' rules skips for ``query``, and bounds on its count.

    The search reaches the query's own leaf first, so from then on its best distance is at
    most ``d_own``, the k-th nearest distance within that leaf (``k`` is at most a leaf's size). A leaf lying on the far side of
    some ancestor's plane farther than ``d_own`` from the query is pruned there, whatever
    else the search visited. Returns those leaves' indices, the own leaf's size (the least
    count) and the number of points outside the pruned leaves (the most)."""
    own = next(indices for indices, path in leaves
               if all((query[dim] < split) == went_left for dim, split, went_left in path))
    d_own = float(np.sort(np.sqrt(((X[own] - query) ** 2).sum(axis=1)))[k - 1])
    pruned = [indices for indices, path in leaves
              if max((abs(query[dim] - split) for dim, split, went_left in path if (query[dim] < split) != went_left), default=-1.0) > d_own]
    return pruned, len(own), len(X) - sum(len(indices) for indices in pruned)


def neighbour_order(X: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``X`` by distance to ``query`` (equal distances by index) and the sorted distances."""
    distances = np.sqrt(((X - query) ** 2).sum(axis=1))
    order = np.argsort(distances, kind="stable")
    return order, distances[order]


def search_result(result: object, n: int) -> tuple[int, float, int]:
    """``nearest_neighbor``'s answer, after checking its shape: (index, distance, count)."""
    assert isinstance(result, tuple), _("nearest_neighbor returned a {type_name}; a tuple (index, distance, n_distance_computations) is expected").format(type_name=type(result).__name__)
    assert len(result) == 3, _("nearest_neighbor returned a tuple of {length}; three values (index, distance, n_distance_computations) are expected").format(length=len(result))
    index, distance, count = (value.item() if isinstance(value, np.ndarray) and value.size == 1 else value for value in result)
    assert isinstance(index, int) and not isinstance(index, bool), _("nearest_neighbor's first element (the index) is a {type_name}; an int is expected").format(type_name=type(index).__name__)
    assert 0 <= index < n, _("nearest_neighbor's first element should be a row index of X (0 to n - 1)")
    assert isinstance(distance, (int, float)) and not isinstance(distance, bool), _("nearest_neighbor's second element (the distance) is a {type_name}; a number is expected").format(type_name=type(distance).__name__)
    assert isinstance(count, int) and not isinstance(count, bool), _("nearest_neighbor's third element (the number of distances computed) is a {type_name}; an int is expected").format(type_name=type(count).__name__)
    return index, float(distance), count


def index_list(result: object, what: str) -> list[int]:
    """A returned sequence of indices as a list of ints."""
    assert isinstance(result, (list, np.ndarray)), _("{function} returned a {type_name}; a list or a 1-D numpy array of indices is expected").format(function=what, type_name=type(result).__name__)
    values = np.asarray(result)
    assert values.ndim == 1 and (values.size == 0 or np.issubdtype(values.dtype, np.integer)), _("{function} should return a 1-D sequence of integer indices").format(function=what)
    return [int(v) for v in values]


@pytest.mark.task(3)
@pytest.mark.points(6)
def test_worked_example(student, worked_example):
    """The notes' example: (5, 4) is the nearest point to (6, 4), at distance 1, and k_nearest orders the next ones by distance."""
    tree = send_tree(student, worked_example, leaf_size=2)
    index, distance, _count = search_result(student.nearest_neighbor(tree, worked_example, np.array([6.0, 4.0])), len(worked_example))
    assert index == 1 and math.isclose(distance, 1.0), _("in the notes' example, (5, 4) at distance 1 should be the nearest point to (6, 4)")
    # then (7, 2) at sqrt(5), then (9, 6) and (4, 7), both at sqrt(13): the smaller index first
    got = index_list(student.k_nearest(tree, worked_example, np.array([6.0, 4.0]), 4), "k_nearest")
    assert got == [1, 5, 2, 3], _("in the notes' example, k_nearest((6, 4), k=4) should list the 4 nearest points by distance, equal distances by index")


@pytest.mark.task(3)
@pytest.mark.points(6)
def test_nearest_matches_sklearn_kdtree(student, float_sets):
    """nearest_neighbor finds the same distance as sklearn's KDTree on random data with duplicates (2-D and 3-D), and the smallest index among equally near copies."""
    for (X, queries), leaf_size in zip(float_sets, (2, 3)):
        tree = send_tree(student, X, leaf_size)
        sklearn_distances, _indices = KDTree(X).query(queries, k=1)
        for query, sklearn_distance in zip(queries, sklearn_distances[:, 0]):
            index, distance, _count = search_result(student.nearest_neighbor(tree, X, query), len(X))
            order, _distances = neighbour_order(X, query)
            assert math.isclose(distance, float(sklearn_distance), rel_tol=1e-9, abs_tol=1e-12), _("nearest_neighbor's distance differs from sklearn's KDTree: the search misses the nearest point (check the pruning condition)")
            assert math.isclose(distance, float(np.sqrt(((X[index] - query) ** 2).sum())), rel_tol=1e-9, abs_tol=1e-12), _("the distance returned should be the Euclidean distance from the query to the point returned")
            assert index == int(order[0]), _("among equally near points (duplicates), nearest_neighbor should return the smallest index")


@pytest.mark.task(3)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, float_sets):
    """nearest_neighbor and k_nearest leave the caller's X and query as they were."""
    X, queries = float_sets[0]
    tree = send_tree(student, X, 2)
    unchanged_inputs("nearest_neighbor", student.nearest_neighbor, tree=tree, X=X, query=queries[0])
    unchanged_inputs("k_nearest", student.k_nearest, tree=tree, X=X, query=queries[1], k=4)


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_ties_go_to_the_smaller_index(student, grid_sets, fixed_grid_sets):
    """On integer grid data, where distinct points in different leaves tie exactly, nearest_neighbor and k_nearest put the smaller index first."""
    for (X, queries), leaf_size in zip([*fixed_grid_sets, *grid_sets], (1, 2, 1, 2)):
        tree = send_tree(student, X, leaf_size)
        for query in queries:
            order, _distances = neighbour_order(X, query)
            index, _distance, _count = search_result(student.nearest_neighbor(tree, X, query), len(X))
            assert index == int(order[0]), _("of several equally near points, nearest_neighbor should return the one with the smallest index (visit a far side even when its plane is exactly at the best distance)")
            got = index_list(student.k_nearest(tree, X, query, 6), "k_nearest")
            assert got == order[:6].tolist(), _("k_nearest should sort equally distant points by index, and keep the smaller indices at the k-th place")


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_k_nearest_matches_sklearn_kdtree(student, float_sets):
    """k_nearest returns the k nearest indices sorted by distance, with the same distances as sklearn's KDTree (k = 1, 5, 12, and k >= n)."""
    for (X, queries), leaf_size in zip(float_sets, (3, 2)):
        tree = send_tree(student, X, leaf_size)
        for k in (1, 5, 12, len(X) + 3):
            kept = min(k, len(X))
            sklearn_distances, _indices = KDTree(X).query(queries[::3], k=kept)
            for query, expected_distances in zip(queries[::3], sklearn_distances):
                got = index_list(student.k_nearest(tree, X, query, k), "k_nearest")
                assert len(got) == kept, _("k_nearest should return k indices (all n of them when k >= n)")
                distances = np.sqrt(((X[got] - query) ** 2).sum(axis=1))
                assert max(abs(a - b) for a, b in zip(distances, expected_distances)) <= 1e-9, _("k_nearest's neighbours are not the k nearest found by sklearn's KDTree, in order of distance")
                order, _distances = neighbour_order(X, query)
                assert got == order[:kept].tolist(), _("among equally distant points (duplicates), k_nearest should list the smaller index first")


@pytest.mark.task(3)
@pytest.mark.points(6)
@pytest.mark.call_timeout(30)
def test_pruning_skips_the_far_leaves(student, rng):
    """Pruning works in nearest_neighbor and k_nearest, measured by the grader: points moved into leaves the search must prune (their plane is farther than the nearest point of the query's own leaf) are never found, and the reported count lies between the own leaf's size and the points outside the pruned leaves."""
    X = rng.uniform(size=(PRUNING_N, 2))
    tree = send_tree(student, X, PRUNING_LEAF_SIZE)
    leaves = leaf_paths(X, PRUNING_LEAF_SIZE)
    for query in rng.uniform(size=(PRUNING_QUERIES, 2)):
        order, distances = neighbour_order(X, query)
        pruned, least, most = pruned_leaves(X, leaves, query)
        assert pruned, "internal: a query with nothing to prune"  # never on 1,000 uniform points
        # Inconsistent with the tree on purpose: the pruned leaves' points move right next
        # to the query, nearer than the true nearest point. A search that follows the tree
        # never looks at them; one that looks at all of X (or at leaves it should skip) does.
        planted = X.copy()
        moved = np.concatenate(pruned)
        angles = rng.uniform(0, 2 * np.pi, size=len(moved))
        radii = distances[0] * rng.uniform(0.1, 0.9, size=len(moved))
        planted[moved] = query + radii[:, None] * np.column_stack([np.cos(angles), np.sin(angles)])
        index, distance, count = search_result(student.nearest_neighbor(tree, planted, query), PRUNING_N)
        assert index not in set(moved.tolist()), _("nearest_neighbor looked at points in leaves it should have pruned: descend to the query's leaf first, then skip a far side whose plane is farther than the best distance (the search must use the tree, not all of X)")
        assert index == int(order[0]) and math.isclose(distance, float(distances[0]), rel_tol=1e-9, abs_tol=1e-12), _("nearest_neighbor on a large tree should still find the nearest point")
        assert least <= count <= most, _("the third element should be the number of query-to-point distances computed: at least the query's own leaf, and none in the leaves that are pruned")
        # k_nearest prunes against its k-th best distance: with k = 2 (every leaf here holds
        # at least 3 points) the same planting applies.
        pruned, _least, _most = pruned_leaves(X, leaves, query, k=2)
        planted = X.copy()
        moved = np.concatenate(pruned)
        planted[moved] = query + distances[0] * rng.uniform(0.1, 0.9, size=(len(moved), 1)) * rng.choice([-1.0, 1.0], size=(len(moved), 2)) / np.sqrt(2)
        got = index_list(student.k_nearest(tree, planted, query, 2), "k_nearest")
        assert not set(got) & set(moved.tolist()), _("k_nearest looked at points in leaves it should have pruned: descend to the query's leaf first, then skip a far side whose plane is farther than the k-th best distance (the search must use the tree, not all of X)")
        assert got == order[:2].tolist(), _("k_nearest on a large tree should still find the k nearest points")
