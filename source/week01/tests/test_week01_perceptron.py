"""Task 1: the perceptron learning rule, judged by behaviour.

Correct implementations may differ: a loop or vectorised net input, the update
``eta * y * x`` or ``eta * (y - y_hat) * x``. From zero weights the second is the first
times 2 at every step, so both make the same mistakes in the same order and end with
weights pointing the same way. Every test below checks only what they share: mistakes
per epoch, predictions, shapes and weight directions, never the weights' scale.

Comparisons use plain Python or numpy arithmetic, never ``np.allclose`` or
``np.array_equal``, which a notebook could rebind (it cannot reach the grader's numpy in
a sandboxed run, but a trusted in-process run shares it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import Perceptron as SkPerceptron

from autograder.i18n import _

IRIS_ERRORS = [2, 2, 3, 2, 1, 0, 0, 0, 0, 0]
PLAIN_TYPES = (type(None), bool, int, float, str, list, tuple, dict, np.ndarray)


def as_int_list(value: object) -> list[int] | None:
    """``value`` as a list of ints when it is a sequence of whole numbers, else None."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        return None
    items = list(np.asarray(value).ravel()) if isinstance(value, np.ndarray) else list(value)
    if not all(isinstance(e, (int, float, np.integer, np.floating)) and float(e).is_integer() for e in items):
        return None
    return [int(e) for e in items]


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest elementwise difference: a tolerance check that no notebook can rebind."""
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def weights(ppn: object, n_features: int) -> np.ndarray:
    """The fitted ``w_`` as a float vector, after checking its shape."""
    w = ppn.w_
    assert isinstance(w, np.ndarray), _("w_ should be a numpy array")
    assert w.shape == (1 + n_features,), _("w_ should have shape (1 + n_features,): the bias first, then one weight per feature")
    return w.astype(float)


def labels(ppn: object, X: np.ndarray) -> np.ndarray:
    """``predict(X)`` as an int vector, after checking it holds one label -1/+1 per row."""
    pred = ppn.predict(X)
    assert isinstance(pred, (list, np.ndarray)), _("predict(X) should return a list or a 1-D numpy array")
    pred = np.asarray(pred)
    assert pred.ndim == 1, _("predict(X) should return a list or a 1-D numpy array, not an array of {ndim} dimensions").format(ndim=pred.ndim)
    assert pred.shape == (len(X),), _("predict(X) should return one label per row of X")
    assert set(np.unique(pred).tolist()) <= {-1, 1}, _("predict should return labels -1 and +1 only")
    return pred.astype(int)


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_fit_returns_self(student, iris):
    """fit returns the perceptron itself, so Perceptron(...).fit(X, y).predict(X) works."""
    X, y = iris
    ppn = student.Perceptron(eta=0.1, n_iter=10)
    returned = ppn.fit(X, y)
    assert not isinstance(returned, PLAIN_TYPES), _("fit should end with `return self`")
    # Refit through the returned object on one feature only: if it is the perceptron
    # itself, the original object now holds a weight vector of the new shape.
    returned.fit(X[:, :1], y)
    assert np.shape(ppn.w_) == (2,), _("fit should return the perceptron itself (self), not a copy or another object")


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_errors_is_a_list_of_ints_per_epoch(student, iris, separable_sets):
    """errors_ is a Python list with one int per epoch: the number of updates made in that epoch."""
    for (X, y), n_iter in [(iris, 10), (separable_sets[1], 7)]:
        ppn = student.Perceptron(eta=0.1, n_iter=n_iter).fit(X, y)
        errors = ppn.errors_
        assert isinstance(errors, list), _("errors_ should be a Python list")
        assert len(errors) == n_iter, _("errors_ should have one entry per epoch (n_iter entries)")
        assert all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in errors), _("every entry of errors_ should be an int")
        assert all(0 <= e <= len(X) for e in errors), _("an epoch makes between 0 and n_samples updates")


@pytest.mark.task(1)
@pytest.mark.points(6)
def test_iris_run(student, iris):
    """The classic run: Iris setosa vs versicolor, eta=0.1, n_iter=10 (updates per epoch and final predictions)."""
    X, y = iris
    ppn = student.Perceptron(eta=0.1, n_iter=10).fit(X, y)
    weights(ppn, X.shape[1])
    assert as_int_list(ppn.errors_) == IRIS_ERRORS, _("errors_ on the Iris run does not match the perceptron rule (updates per epoch)")
    assert (labels(ppn, X) == y).all(), _("after training, the Iris training points should all be classified correctly")


@pytest.mark.task(1)
@pytest.mark.points(3)
def test_net_input_and_predict(student, iris, rng):
    """net_input(X) is X @ w_[1:] + w_[0] and predict(X) is +1 where it is >= 0, else -1."""
    X, y = iris
    ppn = student.Perceptron(eta=0.1, n_iter=10).fit(X, y)
    w = weights(ppn, X.shape[1])
    probes = np.vstack([X, rng.uniform([4.0, 0.5], [7.5, 5.5], size=(50, 2))])
    expected = probes @ w[1:] + w[0]
    net = ppn.net_input(probes)
    assert isinstance(net, np.ndarray), _("net_input(X) returned a {type_name}; a numpy array is expected").format(type_name=type(net).__name__)
    net = net.astype(float)
    assert net.shape == (len(probes),), _("net_input(X) should return one value per row of X")
    assert max_abs_diff(net, expected) <= 1e-9 * (1 + float(np.max(np.abs(expected)))), _("net_input(X) should equal X @ w_[1:] + w_[0]")
    clear = np.abs(expected) > 1e-9
    assert (labels(ppn, probes)[clear] == np.where(expected >= 0, 1, -1)[clear]).all(), _("predict(X) should be +1 where net_input(X) >= 0 and -1 elsewhere")


@pytest.mark.task(1)
@pytest.mark.points(1)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, separable_sets):
    """fit, net_input and predict leave the caller's X and y as they were (no in-place scaling or relabelling)."""
    X, y = separable_sets[0]
    ppn = unchanged_inputs("fit", student.Perceptron(eta=0.1, n_iter=30).fit, X=X, y=y)
    unchanged_inputs("net_input", ppn.net_input, X=X)
    predicted = unchanged_inputs("predict", ppn.predict, X=X)
    # a property that doing nothing also has: it counts only when fit did its job
    assert isinstance(predicted, (list, np.ndarray)) and np.shape(predicted) == y.shape and (np.asarray(predicted) == y).all(), _(
        "leaving the inputs unchanged counts only once fit learns: on separable data every training point should end up classified correctly"
    )


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_refit_starts_afresh(student, separable_sets):
    """Calling fit again starts over: w_ from zeros and errors_ from an empty list, as a new perceptron would."""
    X, y = separable_sets[1]
    fresh = student.Perceptron(eta=0.1, n_iter=5).fit(X, y)
    refitted = student.Perceptron(eta=0.1, n_iter=5)
    refitted.fit(X, y)
    refitted.fit(X, y)
    assert as_int_list(refitted.errors_) == as_int_list(fresh.errors_), _(
        "fit should set errors_ = [] each time it is called: a second fit should not continue the first one's list"
    )
    w_fresh, w_again = weights(fresh, X.shape[1]), weights(refitted, X.shape[1])
    assert max_abs_diff(w_again, w_fresh) == 0.0, _(
        "fit should start from w_ = zeros each time it is called: a second fit should give what a new perceptron gives"
    )


@pytest.mark.task(1)
@pytest.mark.points(6)
def test_tie_goes_to_plus_one(student, rng):
    """A net input of exactly 0 predicts +1, in predict and in the update decision in fit."""
    x = rng.uniform(-3, 3, size=(1, 2))
    # From zero weights the net input is exactly 0: a +1 sample is already correct.
    ppn = student.Perceptron(eta=0.1, n_iter=3).fit(x, np.array([1]))
    assert as_int_list(ppn.errors_) == [0, 0, 0], _("a sample with net input 0 and label +1 is classified correctly: fit should not update")
    assert max_abs_diff(weights(ppn, 2), np.zeros(3)) == 0.0, _("with no mistakes, w_ should stay all zeros")
    probes = rng.normal(size=(5, 2))
    assert (labels(ppn, probes) == 1).all(), _("with all-zero weights every net input is 0, so predict should return +1")
    # The same sample labelled -1 is a mistake: one update, then it is classified -1.
    ppn = student.Perceptron(eta=0.1, n_iter=3).fit(x, np.array([-1]))
    assert as_int_list(ppn.errors_) == [1, 0, 0], _("a sample with net input 0 and label -1 is a mistake: fit should update once, then no more")
    assert (labels(ppn, x) == -1).all(), _("after that update the sample should be classified -1")


@pytest.mark.task(1)
@pytest.mark.points(4)
def test_bias_is_learned(student, rng):
    """The bias w_[0] is updated too: it learns data that no line through the origin separates."""
    low = rng.uniform(1.0, 4.0)  # all positive: a line through the origin cannot split them
    X = np.array([[low], [low + 1.0], [low + 4.0], [low + 5.0]])
    y = np.array([-1, -1, 1, 1])
    # 100 epochs: from zero weights the rule needs up to ~40 on some draws (low near 2.76)
    ppn = student.Perceptron(eta=0.1, n_iter=100).fit(X, y)
    w = weights(ppn, 1)
    assert w[0] != 0.0, _("w_[0] (the bias) should be updated along with the feature weights")
    errors = as_int_list(ppn.errors_)
    assert errors and errors[-1] == 0, _("on separable data that needs a bias, training should reach an epoch with no updates")
    assert (labels(ppn, X) == y).all(), _("on separable data that needs a bias, every training point should end up classified correctly")


@pytest.mark.task(1)
@pytest.mark.points(6)
def test_separable_data_converges(student, separable_sets):
    """On random linearly separable data (2, 3 and 5 features) training converges and classifies every point."""
    for X, y in separable_sets:
        ppn = student.Perceptron(eta=0.1, n_iter=30).fit(X, y)  # the reference converges by epoch 10
        weights(ppn, X.shape[1])
        errors = as_int_list(ppn.errors_)
        assert errors is not None and len(errors) == 30, _("errors_ should hold one whole number of updates per epoch")
        assert errors[-1] == 0, _("on separable data the last epochs should make no updates")
        assert (labels(ppn, X) == y).all(), _("on separable data every training point should end up classified correctly")


@pytest.mark.task(1)
@pytest.mark.points(8)
def test_agrees_with_scikit_learn(student, separable_sets):
    """After 1, 2 and 5 epochs, the weights point the same way as scikit-learn's Perceptron, and the predictions agree."""
    # scikit-learn's Perceptron with a constant learning rate, no shuffling, no
    # regularisation and no early stop is the same algorithm: from zero weights it
    # updates w += eta0 * y * x (intercept included) on every sample with y * z <= 0.
    # Our rule updates where predict(x) != y; the two differ only at z == 0, which
    # happens at the first sample (zero weights) and, on these generic float data, never
    # again. The first sample is negative (see conftest.separable), so both update there.
    # Hence both make the same mistakes, and any correct w_ is a positive multiple of
    # (intercept_, coef_) whatever eta and whichever update form: compare directions.
    for X, y in separable_sets:
        for n_iter in (1, 2, 5):
            reference = SkPerceptron(
                eta0=1.0, shuffle=False, fit_intercept=True, max_iter=n_iter, tol=None, alpha=0.0, penalty=None
            )
            reference.fit(X, y)
            expected = np.concatenate([reference.intercept_, reference.coef_.ravel()])
            ppn = student.Perceptron(eta=0.1, n_iter=n_iter).fit(X, y)
            w = weights(ppn, X.shape[1])
            norm = float(np.linalg.norm(w))
            assert norm > 0.0, _("after a mistake the weights should no longer be all zeros")
            cosine = float(w @ expected) / (norm * float(np.linalg.norm(expected)))
            assert math.isclose(cosine, 1.0, abs_tol=1e-9), _("the weights should point the same way as scikit-learn's Perceptron after the same epochs")
            assert (labels(ppn, X) == reference.predict(X)).all(), _("predictions should agree with scikit-learn's Perceptron trained the same way")
