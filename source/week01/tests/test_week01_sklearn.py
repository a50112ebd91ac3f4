"""Task 2: scikit-learn's Perceptron fitted on the blobs as ``ppn``.

What the task teaches is fitting scikit-learn's model, so that carries most of the points;
the weights' accuracy on the blobs, which hand-typed weights can reach too, carries the
rest. Nothing here runs computation whose size or settings the student chooses: ``ppn``'s
settings (``get_params()``) are read as data and checked against what the task allows
(``TASK_SETTINGS``), and the grader then fits its *own* scikit-learn Perceptron with its
own copy of those checked values, with an epoch cap of its own. ``ppn`` itself is fitted
again only in the worker, on the student's time budget.

That ``ppn`` is scikit-learn's Perceptron is judged by behaviour, never by its class name
(a student's own class can be called ``Perceptron`` and carry hand-typed ``coef_``). The
last test refits ``ppn`` in the worker, so it runs last (pytest runs a file's tests in
order), and fits it on the blobs again afterwards.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Perceptron as SkPerceptron

from autograder.i18n import _
from autograder.testing import StudentCodeError

MISSING = object()
MAX_EPOCHS = 10_000  # the largest max_iter the grader fits with: 100 points x 10 000 epochs is milliseconds
# Parameters the task leaves free, and what the grader accepts for each (checked as data).
FREE = ("eta0", "random_state", "shuffle", "max_iter", "tol", "n_iter_no_change", "verbose", "n_jobs")
# Parameters the task does not ask to change: they must keep scikit-learn's default, which
# is what the task's perceptron is (no penalty, a learned intercept, every sample for training).
FIXED = {"penalty": None, "fit_intercept": True, "early_stopping": False, "class_weight": None, "warm_start": False}
# Parameters that have no effect under FIXED (alpha and l1_ratio only act with a penalty,
# validation_fraction only with early stopping): any number is accepted and none is used.
INERT = ("alpha", "l1_ratio", "validation_fraction")


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_count(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def checked_settings(ppn: object) -> dict:
    """``ppn``'s settings checked against the task (as data): the grader's settings for its own Perceptron.

    Each parameter of scikit-learn's Perceptron is read as the attribute scikit-learn
    stores it in, one value at a time (never ``get_params()``'s dict, whose keys would be
    strings the worker chose). Returns only the free parameters, with verbose and n_jobs
    replaced by the grader's (they change neither the fit nor its result), and the fixed
    ones at their defaults. Messages never say "Perceptron" with a capital P: the worker
    named ``ppn``'s class so, and feedback refuses to repeat what the worker said.
    """
    params = {}
    for name in SkPerceptron().get_params():
        try:
            params[name] = getattr(ppn, name)
        except StudentCodeError:
            params[name] = MISSING
        assert params[name] is not MISSING, _("ppn should be scikit-learn's perceptron (sklearn.linear_model): it has no parameter {name}").format(name=name)
    for name, default in FIXED.items():
        assert params[name] is default or (type(params[name]) is type(default) and params[name] == default), _(
            "ppn's parameter {name} should keep its default ({default}): the task asks for the plain perceptron"
        ).format(name=name, default=repr(default))
    for name in INERT:
        assert is_number(params[name]), _("ppn's parameter {name} should be a number").format(name=name)
    eta0, random_state, shuffle = params["eta0"], params["random_state"], params["shuffle"]
    assert is_number(eta0) and 0 < eta0 <= 1000, _("eta0 should be a positive number (at most 1000)")
    assert isinstance(shuffle, bool), _("shuffle should be True or False")
    assert is_count(random_state, 0, 2**32 - 1) or (random_state is None and shuffle is False), _(
        "random_state should be an int (0 to 2**32 - 1), so that the shuffled fit can be reproduced"
    )
    assert is_count(params["max_iter"], 1, MAX_EPOCHS), _("max_iter should be an int from 1 to {limit}").format(limit=MAX_EPOCHS)
    assert params["tol"] is None or (is_number(params["tol"]) and params["tol"] >= 0), _("tol should be None or a number >= 0")
    assert is_count(params["n_iter_no_change"], 1, 1000), _("n_iter_no_change should be an int from 1 to 1000")
    assert is_count(params["verbose"], 0, 1000), _("verbose should be a small int (the grader's own fit prints nothing)")
    assert params["n_jobs"] is None or is_count(params["n_jobs"], -1, 1000), _("n_jobs should be None or a small int")
    grader = {name: params[name] for name in FREE}
    grader.update(verbose=0, n_jobs=None, **FIXED)
    return grader


def fitted_parameters(student) -> tuple[np.ndarray, np.ndarray]:
    """``ppn.coef_`` and ``ppn.intercept_`` as float arrays, after checking they exist and have the blobs' shapes."""
    ppn = student.ppn  # a missing ppn raises MissingName: the test fails saying so
    try:
        coef, intercept = ppn.coef_, ppn.intercept_
    except StudentCodeError:
        coef = intercept = None  # scikit-learn sets coef_ and intercept_ in fit only
    assert coef is not None, _("ppn is not fitted: call ppn.fit(X, y) on the blobs")
    assert isinstance(coef, np.ndarray) and coef.shape == (1, 2), _("ppn.coef_ should have shape (1, 2): fit ppn on the two blob features")
    assert isinstance(intercept, np.ndarray) and intercept.shape == (1,), _("ppn.intercept_ should have shape (1,): one binary problem")
    return coef.astype(float), intercept.astype(float)


def grader_fit(settings: dict, X: np.ndarray, y: np.ndarray) -> SkPerceptron:
    """The grader's own Perceptron with the checked settings, fitted on (X, y)."""
    model = SkPerceptron(**settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def same_weights(coef: np.ndarray, intercept: np.ndarray, model: SkPerceptron) -> bool:
    expected = np.concatenate([model.intercept_, model.coef_.ravel()])
    got = np.concatenate([np.ravel(intercept), np.ravel(coef)]).astype(float)
    return got.shape == expected.shape and float(np.max(np.abs(got - expected))) <= 1e-9 * (1 + float(np.max(np.abs(expected))))


@pytest.mark.task(2)
@pytest.mark.points(4)
def test_ppn_classifies_the_blobs(student, blobs):
    """ppn's fitted weights classify the blobs with accuracy of at least 95 %, scored by the grader."""
    coef, intercept = fitted_parameters(student)
    X, y = blobs
    # scikit-learn predicts the larger class label where the decision value is > 0.
    # Labels 0/1 or -1/+1 keep the blobs' order, so class 1 of the blobs is that side.
    predicted = np.where(X @ coef.ravel() + intercept[0] > 0, 1, 0)
    accuracy = float(np.mean(predicted == y))
    assert accuracy >= 0.95, _("ppn's weights should classify the blobs (the raw features, labels 0 -> -1, 1 -> +1) with accuracy >= 0.95")


@pytest.mark.task(2)
@pytest.mark.points(16)
def test_ppn_is_scikit_learns_perceptron(student, blobs, seed):
    """ppn is scikit-learn's Perceptron with settings the task allows, fitted on the blobs: the grader's own Perceptron with those settings learns the same weights, on the blobs and on fresh data."""
    coef, intercept = fitted_parameters(student)
    settings = checked_settings(student.ppn)
    X, y = blobs
    labels = np.where(y == 0, -1, 1)
    assert same_weights(coef, intercept, grader_fit(settings, X, labels)), _(
        "ppn's weights are not what scikit-learn's perceptron with ppn's settings learns on the blobs "
        "(fit ppn itself with ppn.fit(X, y) on the raw features; do not set coef_ or intercept_ by hand)"
    )
    X_new, y_new = make_blobs(n_samples=80, centers=2, n_features=2, cluster_std=2.5, random_state=seed)
    ppn = student.ppn
    try:
        ppn.fit(X_new, y_new)  # in the worker, on the student's time budget
        coef, intercept, predicted = ppn.coef_, ppn.intercept_, ppn.predict(X_new)
    except StudentCodeError:
        coef = intercept = predicted = None
    finally:
        # ppn fitted on the blobs again, as the notebook left it: a second run of the
        # hidden tests on the same notebook (pytest --seed, the seed sweep) reads the same
        with contextlib.suppress(StudentCodeError):
            ppn.fit(X, labels)
    assert isinstance(coef, np.ndarray) and isinstance(intercept, np.ndarray), _("ppn should be scikit-learn's perceptron: ppn.fit(X, y) on new data should set coef_ and intercept_")
    reference = grader_fit(settings, X_new, y_new)
    assert same_weights(coef, intercept, reference), _("ppn should be scikit-learn's perceptron: fitted on new data, it does not learn what scikit-learn's perceptron with the same settings learns")
    assert isinstance(predicted, (list, np.ndarray)) and np.shape(predicted) == (len(X_new),) \
        and (np.asarray(predicted) == reference.predict(X_new)).all(), _("ppn should be scikit-learn's perceptron: its predictions on new data differ from those of scikit-learn's perceptron with the same settings")
