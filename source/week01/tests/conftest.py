"""Data for the week-1 hidden tests, built in the grader process with fixed seeds.

Only plain numpy arrays built here are sent to the submission; everything compared
against (expected values, scikit-learn fits) stays on this side.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs

Dataset = tuple[np.ndarray, np.ndarray]


def separable(seed: int, n: int, d: int, margin: float = 0.1) -> Dataset:
    """A linearly separable set of ``n`` points in ``d`` dimensions, labels -1/+1.

    The separating hyperplane has a random offset (so a perceptron without a bias
    cannot always separate it) and no point lies within ``margin`` of it, so the
    perceptron converges in a few epochs. The features are generic floats, so after
    the first update no net input is ever exactly 0.

    The first sample is a negative one. From zero weights the first net input is 0;
    with a negative first label, our tie rule (0 predicts +1, a mistake) and
    scikit-learn's mistake rule (``y * z <= 0``) both update on it, which the
    comparison with scikit-learn relies on.
    """
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=d)
    normal /= np.linalg.norm(normal)
    offset = rng.uniform(-1, 1)
    X = rng.uniform(-3, 3, size=(6 * n, d)) + rng.uniform(-2, 2, size=d)
    score = X @ normal + offset
    keep = np.abs(score) >= margin
    X, score = X[keep][:n], score[keep][:n]
    y = np.where(score > 0, 1, -1)
    first = int(np.argmax(y == -1))
    order = [first] + [i for i in range(n) if i != first]
    return X[order], y[order]


@pytest.fixture(scope="session")
def iris() -> Dataset:
    """Iris setosa (-1) vs versicolor (+1): first 100 rows, sepal and petal length."""
    data = load_iris()
    X = data.data[:100][:, [0, 2]]
    y = np.where(data.target[:100] == 0, -1, 1)
    return X, y


@pytest.fixture(scope="session")
def blobs() -> Dataset:
    """The notebook's worked data set, with the blobs' own labels 0/1 kept."""
    return make_blobs(n_samples=100, centers=2, n_features=2, random_state=1)


@pytest.fixture(scope="session")
def separable_sets() -> list[Dataset]:
    """Three separable sets of different dimensions (2, 3 and 5 features)."""
    return [separable(seed=14, n=40, d=2), separable(seed=12, n=60, d=3), separable(seed=13, n=50, d=5)]
