"""Task 3: the test accuracies of four classifiers on the digits 1 vs 5.

The split and the features are the student's own (their ``intensity_symmetry`` on the
notebook's images, split as the notebook fixes), so a mistake in task 2 is not counted
again here. What is required of each entry:
- ``pocket``: the accuracy of the student's own ``Pocket`` with the stated settings,
  re-run in the worker: the same code on the same data gives the same predictions, so the
  number of correct test samples must be equal (a mistake in task 1 is not counted again);
- ``perceptron``: the accuracy of the week-1 perceptron the notebook gives, re-run here:
  again the same computation, so the same count;
- ``sklearn_perceptron`` and ``logistic_regression``: scikit-learn fitted here on the same
  data with the stated settings. The features are the student's own, computed by their
  function in the worker and sent here bit for bit, and the grading environment pins
  scikit-learn, so the fits are the same and the count must be equal: no slack. (A test
  sample of slack let a wrong setting through: a StandardScaler pipeline in front of
  LogisticRegression lands one test sample away.)
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.linear_model import Perceptron as SkPerceptron
from sklearn.model_selection import train_test_split

from autograder.i18n import _

KEYS = ("pocket", "perceptron", "sklearn_perceptron", "logistic_regression")


def week1_perceptron(X: np.ndarray, y: np.ndarray, eta: float, n_iter: int) -> np.ndarray:
    """The weights of the week-1 perceptron the notebook gives: from zeros, eta * y * x on each mistake.

    (Had the student rewritten it with the update eta * (y - y_hat) * x, the weights would
    be twice these at every step, with the same predictions.)
    """
    w = np.zeros(1 + X.shape[1])
    for _epoch in range(n_iter):
        for xi, target in zip(X, y):
            if (1 if xi @ w[1:] + w[0] >= 0.0 else -1) != target:
                w[1:] += eta * target * xi
                w[0] += eta * target
    return w


def student_split(student, digits_15) -> list[np.ndarray]:
    """X_train, X_test, y_train, y_test as the notebook builds them, from the student's features."""
    images, y = digits_15
    features = student.intensity_symmetry(images)
    assert isinstance(features, np.ndarray) and features.shape == (len(y), 2), _(
        "intensity_symmetry (task 2) should return an (n, 2) array: task 3 uses it"
    )
    assert np.isfinite(features.astype(float)).all(), _("intensity_symmetry (task 2) should return finite numbers: task 3 uses it")
    return train_test_split(features.astype(float), y, test_size=0.3, random_state=0, stratify=y)


def reported(student) -> dict:
    accuracies = student.accuracies
    assert isinstance(accuracies, dict), _("accuracies should be a dict")
    for key in KEYS:
        assert key in accuracies, _("accuracies should have the key {key}").format(key=repr(key))
        value = accuracies[key]
        assert isinstance(value, (int, float)) and 0.0 <= value <= 1.0, _("accuracies[{key}] should be a fraction between 0 and 1").format(key=repr(key))
    return accuracies


def same_count(reported_accuracy: float, correct: np.ndarray, slack: int) -> bool:
    """Whether the reported accuracy is ``correct.mean()`` to within ``slack`` test samples."""
    n = len(correct)
    return abs(reported_accuracy * n - float(np.sum(correct))) <= slack + 1e-6


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_pocket_and_perceptron_accuracies(student, digits_15):
    """accuracies["pocket"] and accuracies["perceptron"] are the test accuracies of the two classifiers with the stated settings."""
    X_train, X_test, y_train, y_test = student_split(student, digits_15)
    pocket = student.Pocket(eta=1.0, n_iter=50, random_state=1).fit(X_train, y_train)
    pocket_correct = np.asarray(pocket.predict(X_test)) == y_test
    accuracies = reported(student)
    assert same_count(accuracies["pocket"], pocket_correct, slack=0), _(
        'accuracies["pocket"] should be the test-set accuracy of Pocket(eta=1.0, n_iter=50, random_state=1) trained on the training set'
    )
    w = week1_perceptron(X_train, y_train, eta=0.1, n_iter=50)
    perceptron_correct = np.where(X_test @ w[1:] + w[0] >= 0.0, 1, -1) == y_test
    assert same_count(accuracies["perceptron"], perceptron_correct, slack=0), _(
        'accuracies["perceptron"] should be the test-set accuracy of the given Perceptron(eta=0.1, n_iter=50) trained on the training set'
    )


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_scikit_learn_accuracies(student, digits_15):
    """accuracies["sklearn_perceptron"] and accuracies["logistic_regression"] agree with scikit-learn's models fitted by the grader."""
    X_train, X_test, y_train, y_test = student_split(student, digits_15)
    accuracies = reported(student)
    perceptron = SkPerceptron(random_state=0).fit(X_train, y_train)
    assert same_count(accuracies["sklearn_perceptron"], perceptron.predict(X_test) == y_test, slack=0), _(
        'accuracies["sklearn_perceptron"] should be the test-set accuracy of linear_model.Perceptron(random_state=0) trained on the training set, '
        'with these exact settings and the features unscaled'
    )
    logistic = LogisticRegression().fit(X_train, y_train)
    assert same_count(accuracies["logistic_regression"], logistic.predict(X_test) == y_test, slack=0), _(
        'accuracies["logistic_regression"] should be the test-set accuracy of linear_model.LogisticRegression() trained on the training set, '
        'with default settings and the features unscaled (no StandardScaler or pipeline)'
    )
