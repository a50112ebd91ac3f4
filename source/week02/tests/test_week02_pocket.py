"""Task 1: the pocket algorithm, judged by behaviour.

The algorithm is deterministic once its start, pass order and pocket rule are fixed, so
beyond the invariants (the pocket holds the lowest E_in seen, and error_in_sample_ is
E_in of w_) the run itself is compared with one computed here. One legitimate
difference is accepted: the update ``eta * y * x`` or ``eta * (y - y_hat) * x``. The
second is the first with eta doubled (y - y_hat is 2y on a mistake), and from random
starting weights that changes the run, so both runs are computed and either matches.

Comparisons use plain numpy arithmetic, never ``np.allclose``, which a notebook could
rebind in a trusted in-process run.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.i18n import _

EXACT = 1e-12  # E_in values are fractions k/N: equal ones agree to rounding


def predict(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The course's prediction rule: +1 where the net input is >= 0, else -1."""
    return np.where(X @ w[1:] + w[0] >= 0.0, 1, -1)


def labels(model: object, X: np.ndarray) -> np.ndarray:
    """``model.predict(X)`` as an array, after checking it is a list or 1-D array with one label per row."""
    pred = model.predict(X)
    assert isinstance(pred, (list, np.ndarray)), _("predict(X) should return a list or a 1-D numpy array")
    pred = np.asarray(pred)
    assert pred.ndim == 1, _("predict(X) should return a list or a 1-D numpy array, not an array of {ndim} dimensions").format(ndim=pred.ndim)
    assert pred.shape == (len(X),), _("predict(X) should return one label per row of X")
    return pred


def in_sample_error(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(predict(w, X) != y))


def pocket_run(X: np.ndarray, y: np.ndarray, eta: float, n_iter: int, random_state: int) -> tuple[np.ndarray, list[float]]:
    """The reference pocket: (pocketed weights, E_in after each epoch)."""
    w = np.random.RandomState(random_state).normal(0.0, 0.01, 1 + X.shape[1])
    errors: list[float] = []
    best = w.copy()
    for _epoch in range(n_iter):
        updates = 0
        for xi, target in zip(X, y):
            if (1 if xi @ w[1:] + w[0] >= 0.0 else -1) != target:
                w[1:] += eta * target * xi
                w[0] += eta * target
                updates += 1
        errors.append(in_sample_error(w, X, y))
        if len(errors) == 1 or errors[-1] < min(errors[:-1]):
            best = w.copy()
        if updates == 0:
            break
    return best, errors


def follows_a_pocket_run(errors: object, X: np.ndarray, y: np.ndarray, eta: float, n_iter: int, random_state: int) -> bool:
    """Whether ``errors`` is E_in after each epoch of the pocket run (either update rule: eta or 2 * eta)."""
    if not isinstance(errors, list) or not all(isinstance(e, (int, float)) for e in errors):
        return False
    return any(len(errors) == len(ref) and all(abs(a - b) <= EXACT for a, b in zip(errors, ref))
               for ref in (pocket_run(X, y, rate, n_iter, random_state)[1] for rate in (eta, 2 * eta)))


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def fitted(student, X: np.ndarray, y: np.ndarray, **params: float) -> tuple[object, np.ndarray, list[float], float]:
    """Fit a student Pocket; return (model, w_, errors_, error_in_sample_) after checking their types."""
    model = student.Pocket(**params).fit(X, y)
    w = model.w_
    assert isinstance(w, np.ndarray), _("w_ should be a numpy array")
    assert w.shape == (1 + X.shape[1],), _("w_ should have shape (1 + n_features,): the bias first, then one weight per feature")
    assert w.dtype == np.float64, _(
        "w_ should hold float64 numbers (NumPy's default): lower precision changes the run"
    )
    errors = model.errors_
    assert isinstance(errors, list), _("errors_ is a {type_name}; a list with E_in after each epoch is expected").format(type_name=type(errors).__name__)
    errors = [float(e) for e in np.asarray(errors, dtype=float).ravel()]
    error = model.error_in_sample_
    assert isinstance(error, (int, float)), _("error_in_sample_ should be a number (the pocketed weights' E_in)")
    return model, w.astype(float), errors, float(error)


@pytest.mark.task(1)
@pytest.mark.points(8)
def test_starts_from_seeded_random_weights(student, start_sets):
    """fit starts from RandomState(random_state).normal(0, 0.01, 1 + n_features), not from zeros."""
    for random_state, (X, y) in start_sets.items():
        expected = np.random.RandomState(random_state).normal(0.0, 0.01, 1 + X.shape[1])
        _model, w, errors, error = fitted(student, X, y, eta=1.0, n_iter=10, random_state=random_state)
        assert len(errors) == 1 and errors[0] == 0.0, _(
            "on data the starting weights already separate, the first epoch makes no update and fit should stop after it"
        )
        assert error == 0.0, _("error_in_sample_ should be 0 when the pocketed weights classify every point correctly")
        assert max_abs_diff(w, expected) <= 1e-12, _(
            "the starting weights should be np.random.RandomState(random_state).normal(0, 0.01, 1 + n_features)"
        )


@pytest.mark.task(1)
@pytest.mark.points(8)
def test_stopping_rule(student, separable_sets, noisy_sets):
    """fit stops after an epoch without updates on separable data, and runs all n_iter epochs otherwise."""
    for X, y in separable_sets:
        model, w, errors, error = fitted(student, X, y, eta=1.0, n_iter=500, random_state=1)
        assert errors and errors[-1] == 0.0, _("on separable data the last epoch should have E_in = 0")
        # E_in reaches 0 after an epoch that still made updates; the next epoch makes none and
        # fit stops there, so errors_ ends with two zeros (one, if the start already separates).
        # The reference run the student's follows (either update rule, as in
        # test_matches_the_pocket_run) says how many epochs; a run that follows neither is
        # judged there, and here only by the first zero.
        runs = [pocket_run(X, y, eta, 500, random_state=1)[1] for eta in (1.0, 2.0)]
        followed = [ref for ref in runs if max_abs_diff(errors[:len(ref)], ref[:len(errors)]) <= EXACT]
        expected = len(followed[0]) if followed else errors.index(0.0) + 2
        assert len(errors) >= expected or not followed, _(
            "fit stopped too early: it should stop after an epoch that makes no update, "
            "not as soon as E_in reaches 0 (the epoch after it, without updates, is counted in errors_)"
        )
        assert len(errors) <= expected, _("fit should stop after the first epoch without updates, not run on")
        assert error == 0.0, _("on separable data error_in_sample_ should end at 0")
        assert (labels(model, X) == y).all(), _("on separable data every training point should end up classified correctly")
    for X, y in noisy_sets:
        _model, _w, errors, _error = fitted(student, X, y, eta=0.3, n_iter=7, random_state=1)
        assert len(errors) == 7, _("on data no line separates, every epoch makes updates: errors_ should have n_iter entries")


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, noisy_sets):
    """fit, net_input and predict leave the caller's X and y as they were (no in-place scaling or relabelling)."""
    X, y = noisy_sets[2]
    model = unchanged_inputs("fit", student.Pocket(eta=0.3, n_iter=5, random_state=1).fit, X=X, y=y)
    unchanged_inputs("net_input", model.net_input, X=X)
    unchanged_inputs("predict", model.predict, X=X)
    # a property that doing nothing also has: it counts only when fit did its job
    assert follows_a_pocket_run(model.errors_, X, y, eta=0.3, n_iter=5, random_state=1), _(
        "leaving the inputs unchanged counts only once fit runs the pocket algorithm: errors_ differs from its E_in after each epoch"
    )


@pytest.mark.task(1)
@pytest.mark.points(8)
def test_pocket_keeps_the_best(student, noisy_sets):
    """On non-separable data, w_ has the lowest E_in of all epochs and error_in_sample_ is E_in of w_."""
    for X, y in noisy_sets:
        model, w, errors, error = fitted(student, X, y, eta=0.3, n_iter=25, random_state=1)
        assert len(errors) == 25, _("errors_ should have one entry per epoch")
        assert all(0.0 <= e <= 1.0 for e in errors), _("errors_ should hold E_in, the fraction of misclassified points")
        assert abs(error - min(errors)) <= EXACT, _("error_in_sample_ should be the lowest E_in in errors_")
        assert abs(in_sample_error(w, X, y) - error) <= EXACT, _(
            "error_in_sample_ should be the in-sample error of the returned weights w_ (are w_ the pocketed weights, and a copy?)"
        )
        net = model.net_input(X)
        assert isinstance(net, np.ndarray), _("net_input(X) returned a {type_name}; a numpy array is expected").format(type_name=type(net).__name__)
        net = net.astype(float)
        assert net.shape == (len(X),), _("net_input(X) should return one value per row of X")
        expected = X @ w[1:] + w[0]
        assert max_abs_diff(net, expected) <= 1e-9 * (1 + float(np.max(np.abs(expected)))), _("net_input(X) should be X @ w_[1:] + w_[0]")
        assert (labels(model, X) == predict(w, X)).all(), _("predict(X) should be +1 where net_input(X) >= 0, else -1")


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_leaves_the_global_random_state_alone(student, noisy_sets, seed):
    """fit draws its start from its own RandomState(random_state) and leaves NumPy's global random generator alone (no np.random.seed)."""
    X, y = noisy_sets[2]
    # NumPy's global generator is read from NumPy as the worker loaded it before the notebook
    # ran, never through the notebook's `np` (a last cell could rebind it to a module with a
    # private `random`). The state is first set to one only this test knows, and read back.
    numpy = student.module("numpy")
    expected = state_key(np.random.RandomState(seed).get_state())
    numpy.random.seed(seed)
    assert state_key(numpy.random.get_state()) == expected, _(
        "NumPy's global random state did not read back as the grader set it: leave np.random's functions as NumPy defines them"
    )
    model = student.Pocket(eta=0.3, n_iter=3, random_state=7).fit(X, y)
    after = numpy.random.get_state()
    assert state_key(after) == expected, _(
        "fit changed NumPy's global random state (np.random.seed or a draw from np.random): "
        "draw the starting weights from np.random.RandomState(random_state), which leaves the caller's random numbers alone"
    )
    # a property that doing nothing also has: it counts only when fit did its job
    assert follows_a_pocket_run(model.errors_, X, y, eta=0.3, n_iter=3, random_state=7), _(
        "leaving the global random state alone counts only once fit runs the pocket algorithm: errors_ differs from its E_in after each epoch"
    )


def state_key(state: object) -> tuple:
    """``np.random.get_state()`` as comparable plain values."""
    assert isinstance(state, tuple) and len(state) == 5 and isinstance(state[1], np.ndarray), _("np.random.get_state() did not answer as NumPy's does")
    return (state[0], state[1].tobytes(), *state[2:])


@pytest.mark.task(1)
@pytest.mark.points(22)
def test_matches_the_pocket_run(student, noisy_sets):
    """Perceptron passes in order, E_in after each pass, and pocketing only on a strict improvement, epoch by epoch."""
    for X, y in noisy_sets:
        _model, w, errors, _error = fitted(student, X, y, eta=0.3, n_iter=25, random_state=1)
        runs = [pocket_run(X, y, eta, 25, random_state=1) for eta in (0.3, 0.6)]
        same_errors = [
            len(errors) == len(ref) and max_abs_diff(errors, ref) <= EXACT for _best, ref in runs
        ]
        assert any(same_errors), _(
            "errors_ differs from the pocket algorithm's E_in after each epoch "
            "(update every misclassified point in order with eta, then measure E_in of the weights you hold)"
        )
        best = runs[same_errors.index(True)][0]
        assert max_abs_diff(w, best) <= 1e-9 * (1 + float(np.max(np.abs(best)))), _(
            "w_ should be the weights after the first epoch with the lowest E_in (pocket only on a strict improvement)"
        )
    # fit called a second time on the same object starts over (the instructions' "each fit"):
    # errors_ from an empty list and the weights from the seeded start again
    X, y = noisy_sets[0]
    model = student.Pocket(eta=0.3, n_iter=6, random_state=1)
    model.fit(X, y)
    again = model.fit(X, y)
    errors = again.errors_
    expected = [pocket_run(X, y, eta, 6, random_state=1)[1] for eta in (0.3, 0.6)]
    assert isinstance(errors, list) and any(
        len(errors) == len(ref) and max_abs_diff(errors, ref) <= EXACT for ref in expected
    ), _("a second fit on the same object should start over (errors_ = [] and the seeded starting weights), not continue the first")
