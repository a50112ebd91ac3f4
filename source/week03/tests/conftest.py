"""Data for the week-3 hidden tests, built in the grader process.

The fixed Iris examples stay; the random problems are drawn fresh per submission from the
``seed`` fixture (recorded in the result), so a notebook that recognises known inputs
gains nothing. Fresh data is function-scoped: the grading loop keeps session fixtures
from one submission to the next.

Every ``X`` sent to the submission already has its leading column of ones, as the
notebook's ``add_bias`` makes it. Expected values and scikit-learn fits stay here.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

Dataset = tuple[np.ndarray, np.ndarray]


def add_bias(X: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(X)), X])


def standardise(X: np.ndarray) -> np.ndarray:
    return (X - X.mean(axis=0)) / X.std(axis=0)


@pytest.fixture
def random_problem(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(X, y, weight vectors): 50 samples, 4 features on different scales, labels 0/1 (both present)."""
    X = add_bias(rng.normal(size=(50, 4)) * [1.0, 3.0, 0.5, 2.0] + [0.0, 1.0, -2.0, 0.5])
    y = (rng.uniform(size=50) < 0.4).astype(float)
    y[:2] = [0.0, 1.0]
    weights = [np.zeros(5), rng.normal(scale=0.3, size=5), rng.normal(scale=0.8, size=5)]
    return X, y, weights


@pytest.fixture(scope="session")
def iris_sepal() -> Dataset:
    """Iris versicolor (0) vs virginica (1), sepal length and width, standardised: they overlap."""
    iris = load_iris()
    keep = iris.target > 0
    return add_bias(standardise(iris.data[keep][:, :2])), (iris.target[keep] == 2).astype(float)


@pytest.fixture
def iris_relabelled(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All of Iris (4 features, standardised), rows shuffled and the species relabelled,
    both drawn fresh per submission.

    The labels are three distinct ints, and the first rows' labels do not appear in
    sorted order, so rows taken in order of first appearance differ from np.unique's
    order. Returns (X, y, classes in np.unique order).
    """
    iris = load_iris()
    while True:
        order = rng.permutation(len(iris.target))
        y = rng.choice(np.arange(-5, 20), size=3, replace=False)[iris.target[order]]
        appearance = list(dict.fromkeys(y.tolist()))
        if appearance != sorted(appearance):
            return add_bias(standardise(iris.data[order])), y, np.unique(y)
