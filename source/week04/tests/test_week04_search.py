"""Task 3: nearest-neighbour and k-nearest search in the K-D tree, with pruning.

So that this task is graded on its own, the correctness tests search a tree built here
by the notebook's building rules and constructed in the worker from its given ``KDNode``
and ``KDLeaf`` classes: a wrong ``build_kdtree`` costs points in Task 2 only.

Pruning is measured here, never taken from the count the search reports: the pruning
test moves the points of leaves the search must skip next to the query, so a search
that looks at them (brute force over ``X``, no pruning, far side first) returns one.

Ties: the notebook says equal distances go to the smaller index. ``sklearn.neighbors.KDTree``
promises nothing about which of several equally distant points it returns. So against
KDTree we require the same distances (to 1e-9); the indices must be exactly the rule's,
computed here by brute force (stable sort by distance). The data has duplicate points
(ties between copies) and integer grid points (ties between distinct points, in
different leaves).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import pytest
from sklearn.neighbors import KDTree

from autograder.i18n import _
from autograder.testing import Call

PRUNING_N = 1_000
# The k-nearest and inputs tests need no count bounds: smaller trees do.
PRUNING_N_K = 500
PRUNING_N_INPUTS = 200
PRUNING_QUERIES = 30
PRUNING_LEAF_SIZE = 4


def median(values: np.ndarray) -> float:
    """``np.median`` of a node's values, the same float (the middle sorted value, or the two
    middle ones added and halved, as ``np.median`` computes it), without its ~9 µs of dispatch:
    ``send_tree`` and ``leaf_paths`` take ~1,500 medians of a few values per submission."""
    ordered = np.sort(values)
    half = len(ordered) // 2
    return float(ordered[half]) if len(ordered) % 2 else float((ordered[half - 1] + ordered[half]) / 2)


def split_node(X: np.ndarray, indices: np.ndarray, depth: int, leaf_size: int) -> tuple[int, float, np.ndarray] | None:
    """The notebook's building rule for the node holding ``indices`` at ``depth``: its split
    dimension, its split value and which of its points go left, or None for a leaf (few
    enough points, or a split that would leave the left side empty)."""
    if len(indices) <= leaf_size:
        return None
    dim = depth % X.shape[1]
    values = X[indices, dim]
    split = median(values)
    go_left = values < split
    return (dim, split, go_left) if go_left.any() else None


def send_tree(student, X: np.ndarray, leaf_size: int) -> object:
    """Build the tree by the notebook's building rules here and construct it in the worker from the
    notebook's ``KDNode`` and ``KDLeaf`` (every node in one request); return its root."""
    KDLeaf, KDNode = student.KDLeaf, student.KDNode

    def build(indices: np.ndarray, depth: int) -> Call:
        node = split_node(X, indices, depth, leaf_size)
        if node is None:
            return Call(KDLeaf, indices)
        dim, split, go_left = node
        return Call(KDNode, dim, split, build(indices[go_left], depth + 1), build(indices[~go_left], depth + 1))

    return student.build(build(np.arange(len(X), dtype=np.int64), 0))


class Leaves(NamedTuple):
    """The leaves of ``send_tree``'s tree with their paths from the root, as arrays: row ``i``
    holds leaf ``i``'s ancestors' planes (``dims``, ``splits``) and the side the leaf is on
    (``went_left``), padded past the leaf's depth where ``on_path`` is False."""

    indices: list[np.ndarray]
    dims: np.ndarray
    splits: np.ndarray
    went_left: np.ndarray
    on_path: np.ndarray


def leaf_paths(X: np.ndarray, leaf_size: int) -> Leaves:
    """The leaves of ``send_tree``'s tree, each with its path from the root: the
    (dim, split, went_left) of every node above it. Built here, never asked of the worker."""
    leaves: list[tuple[np.ndarray, list[tuple[int, float, bool]]]] = []

    def build(indices: np.ndarray, depth: int, path: list[tuple[int, float, bool]]) -> None:
        node = split_node(X, indices, depth, leaf_size)
        if node is None:
            leaves.append((indices, path))
            return
        dim, split, go_left = node
        build(indices[go_left], depth + 1, path + [(dim, split, True)])
        build(indices[~go_left], depth + 1, path + [(dim, split, False)])

    build(np.arange(len(X), dtype=np.int64), 0, [])
    shape = (len(leaves), max(len(path) for _indices, path in leaves))
    dims, splits = np.zeros(shape, dtype=np.int64), np.zeros(shape)
    went_left, on_path = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
    for row, (_indices, path) in enumerate(leaves):
        for column, (dim, split, left) in enumerate(path):
            dims[row, column], splits[row, column], went_left[row, column], on_path[row, column] = dim, split, left, True
    return Leaves([indices for indices, _path in leaves], dims, splits, went_left, on_path)


def pruned_leaves(X: np.ndarray, leaves: Leaves, query: np.ndarray, k: int = 1) -> tuple[list[np.ndarray], int, int]:
    """Which leaves every search by the notes' rules skips for ``query``, and bounds on its count.

    The search reaches the query's own leaf first, so from then on its best distance is at
    most ``d_own``, the k-th nearest distance within that leaf (``k`` is at most a leaf's size). A leaf lying on the far side of
    some ancestor's plane farther than ``d_own`` from the query is pruned there, whatever
    else the search visited. Returns those leaves' indices, the own leaf's size (the least
    count) and the number of points outside the pruned leaves (the most).

    All leaves at once, as arrays: a plane is "crossed" when the query lies on the other
    side of it from the leaf; a leaf's distance is its farthest crossed plane's (-1 when
    none is), compared with ``d_own`` as the same float64 numbers one leaf at a time would be."""
    coordinates = query[leaves.dims]
    crossed = ((coordinates < leaves.splits) != leaves.went_left) & leaves.on_path
    own = leaves.indices[int(np.flatnonzero(~crossed.any(axis=1))[0])]
    d_own = float(np.sort(np.sqrt(((X[own] - query) ** 2).sum(axis=1)))[k - 1])
    farthest = np.max(np.where(crossed, np.abs(coordinates - leaves.splits), -1.0), axis=1, initial=-1.0)
    pruned = [leaves.indices[row] for row in np.flatnonzero(farthest > d_own)]
    return pruned, len(own), len(X) - sum(len(indices) for indices in pruned)


def neighbour_order(X: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``X`` by distance to ``query`` (equal distances by index) and the sorted distances."""
    distances = np.sqrt(((X - query) ** 2).sum(axis=1))
    order = np.argsort(distances, kind="stable")
    return order, distances[order]


def search_result(result: object, n: int) -> tuple[int, float, int]:
    """``nearest_neighbor``'s answer, after checking its shape: (index, distance, count)."""
    assert isinstance(result, tuple), _("nearest_neighbor returned a {type_name}; a tuple (index, distance, n_distance_computations) is expected").format(type_name=type(result).__name__)
    assert len(result) == 3, _("nearest_neighbor returned a tuple of another length; three values (index, distance, n_distance_computations) are expected")
    index, distance, count = (value.item() if isinstance(value, np.ndarray) and value.size == 1 else value for value in result)
    assert isinstance(index, int) and not isinstance(index, bool), _("nearest_neighbor's first element (the index) is a {type_name}; an int is expected").format(type_name=type(index).__name__)
    assert 0 <= index < n, _("nearest_neighbor's first element should be a row index of X (0 to n - 1)")
    assert isinstance(distance, (int, float)) and not isinstance(distance, bool), _("nearest_neighbor's second element (the distance) is a {type_name}; a number is expected").format(type_name=type(distance).__name__)
    assert isinstance(count, int) and not isinstance(count, bool), _("nearest_neighbor's third element (the number of distances computed) is a {type_name}; an int is expected").format(type_name=type(count).__name__)
    return index, float(distance), count


def index_list(result: object, what: str, k: int) -> list[int]:
    """A returned sequence of at most ``k`` indices as a list of ints; its length is checked
    before anything is converted, so a long answer costs the grader nothing."""
    assert isinstance(result, (list, np.ndarray)), _("{function} returned a {type_name}; a list or a 1-D numpy array of indices is expected").format(function=what, type_name=type(result).__name__)
    assert len(result) <= k, _("{function} returned more indices than k").format(function=what)
    values = np.asarray(result)
    assert values.ndim == 1 and (values.size == 0 or np.issubdtype(values.dtype, np.integer)), _("{function} should return a 1-D sequence of integer indices").format(function=what)
    return [int(v) for v in values]


@pytest.mark.task(3)
@pytest.mark.points(2)
def test_worked_example(student, worked_example):
    """The notes' example: (5, 4) is the nearest point to (6, 4), at distance 1, and k_nearest orders the next ones by distance."""
    tree = send_tree(student, worked_example, leaf_size=2)
    index, distance, _count = search_result(student.nearest_neighbor(tree, worked_example, np.array([6.0, 4.0])), len(worked_example))
    assert index == 1 and math.isclose(distance, 1.0), _("in the notes' example, (5, 4) at distance 1 should be the nearest point to (6, 4)")
    # then (7, 2) at sqrt(5), then (9, 6) and (4, 7), both at sqrt(13): the smaller index first
    got = index_list(student.k_nearest(tree, worked_example, np.array([6.0, 4.0]), 4), "k_nearest", 4)
    assert got == [1, 5, 2, 3], _("in the notes' example, k_nearest((6, 4), k=4) should list the 4 nearest points by distance, equal distances by index")


@pytest.mark.task(3)
@pytest.mark.points(2)
def test_nearest_matches_sklearn_kdtree(student, float_sets):
    """nearest_neighbor finds the same distance as sklearn's KDTree on random data with duplicates (2-D and 3-D), and the smallest index among equally near copies."""
    nearest_neighbor = student.nearest_neighbor
    for (X, queries), leaf_size in zip(float_sets, (2, 3)):
        tree = send_tree(student, X, leaf_size)
        sklearn_distances, _indices = KDTree(X).query(queries, k=1)
        answers = student.each([Call(nearest_neighbor, tree, X, query) for query in queries])
        for query, sklearn_distance, answer in zip(queries, sklearn_distances[:, 0], answers):
            index, distance, _count = search_result(answer, len(X))
            order, _distances = neighbour_order(X, query)
            assert math.isclose(distance, float(sklearn_distance), rel_tol=1e-9, abs_tol=1e-12), _("nearest_neighbor's distance differs from sklearn's KDTree: the search misses the nearest point (check the pruning condition)")
            assert math.isclose(distance, float(np.sqrt(((X[index] - query) ** 2).sum())), rel_tol=1e-9, abs_tol=1e-12), _("the distance returned should be the Euclidean distance from the query to the point returned")
            assert index == int(order[0]), _("among equally near points (duplicates), nearest_neighbor should return the smallest index")


@pytest.mark.task(3)
@pytest.mark.points(2)
def test_ties_go_to_the_smaller_index(student, grid_sets, fixed_grid_sets):
    """On integer grid data, where distinct points in different leaves tie exactly, nearest_neighbor and k_nearest put the smaller index first."""
    nearest_neighbor, k_nearest = student.nearest_neighbor, student.k_nearest
    for (X, queries), leaf_size in zip([*fixed_grid_sets, *grid_sets], (1, 2, 1, 2)):
        tree = send_tree(student, X, leaf_size)
        answers = student.each([Call(function, *arguments) for query in queries
                                for function, arguments in ((nearest_neighbor, (tree, X, query)), (k_nearest, (tree, X, query, 6)))])
        for query, nearest, k_answer in zip(queries, answers[::2], answers[1::2]):
            order, _distances = neighbour_order(X, query)
            index, _distance, _count = search_result(nearest, len(X))
            assert index == int(order[0]), _("of several equally near points, nearest_neighbor should return the one with the smallest index (visit a far side even when its plane is exactly at the best distance)")
            got = index_list(k_answer, "k_nearest", 6)
            assert got == order[:6].tolist(), _("k_nearest should sort equally distant points by index, and keep the smaller indices at the k-th place")


@pytest.mark.task(3)
@pytest.mark.points(1)
def test_k_nearest_matches_sklearn_kdtree(student, float_sets):
    """k_nearest returns the k nearest indices sorted by distance, with the same distances as sklearn's KDTree (k = 1, 5, 12, and k >= n)."""
    k_nearest = student.k_nearest
    for (X, queries), leaf_size in zip(float_sets, (3, 2)):
        tree = send_tree(student, X, leaf_size)
        for k in (1, 5, 12, len(X) + 3):
            kept = min(k, len(X))
            sklearn_distances, _indices = KDTree(X).query(queries[::3], k=kept)
            answers = student.each([Call(k_nearest, tree, X, query, k) for query in queries[::3]])
            for query, expected_distances, answer in zip(queries[::3], sklearn_distances, answers):
                got = index_list(answer, "k_nearest", k)
                assert len(got) == kept, _("k_nearest should return k indices (all n of them when k >= n)")
                distances = np.sqrt(((X[got] - query) ** 2).sum(axis=1))
                assert max(abs(a - b) for a, b in zip(distances, expected_distances)) <= 1e-9, _("k_nearest's neighbours are not the k nearest found by sklearn's KDTree, in order of distance")
                order, _distances = neighbour_order(X, query)
                assert got == order[:kept].tolist(), _("among equally distant points (duplicates), k_nearest should list the smaller index first")


class Planted(NamedTuple):
    """One query of the pruning tests: the points of the leaves every search by the rules
    skips (``moved``) sit in ``X`` right next to the query, nearer than its true nearest
    points; ``nearest`` are the true ``k`` nearest indices, ``least`` and ``most`` bound
    the count of distances a search by the rules computes."""

    query: np.ndarray
    X: np.ndarray
    moved: set[int]
    nearest: list[int]
    distance: float
    least: int
    most: int


def planted_queries(rng: np.random.Generator, X: np.ndarray, k: int) -> Iterator[Planted]:
    """Random queries on ``X`` (the tree ``send_tree`` builds with ``PRUNING_LEAF_SIZE``),
    each with the points of its pruned leaves planted by the query: ``PRUNING_QUERIES`` of
    them, less the rare query with nothing to prune on a small ``X`` (never on 1,000 points).

    Inconsistent with the tree on purpose: a search that follows the tree never looks at
    the planted points; one that looks at all of X (or at leaves it should skip) finds one."""
    leaves = leaf_paths(X, PRUNING_LEAF_SIZE)
    for query in rng.uniform(size=(PRUNING_QUERIES, 2)):
        order, distances = neighbour_order(X, query)
        pruned, least, most = pruned_leaves(X, leaves, query, k=k)
        if not pruned:
            continue
        moved = np.concatenate(pruned)
        planted = X.copy()
        angles = rng.uniform(0, 2 * np.pi, size=len(moved))
        radii = distances[0] * rng.uniform(0.1, 0.9, size=len(moved))
        planted[moved] = query + radii[:, None] * np.column_stack([np.cos(angles), np.sin(angles)])
        yield Planted(query, planted, set(moved.tolist()), order[:k].tolist(), float(distances[0]), least, most)


@pytest.mark.task(3)
@pytest.mark.points(12)
@pytest.mark.call_timeout(30)
def test_nearest_neighbor_prunes(student, rng):
    """nearest_neighbor prunes, measured by the grader: points moved into leaves the search must skip (their plane is farther than the nearest point of the query's own leaf) are never found, and the reported count lies between the own leaf's size and the points outside the pruned leaves."""
    X = rng.uniform(size=(PRUNING_N, 2))
    tree = send_tree(student, X, PRUNING_LEAF_SIZE)
    cases, nearest_neighbor = list(planted_queries(rng, X, k=1)), student.nearest_neighbor
    answers = student.each([Call(nearest_neighbor, tree, case.X, case.query) for case in cases])
    for case, answer in zip(cases, answers):
        index, distance, count = search_result(answer, PRUNING_N)
        assert index not in case.moved, _("nearest_neighbor looked at points in leaves it should have pruned: descend to the query's leaf first, then skip a far side whose plane is farther than the best distance (the search must use the tree, not all of X)")
        assert index == case.nearest[0] and math.isclose(distance, case.distance, rel_tol=1e-9, abs_tol=1e-12), _("nearest_neighbor on a large tree should still find the nearest point")
        assert case.least <= count <= case.most, _("the third element should be the number of query-to-point distances computed: at least the query's own leaf, and none in the leaves that are pruned")


@pytest.mark.task(3)
@pytest.mark.points(9)
@pytest.mark.call_timeout(30)
def test_k_nearest_prunes(student, rng):
    """k_nearest prunes against its k-th best distance, measured by the grader: points moved into leaves the search must skip are never among the k returned."""
    X = rng.uniform(size=(PRUNING_N_K, 2))
    tree = send_tree(student, X, PRUNING_LEAF_SIZE)
    # k = 2: every leaf here holds at least 3 points, so the query's own leaf gives a k-th
    # best distance before anything is pruned.
    cases, k_nearest = list(planted_queries(rng, X, k=2)), student.k_nearest
    answers = student.each([Call(k_nearest, tree, case.X, case.query, 2) for case in cases])
    for case, answer in zip(cases, answers):
        got = index_list(answer, "k_nearest", 2)
        assert not set(got) & case.moved, _("k_nearest looked at points in leaves it should have pruned: descend to the query's leaf first, then skip a far side whose plane is farther than the k-th best distance (the search must use the tree, not all of X)")
        assert got == case.nearest, _("k_nearest on a large tree should still find the k nearest points")


@pytest.mark.task(3)
@pytest.mark.points(2)
@pytest.mark.call_timeout(30)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, rng):
    """nearest_neighbor and k_nearest leave the caller's X and query as they were, while searching the tree with pruning."""
    X = rng.uniform(size=(PRUNING_N_INPUTS, 2))
    tree = send_tree(student, X, PRUNING_LEAF_SIZE)
    nearest_case = next(planted_queries(rng, X, k=1))
    result = unchanged_inputs("nearest_neighbor", student.nearest_neighbor, tree=tree, X=nearest_case.X, query=nearest_case.query)
    k_case = next(planted_queries(rng, X, k=2))
    got = unchanged_inputs("k_nearest", student.k_nearest, tree=tree, X=k_case.X, query=k_case.query, k=2)
    # The inputs are unchanged; the check counts only if the searches did their job too.
    index, _distance, _count = search_result(result, PRUNING_N_INPUTS)
    assert index == nearest_case.nearest[0] and index_list(got, "k_nearest", 2) == k_case.nearest, _(
        "the searches left their inputs as they were, but this check counts only when they also find the "
        "nearest points through the tree, with pruning"
    )
