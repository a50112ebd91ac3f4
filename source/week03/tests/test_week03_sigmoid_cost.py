"""Task 1: a numerically safe sigmoid and a cross-entropy that stays finite.

A warning raised inside the student's process cannot be seen from here, so "stable" is
judged by what the functions return: finite values, equal to the logistic function
(scipy's ``expit``) to rounding, and reaching 0 and 1 at z = -1000 and z = 1000.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from autograder.i18n import _


def values(result: object, shape: tuple[int, ...], what: str) -> np.ndarray:
    assert isinstance(result, np.ndarray), _("{function} returned a {type_name}; a numpy array is expected").format(function=what, type_name=type(result).__name__)
    assert result.shape == shape, _("{function} should return an array of the same shape as its input").format(function=what)
    return result.astype(float)


def is_the_cross_entropy(value: float, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> bool:
    """``value`` is the mean cross-entropy to rounding, computed either way a correct answer may:
    from p (``log(1 - p)`` loses about 1e-16 / (1 - p) of relative precision when p is near 1,
    as the formula written with p does) or exactly (``logaddexp(0, -z)`` and ``logaddexp(0, z)``).
    On rare draws the two differ by more than 1e-9: judged against one, the other would lose
    the points of a correct cost by chance."""
    z = X @ w
    p = expit(z)
    from_p = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    exact = float(np.mean(y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z)))
    return any(abs(value - expected) <= 1e-9 * max(1.0, abs(expected)) for expected in (from_p, exact))


@pytest.mark.task(1)
@pytest.mark.points(4)
def test_sigmoid_values(student, rng):
    """sigmoid(z) is the logistic function 1 / (1 + e^-z), elementwise, on an array of z."""
    z = np.concatenate([np.linspace(-30.0, 30.0, 121), rng.normal(scale=4.0, size=40)])
    result = values(student.sigmoid(z), z.shape, "sigmoid")
    assert np.isfinite(result).all(), _("sigmoid should return finite values")
    assert float(np.max(np.abs(result - expit(z)))) <= 1e-12, _("sigmoid(z) should equal 1 / (1 + exp(-z)) for every element")


@pytest.mark.task(1)
@pytest.mark.points(1)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, random_problem):
    """sigmoid and cost leave the caller's arrays as they were (no in-place clipping of z or of the data)."""
    X, y, weights = random_problem
    z = np.concatenate([np.linspace(-1000.0, 1000.0, 11), X @ weights[2]])
    probabilities = unchanged_inputs("sigmoid", student.sigmoid, z=z)
    value = unchanged_inputs("cost", student.cost, w=weights[2], X=X, y=y)
    # a property that doing nothing also has: it counts only when the functions did their job
    sigmoid_right = isinstance(probabilities, np.ndarray) and probabilities.shape == z.shape \
        and float(np.max(np.abs(probabilities.astype(float) - expit(z)))) <= 1e-12
    cost_right = isinstance(value, (int, float)) and is_the_cross_entropy(value, weights[2], X, y)
    assert sigmoid_right and cost_right, _(
        "leaving the inputs unchanged counts only once sigmoid and cost return the right values"
    )


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_sigmoid_no_overflow_warning(student):
    """sigmoid never exponentiates a large number: no overflow warning at z = -1000 and z = 1000, and at z = -710 and -720, where e^-z overflows, it returns e^z / (1 + e^z), tiny but not 0."""
    z = np.array([-1000.0, -745.0, -720.0, -710.0, 0.0, 745.0, 1000.0])
    result, caught = student.call_with_warnings(student.sigmoid, z)
    overflow = [w for w in caught if w.startswith("RuntimeWarning")]
    assert not overflow, _("sigmoid raised a RuntimeWarning (overflow in exp) for a large |z|: use a form that only exponentiates -|z|")
    # a property that doing nothing also has: it counts only when the values are right
    result = values(result, z.shape, "sigmoid")
    assert float(np.max(np.abs(result - expit(z)))) <= 1e-12, _(
        "raising no warning counts only once sigmoid returns the logistic function's values at these z"
    )
    # the warning is the student's process's to silence (np.errstate), the values are not:
    # where e^-z overflows, 1 / (1 + e^-z) is 0, while e^z / (1 + e^z) is e^z, a subnormal
    beyond = np.isin(z, [-720.0, -710.0])
    tiny = np.exp(z[beyond])  # e^z / (1 + e^z) with 1 + e^z == 1: exact
    assert bool(np.all(np.abs(result[beyond] - tiny) <= 1e-9 * tiny)), _(
        "sigmoid(-710) and sigmoid(-720) should be e^z / (1 + e^z), tiny but not 0: there exp(-z) overflows, "
        "so 1 / (1 + exp(-z)) gives 0; compute e^z / (1 + e^z) for z < 0, exponentiating only -|z|"
    )


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_sigmoid_extremes(student):
    """sigmoid stays finite for very large |z|, and is 1 at z = 1000 and 0 at z = -1000."""
    z = np.array([-1000.0, -800.0, -745.0, -710.0, -40.0, 0.0, 40.0, 710.0, 745.0, 800.0, 1000.0])
    result = values(student.sigmoid(z), z.shape, "sigmoid")
    assert np.isfinite(result).all(), _("sigmoid returned inf or nan for a large |z|: avoid exponentiating a large positive number")
    assert float(np.max(np.abs(result - expit(z)))) <= 1e-12, _("sigmoid should stay equal to the logistic function for very large |z|")
    assert abs(result[-1] - 1.0) <= 1e-12 and abs(result[0]) <= 1e-12, _("sigmoid(1000) should be 1 and sigmoid(-1000) should be 0")
    assert result[5] == 0.5, _("sigmoid(0) should be exactly 0.5")


@pytest.mark.task(1)
@pytest.mark.points(3)
def test_cost_value(student, random_problem):
    """cost(w, X, y) is the mean cross-entropy -mean(y log p + (1 - y) log(1 - p)) with p = sigmoid(X @ w)."""
    X, y, weights = random_problem
    for w in weights:
        result = student.cost(w, X, y)
        assert isinstance(result, (int, float)), _("cost should return a single number")
        assert is_the_cross_entropy(result, w, X, y), _(
            "cost should be the mean (not the sum) of the cross-entropy over the samples"
        )


@pytest.mark.task(1)
@pytest.mark.points(3)
def test_cost_finite_at_certainty(student):
    """cost stays finite when a probability is exactly 0 or 1: small when right, large when wrong."""
    X = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 0.5], [1.0, -0.5]])
    w = np.array([0.0, 1000.0])  # probabilities exactly 1, 0, 1, 0 in floating point
    right = student.cost(w, X, np.array([1.0, 0.0, 1.0, 0.0]))
    assert isinstance(right, (int, float)), _("cost should return a single number")
    assert np.isfinite(right), _("cost returned inf or nan when the probabilities are exactly 0 and 1 and all predictions are right")
    assert 0.0 <= right <= 1e-3, _("confident right predictions should cost (almost) nothing")
    wrong = student.cost(w, X, np.array([0.0, 0.0, 1.0, 0.0]))
    assert isinstance(wrong, (int, float)) and np.isfinite(wrong), _(
        "cost returned inf or nan for a confident wrong prediction (probability exactly 0 or 1): clip the probabilities"
    )
    assert wrong > 2.0, _("a confident wrong prediction should cost a lot (about -log of the clipping epsilon per sample)")
