"""Task 2: scikit-learn's Perceptron fitted on the blobs as ``ppn``.

Only the fitted parameters are read from the submission; the accuracy is computed
here, on the blobs rebuilt in the grader, so a printed or stored score counts for
nothing and an unfitted or missing ``ppn`` earns nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.testing import StudentCodeError


def fitted_parameters(student) -> tuple[np.ndarray, np.ndarray]:
    """``ppn.coef_`` and ``ppn.intercept_`` as float arrays, after checking they exist and fit the blobs."""
    ppn = student.ppn  # a missing ppn raises MissingName: the test fails saying so
    assert student.typename(ppn) == "Perceptron", "ppn should be a scikit-learn Perceptron (sklearn.linear_model.Perceptron)"
    try:
        coef, intercept = ppn.coef_, ppn.intercept_
    except StudentCodeError:
        coef = intercept = None  # scikit-learn sets coef_ and intercept_ in fit only
    assert coef is not None, "ppn is not fitted: call ppn.fit(X, y) on the blobs"
    assert isinstance(coef, np.ndarray) and coef.shape == (1, 2), "ppn.coef_ should have shape (1, 2): fit ppn on the two blob features"
    assert isinstance(intercept, np.ndarray) and intercept.shape == (1,), "ppn.intercept_ should have shape (1,): one binary problem"
    return coef.astype(float), intercept.astype(float)


@pytest.mark.task(2)
@pytest.mark.points(5)
def test_ppn_is_a_fitted_perceptron(student):
    """ppn exists and is a scikit-learn Perceptron fitted on the two blob features."""
    fitted_parameters(student)


@pytest.mark.task(2)
@pytest.mark.points(15)
def test_ppn_classifies_the_blobs(student, blobs):
    """ppn's fitted weights classify the blobs with accuracy of at least 95 %, scored by the grader."""
    coef, intercept = fitted_parameters(student)
    X, y = blobs
    # scikit-learn predicts the larger class label where the decision value is > 0.
    # Labels 0/1 or -1/+1 keep the blobs' order, so class 1 of the blobs is that side.
    predicted = np.where(X @ coef.ravel() + intercept[0] > 0, 1, 0)
    accuracy = float(np.mean(predicted == y))
    assert accuracy >= 0.95, "ppn's weights should classify the blobs (the raw features, labels 0 -> -1, 1 -> +1) with accuracy >= 0.95"
