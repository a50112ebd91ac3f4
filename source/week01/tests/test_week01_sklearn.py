"""Task 2: scikit-learn's Perceptron fitted on the blobs as ``ppn``.

Only the fitted parameters are read from the submission; the accuracy is computed
here, on the blobs rebuilt in the grader, so a printed or stored score counts for
nothing and an unfitted or missing ``ppn`` earns nothing.

That ``ppn`` is scikit-learn's Perceptron is judged by behaviour, never by its class name
(a student's own class can be called ``Perceptron`` and carry hand-typed ``coef_``): the
last test fits ``ppn`` on fresh grader data and compares it with scikit-learn's own
Perceptron, built here with ``ppn``'s parameters. It refits ``ppn``, so it runs last
(pytest runs a file's tests in order).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Perceptron as SkPerceptron

from autograder.i18n import _
from autograder.testing import StudentCodeError


def fitted_parameters(student) -> tuple[np.ndarray, np.ndarray]:
    """``ppn.coef_`` and ``ppn.intercept_`` as float arrays, after checking they exist and fit the blobs."""
    ppn = student.ppn  # a missing ppn raises MissingName: the test fails saying so
    try:
        coef, intercept = ppn.coef_, ppn.intercept_
    except StudentCodeError:
        coef = intercept = None  # scikit-learn sets coef_ and intercept_ in fit only
    assert coef is not None, _("ppn is not fitted: call ppn.fit(X, y) on the blobs")
    assert isinstance(coef, np.ndarray) and coef.shape == (1, 2), _("ppn.coef_ should have shape (1, 2): fit ppn on the two blob features")
    assert isinstance(intercept, np.ndarray) and intercept.shape == (1,), _("ppn.intercept_ should have shape (1,): one binary problem")
    return coef.astype(float), intercept.astype(float)


@pytest.mark.task(2)
@pytest.mark.points(10)
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
@pytest.mark.points(10)
def test_ppn_is_scikit_learns_perceptron(student, seed):
    """ppn behaves as scikit-learn's Perceptron: fitted on fresh data, it learns what sklearn.linear_model.Perceptron with the same parameters learns."""
    fitted_parameters(student)
    ppn = student.ppn
    try:
        params = ppn.get_params()
    except StudentCodeError:
        params = None
    assert isinstance(params, dict), _("ppn should be a scikit-learn Perceptron (sklearn.linear_model.Perceptron): ppn.get_params() does not give its parameters")
    plain = all(isinstance(k, str) and isinstance(v, (type(None), bool, int, float, str)) for k, v in params.items())
    assert plain, _("ppn's parameters should be plain values (for example random_state=1, not a RandomState object)")
    try:
        reference = SkPerceptron(**params)
    except TypeError:
        reference = None
    assert reference is not None, _("ppn should be a scikit-learn Perceptron: its get_params() names parameters sklearn.linear_model.Perceptron does not have")
    X, y = make_blobs(n_samples=80, centers=2, n_features=2, cluster_std=2.5, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference.fit(X, y)
    try:
        ppn.fit(X, y)
        coef, intercept, predicted = ppn.coef_, ppn.intercept_, ppn.predict(X)
    except StudentCodeError:
        coef = intercept = predicted = None
    assert isinstance(coef, np.ndarray) and isinstance(intercept, np.ndarray), _("ppn should be a scikit-learn Perceptron: ppn.fit(X, y) on new data should set coef_ and intercept_")
    expected = np.concatenate([reference.intercept_, reference.coef_.ravel()])
    got = np.concatenate([np.ravel(intercept), np.ravel(coef)]).astype(float)
    same = got.shape == expected.shape and float(np.max(np.abs(got - expected))) <= 1e-9 * (1 + float(np.max(np.abs(expected))))
    assert same, _("ppn should be a scikit-learn Perceptron: fitted on new data, it does not learn what sklearn.linear_model.Perceptron with the same parameters learns")
    assert (np.asarray(predicted) == reference.predict(X)).all(), _("ppn should be a scikit-learn Perceptron: its predictions on new data differ from sklearn.linear_model.Perceptron's")
