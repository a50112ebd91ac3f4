"""Data for the week-1 hidden tests, built in the grader process.

The worked examples the instructions define (Iris, the blobs) are fixed; everything else
is drawn fresh per submission from the ``seed`` fixture (recorded in the result), so a
notebook that recognises known inputs gains nothing. Fresh data is function-scoped: the
grading loop keeps session fixtures from one submission to the next.

Only plain numpy arrays built here are sent to the submission; everything compared
against (expected values, scikit-learn fits) stays on this side.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Perceptron as SkPerceptron

Dataset = tuple[np.ndarray, np.ndarray]


def separable(seed: int, n: int, d: int, margin: float = 0.1) -> Dataset:
    """A linearly separable set of ``n`` points in ``d`` dimensions, labels -1/+1.

    The separating hyperplane has an offset of at least ``4 * margin`` and the set holds
    two points on one ray from the origin with opposite labels, so a perceptron without
    a bias can never separate it; no point lies within ``margin`` of the hyperplane, so
    the perceptron converges in a few epochs. The features are generic floats, so after
    the first update no net input is ever exactly 0.

    The first sample is a negative one. From zero weights the first net input is 0;
    with a negative first label, our tie rule (0 predicts +1, a mistake) and
    scikit-learn's mistake rule (``y * z <= 0``) both update on it, which the
    comparison with scikit-learn relies on.
    """
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=d)
    normal /= np.linalg.norm(normal)
    offset = rng.choice([-1, 1]) * rng.uniform(4 * margin, 1)
    X = rng.uniform(-3, 3, size=(6 * n, d)) + rng.uniform(-2, 2, size=d)
    score = X @ normal + offset
    keep = np.abs(score) >= margin
    X, score = X[keep][:n], score[keep][:n]
    far = np.flatnonzero(np.sign(score) != np.sign(offset))
    if len(X) < n or len(far) == 0 or far[0] == n - 1:
        return X[:0], score[:0]  # too few points, or no pair to plant: the caller draws again
    # A point q on the segment from the origin to p, on the origin's side: p and q lie on
    # one ray from the origin with opposite labels, which no hyperplane through the origin
    # separates. A perceptron without a bias then never converges, on every draw.
    p = X[far[0]]
    q = p * (-offset / (p @ normal)) / 2  # half-way to the crossing: score(q) = offset / 2
    X[-1], score[-1] = q, offset / 2
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


def converges_within(X: np.ndarray, y: np.ndarray, epochs: int) -> bool:
    """Whether the perceptron rule makes an epoch without mistakes within ``epochs``.

    scikit-learn's Perceptron (constant rate, no shuffling) makes the same mistakes as
    the task's rule from zero weights, whatever the rate, so it tells in the grader
    whether a correct submission converges on this draw."""
    reference = SkPerceptron(eta0=1.0, shuffle=False, max_iter=epochs - 1, tol=None, alpha=0.0, penalty=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference.fit(X, y)
    return bool((reference.decision_function(X) * y > 0).all())  # epoch ``epochs`` makes no update


def fresh_separable(seed: int, n: int, d: int, epochs: int = 20) -> Dataset:
    """A separable set drawn from ``seed`` on which the perceptron converges within ``epochs``
    (draws that would need more are redrawn, so a correct submission never fails by chance)."""
    for attempt in range(1000):
        X, y = separable(seed=seed * 1000 + attempt, n=n, d=d)
        if len(y) == n and (y == 1).any() and (y == -1).any() and converges_within(X, y, epochs):
            return X, y
    raise RuntimeError("no separable draw converged: widen the margin")


@pytest.fixture
def separable_sets(seed: int) -> list[Dataset]:
    """Three separable sets of different dimensions (2, 3 and 5 features), fresh per submission."""
    return [fresh_separable(seed + k, n=n, d=d) for k, (n, d) in enumerate([(40, 2), (60, 3), (50, 5)])]
