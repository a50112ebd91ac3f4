"""Task 2: the gradient of the mean cross-entropy.

Checked three ways that do not depend on how it is written (loop or matrix form): against
the formula, against the slope of the cost measured by finite differences (computed here
with our own cost, so a mistake in task 1 does not count again), and at scikit-learn's
optimum, where it must vanish.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from autograder.i18n import _


def cross_entropy(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """The mean cross-entropy, with log p and log(1 - p) computed without forming 1 - p.

    ``np.log(1 - expit(z))`` loses about 1e-16 / (1 - p) of relative precision when p is near 1
    (z of 10 or more), and a central difference divides that error by 2h = 2e-6: on about 3 %
    of random draws the slope measured that way missed a correct gradient by more than the
    tolerance. ``-logaddexp(0, -z)`` and ``-logaddexp(0, z)`` are exact to rounding."""
    z = X @ w
    return float(np.mean(y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z)))


def saturating(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``w`` scaled so that the largest |X @ w| is 300: most probabilities are then within
    1e-15 of 0 or 1, yet no exp(|z|) overflows (that needs |z| > 709)."""
    return w * (300.0 / float(np.max(np.abs(X @ w))))


def student_gradient(student, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    result = student.gradient(w, X, y)
    assert isinstance(result, np.ndarray), _("gradient returned a {type_name}; a numpy array is expected").format(type_name=type(result).__name__)
    assert result.shape == w.shape, _("gradient should return a 1-D array of the same length as w")
    return result.astype(float)


@pytest.mark.task(2)
@pytest.mark.points(12)
def test_gradient_formula(student, random_problem):
    """gradient(w, X, y) equals X.T @ (sigmoid(X @ w) - y) / m."""
    X, y, weights = random_problem
    # the last w puts most probabilities within 1e-15 of 0 or 1, where a clipped cost is
    # flat: the formula still gives the slope there, a difference quotient of the cost does
    # not. |X @ w| stays at most 300, so even a sigmoid that exponentiates directly (a
    # task 1 mistake) is exact there and costs nothing here (see saturating).
    for w in [*weights, saturating(weights[2], X)]:
        expected = X.T @ (expit(X @ w) - y) / len(y)
        result = student_gradient(student, w, X, y)
        assert float(np.max(np.abs(result - expected))) <= 1e-9 * (1 + float(np.max(np.abs(expected)))), _(
            "gradient should be X.T @ (sigmoid(X @ w) - y) divided by the number of samples"
        )


@pytest.mark.task(2)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, random_problem):
    """gradient leaves the caller's w, X and y as they were."""
    X, y, weights = random_problem
    # a saturated w, as the formula test's last: a slope measured from the (clipped) cost is
    # flat there, so a gradient by finite differences fails this test on every draw (at
    # weights[1] it passed on 99 draws in 100), and a task-1 mistake in sigmoid near z = 0
    # no longer costs this task-2 test its points
    w = saturating(weights[1], X)
    result = unchanged_inputs("gradient", student.gradient, w=w, X=X, y=y)
    # a property that doing nothing also has: it counts only when gradient did its job
    expected = X.T @ (expit(X @ w) - y) / len(y)
    assert isinstance(result, np.ndarray) and result.shape == expected.shape \
        and float(np.max(np.abs(result.astype(float) - expected))) <= 1e-9 * (1 + float(np.max(np.abs(expected)))), _(
            "leaving the inputs unchanged counts only once gradient returns X.T @ (sigmoid(X @ w) - y) / m"
        )


@pytest.mark.task(2)
@pytest.mark.points(8)
def test_gradient_matches_finite_differences(student, random_problem):
    """The gradient is the slope of the mean cross-entropy, measured numerically by central differences."""
    X, y, weights = random_problem
    h = 1e-6  # central differences: truncation error ~h**2, rounding error ~1e-16 / h
    for w in [*weights, saturating(weights[2], X)]:  # the last: probabilities within 1e-15 of 0 or 1 (our cost stays exact)
        numeric = np.array(
            [(cross_entropy(w + h * e, X, y) - cross_entropy(w - h * e, X, y)) / (2 * h) for e in np.eye(len(w))]
        )
        result = student_gradient(student, w, X, y)
        assert float(np.max(np.abs(result - numeric))) <= 1e-6 * (1 + float(np.max(np.abs(numeric)))), _(
            "the gradient does not match the numerical slope of the mean cross-entropy (sign? the 1/m factor?)"
        )


@pytest.mark.task(2)
@pytest.mark.points(3)
def test_gradient_vanishes_at_the_optimum(student, iris_sepal):
    """At the weights scikit-learn's unregularised LogisticRegression finds, the gradient is (almost) zero."""
    X, y = iris_sepal
    # C=np.inf is no regularisation (scikit-learn 1.8 deprecated penalty=None for it).
    model = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X[:, 1:], y)
    w = np.concatenate([model.intercept_, model.coef_.ravel()])
    result = student_gradient(student, w, X, y)
    assert float(np.max(np.abs(result))) <= 1e-6, _("at the minimum of the cost the gradient should be zero")
    # a property that doing nothing also has: zero at the optimum counts only when it is not zero everywhere
    away = student_gradient(student, np.zeros_like(w), X, y)
    expected = X.T @ (0.5 - y) / len(y)
    assert float(np.max(np.abs(away))) >= 0.5 * float(np.max(np.abs(expected))), _(
        "away from the minimum (at w = 0) the gradient should not be zero: the cost slopes there"
    )
