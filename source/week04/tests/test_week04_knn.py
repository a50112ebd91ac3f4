"""Task 1: Euclidean distance, kNN classification and regression by brute force.

The rules (the notebook's Part A): the k neighbours are the k nearest training points, equal
distances going to the smaller index; a tied vote goes to the tied class with the
nearest member.

scikit-learn breaks both kinds of tie its own way: its neighbour search does not promise
which of several equally distant points it keeps, and its vote goes to the smallest
class label. So the comparison with ``KNeighborsClassifier``/``KNeighborsRegressor``
requires exact agreement on the queries where no tie can matter (the k-th and (k+1)-th
distances differ and, for classification, one class has the most votes), and on the
other queries requires the answer the rules above give, computed here by brute force.

Comparisons use plain Python and numpy arithmetic, never ``np.allclose`` or
``np.array_equal``, which a notebook could rebind in a trusted in-process run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from autograder.i18n import _
from autograder.testing import Call

LABELS = np.array([1, 4, 7])


def neighbour_order(X: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``X`` by distance to ``x`` (equal distances by index) and the sorted distances."""
    distances = np.sqrt(((X - x) ** 2).sum(axis=1))
    order = np.argsort(distances, kind="stable")
    return order, distances[order]


def boundary_tie(sorted_distances: np.ndarray, k: int) -> bool:
    """Whether the k-th and (k+1)-th nearest points are equally far (the tie rule decides who is in)."""
    return k < len(sorted_distances) and math.isclose(sorted_distances[k - 1], sorted_distances[k], rel_tol=1e-9, abs_tol=1e-12)


def vote(labels_by_distance: np.ndarray) -> tuple[object, bool]:
    """The rule's winner among neighbour labels (nearest first), and whether the vote was tied."""
    values, counts = np.unique(labels_by_distance, return_counts=True)
    tied = values[counts == counts.max()]
    winner = next(label for label in labels_by_distance if label in tied)
    return winner, len(tied) > 1


def as_label(value: object) -> object:
    """A returned label as a Python scalar: a one-element array counts as its element."""
    if isinstance(value, np.ndarray):
        assert value.size == 1, _("knn_classify should return one label, not an array of labels")
        return value.item()
    return value


def as_number(value: object, what: str) -> float:
    if isinstance(value, np.ndarray):
        assert value.size == 1, _("{function} should return a single number, not an array of several").format(function=what)
        value = value.item()
    assert isinstance(value, (int, float)) and not isinstance(value, bool), _("{function} returned a {type_name}; a number is expected").format(function=what, type_name=type(value).__name__)
    return float(value)


def labelled(X: np.ndarray, seed: int | list[int]) -> np.ndarray:
    """Random labels from three classes; copies of a point get their own label (noisy data)."""
    return np.random.default_rng(seed).choice(LABELS, size=len(X))


@pytest.mark.task(1)
@pytest.mark.points(4)
def test_euclidean_distance(student, rng):
    """euclidean_distance(a, b) is the square root of the sum of squared coordinate differences."""
    euclidean_distance = student.euclidean_distance
    assert math.isclose(as_number(euclidean_distance(np.array([0.0, 0.0]), np.array([3.0, 4.0])), "euclidean_distance"), 5.0)
    for p in (1, 2, 5):
        a, b = rng.normal(size=p), rng.normal(size=p)
        ab, ba, aa = student.each([Call(euclidean_distance, a, b), Call(euclidean_distance, b, a), Call(euclidean_distance, a, a.copy())])
        got = as_number(ab, "euclidean_distance")
        assert math.isclose(got, float(np.sqrt(((a - b) ** 2).sum())), rel_tol=1e-9), _("euclidean_distance(a, b) is not the Euclidean distance")
        assert math.isclose(as_number(ba, "euclidean_distance"), got, rel_tol=1e-12), _("euclidean_distance should be symmetric")
        assert as_number(aa, "euclidean_distance") == 0.0, _("the distance from a point to itself should be 0")


@pytest.mark.task(1)
@pytest.mark.points(6)
def test_knn_classify_matches_scikit_learn(student, float_sets, seed):
    """knn_classify agrees with KNeighborsClassifier on random data with duplicates (k = 1, 4, 5), and follows the tie rules where scikit-learn's tie-breaking differs."""
    knn_classify = student.knn_classify
    for i, (X, queries) in enumerate(float_sets):
        y = labelled(X, seed=[seed, 50 + i])
        for k in (1, 4, 5):
            sklearn_labels = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(X, y).predict(queries)
            answers = student.each([Call(knn_classify, X, y, query, k=k) for query in queries])
            for query, sklearn_label, answer in zip(queries, sklearn_labels, answers):
                order, distances = neighbour_order(X, query)
                expected, vote_tied = vote(y[order[:k]])
                got = as_label(answer)
                if boundary_tie(distances, k) or vote_tied:
                    assert got == expected, _("where distances or votes tie, knn_classify should follow the tie rules (equal distance: smaller index; tied vote: the class with the nearest member)")
                else:
                    assert got == sklearn_label, _("knn_classify disagrees with KNeighborsClassifier on a query whose k neighbours and majority are unambiguous")


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, float_sets, seed):
    """euclidean_distance, knn_classify and knn_regress leave the caller's arrays as they were (no in-place differences or sorting), while giving the right answers."""
    X, queries = float_sets[0]
    y = labelled(X, seed=[seed, 50])
    targets = np.random.default_rng([seed, 70]).normal(size=len(X))
    distance = unchanged_inputs("euclidean_distance", student.euclidean_distance, a=X[0], b=queries[0])
    label = unchanged_inputs("knn_classify", student.knn_classify, X_train=X, y_train=y, x=queries[0], k=3)
    value = unchanged_inputs("knn_regress", student.knn_regress, X_train=X, y_train=targets, x=queries[1], k=3)
    # The inputs are unchanged; the check counts only if the functions did their job too.
    nearest_to_first, _distances = neighbour_order(X, queries[0])
    nearest_to_second, _distances = neighbour_order(X, queries[1])
    did_the_job = (
        math.isclose(as_number(distance, "euclidean_distance"), float(np.sqrt(((X[0] - queries[0]) ** 2).sum())), rel_tol=1e-9)
        and as_label(label) == vote(y[nearest_to_first[:3]])[0]
        and math.isclose(as_number(value, "knn_regress"), float(np.mean(targets[nearest_to_second[:3]])), rel_tol=1e-9, abs_tol=1e-12)
    )
    assert did_the_job, _(
        "the functions left their inputs as they were, but this check counts only when they also give the "
        "right answers: the distance, the k neighbours' vote and their mean target"
    )


@pytest.mark.task(1)
@pytest.mark.points(4)
def test_knn_classify_tie_rules(student):
    """A tied vote goes to the tied class with the nearest member, and equally distant points go to the smaller index."""
    # Points on a line at distances 1, 2, 3, ... from the query 0, stored in a scrambled
    # order so that index order is not distance order.
    def line(labels_by_distance: list[int], scramble: list[int]) -> tuple[np.ndarray, np.ndarray]:
        X = np.array([[float(d + 1)] for d in scramble])
        y = np.array([labels_by_distance[d] for d in scramble])
        return X, y

    query = np.array([0.0])
    cases = [
        # two classes with two votes each: the nearer class wins, not the smaller label
        (line([7, 3, 3, 7], [2, 0, 3, 1]), 4, 7),
        # three classes with one vote each
        (line([9, 2, 5], [1, 2, 0]), 3, 9),
        # classes 8 and 3 tie with two votes; the single nearest point (class 5) is not in the tie
        (line([5, 8, 8, 3, 3], [4, 1, 3, 0, 2]), 5, 8),
    ]
    for (X, y), k, expected in cases:
        assert as_label(student.knn_classify(X, y, query, k=k)) == expected, _("a tied vote should go to the tied class whose member is nearest to the query")
    # k = 1 and two points at distance 1 on either side: the smaller index is the neighbour
    X = np.array([[3.0], [1.0], [-1.0]])
    y = np.array([2, 6, 4])
    assert as_label(student.knn_classify(X, y, query, k=1)) == 6, _("of two equally distant training points, the one with the smaller index should count as nearer")


@pytest.mark.task(1)
@pytest.mark.points(4)
def test_knn_regress_matches_scikit_learn(student, float_sets, seed):
    """knn_regress agrees with KNeighborsRegressor on random data with duplicates (k = 1, 3, 6), and takes the smaller indices where distances tie."""
    knn_regress = student.knn_regress
    for i, (X, queries) in enumerate(float_sets):
        y = np.random.default_rng([seed, 70 + i]).normal(size=len(X))
        for k in (1, 3, 6):
            sklearn_values = KNeighborsRegressor(n_neighbors=k, algorithm="brute").fit(X, y).predict(queries)
            answers = student.each([Call(knn_regress, X, y, query, k=k) for query in queries])
            for query, sklearn_value, answer in zip(queries, sklearn_values, answers):
                order, distances = neighbour_order(X, query)
                got = as_number(answer, "knn_regress")
                if boundary_tie(distances, k):
                    expected = float(np.mean(y[order[:k]]))
                    assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12), _("where the k-th and (k+1)-th neighbours are equally far, knn_regress should keep the one with the smaller index")
                else:
                    assert math.isclose(got, float(sklearn_value), rel_tol=1e-9, abs_tol=1e-12), _("knn_regress disagrees with KNeighborsRegressor (the mean target of the k nearest points)")
