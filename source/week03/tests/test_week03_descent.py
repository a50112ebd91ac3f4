"""Task 3: batch gradient descent from zeros, and prediction.

The first steps are compared with the iterates built from a gradient: ours, or the
student's own (queried step by step), so that a wrong gradient, already marked down in
task 2, is not counted twice here. The end result is compared with scikit-learn; that
comparison needs a right gradient as well as a right descent.

What the task teaches, the descent steps, carries most of the points: the comparison with
scikit-learn, the defaults and leaving the inputs alone count only once
``gradient_descent`` takes those steps (a ``gradient_descent`` that calls scikit-learn
reaches its optimum too, and has the right defaults). Each of those failures says which
check failed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from autograder.i18n import _


def our_gradient(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return X.T @ (expit(X @ w) - y) / len(y)


def descend(gradient, X: np.ndarray, y: np.ndarray, alpha: float, n_iter: int) -> np.ndarray | None:
    """The iterates of gradient descent with ``gradient`` (ours, or the student's queried step
    by step): None when the student's gradient does not return a vector of w's length."""
    w = np.zeros(X.shape[1])
    for _step in range(n_iter):
        step = gradient(w, X, y)
        if not isinstance(step, np.ndarray) or step.shape != w.shape:
            return None
        w = w - alpha * step.astype(float)
    return w


def takes_descent_steps(student, X: np.ndarray, y: np.ndarray, alpha: float = 0.05, n_iter: int = 2) -> bool:
    """Whether gradient_descent's first steps are those of gradient descent from zeros (with
    our gradient or with the student's own): what the checks that other code could also
    pass (a solver's optimum, the defaults, unchanged inputs) are conditional on."""
    w = student.gradient_descent(X, y, alpha=alpha, n_iter=n_iter)
    if not isinstance(w, np.ndarray) or w.shape != (X.shape[1],):
        return False
    w = w.astype(float)
    if close(w, descend(our_gradient, X, y, alpha, n_iter), 1e-9):
        return True
    theirs = descend(student.gradient, X, y, alpha, n_iter)
    return theirs is not None and close(w, theirs, 1e-9)


def require_descent(student, X: np.ndarray, y: np.ndarray) -> None:
    """Fail, naming why, unless gradient_descent takes the steps of gradient descent."""
    assert takes_descent_steps(student, X, y), _(
        "this check counts only once gradient_descent takes the steps of gradient descent from w = 0 "
        "(see the check of its first steps)"
    )


def student_weights(student, X: np.ndarray, y: np.ndarray, **params: float) -> np.ndarray:
    w = student.gradient_descent(X, y, **params)
    assert isinstance(w, np.ndarray), _("gradient_descent returned a {type_name}; the weights as a numpy array are expected").format(type_name=type(w).__name__)
    assert w.shape == (X.shape[1],), _("gradient_descent should return a 1-D array with one weight per column of X")
    return w.astype(float)


def label_vector(result: object, n: int) -> np.ndarray:
    """``predict``'s labels as an array, after checking it is a list or a 1-D array with one label per row."""
    assert isinstance(result, (list, np.ndarray)), _("predict returned a {type_name}; a list or a 1-D numpy array of labels is expected").format(type_name=type(result).__name__)
    labels = np.asarray(result)
    assert labels.ndim == 1, _("predict should return a list or a 1-D numpy array, not an array of {ndim} dimensions").format(ndim=labels.ndim)
    assert labels.shape == (n,), _("predict should return one label per row of X")
    return labels


def close(a: np.ndarray, b: np.ndarray | None, rtol: float) -> bool:
    return b is not None and float(np.max(np.abs(a - b))) <= rtol * (1 + float(np.max(np.abs(b))))


@pytest.mark.task(3)
@pytest.mark.points(9)
def test_first_steps(student, random_problem):
    """gradient_descent starts from w = 0 and moves alpha times the gradient downhill, using all samples at each step."""
    X, y, _weights = random_problem
    for alpha, n_iter in [(0.1, 1), (0.05, 2), (0.2, 5)]:
        result = student_weights(student, X, y, alpha=alpha, n_iter=n_iter)
        if close(result, descend(our_gradient, X, y, alpha, n_iter), 1e-9):
            continue
        theirs = descend(student.gradient, X, y, alpha, n_iter)
        assert theirs is not None and close(result, theirs, 1e-9), _(
            "after n_iter steps from w = 0, w should be w - alpha * gradient(w, X, y) repeated n_iter times"
        )


@pytest.mark.task(3)
@pytest.mark.points(1)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, random_problem):
    """gradient_descent, predict_proba and predict leave the caller's arrays as they were."""
    X, y, weights = random_problem
    unchanged_inputs("gradient_descent", student.gradient_descent, X=X, y=y, alpha=0.1, n_iter=5)
    unchanged_inputs("predict_proba", student.predict_proba, w=weights[2], X=X)
    unchanged_inputs("predict", student.predict, w=weights[2], X=X)
    require_descent(student, X, y)


@pytest.mark.task(3)
@pytest.mark.points(4)
def test_agrees_with_scikit_learn(student, iris_sepal):
    """On standardised data, gradient descent reaches the probabilities of scikit-learn's unregularised LogisticRegression."""
    X, y = iris_sepal
    # The cost is convex and, on these overlapping classes, has one finite minimum, which
    # lbfgs with a tight tolerance finds to ~1e-10 (C=np.inf is no regularisation:
    # scikit-learn 1.8 deprecated penalty=None for it). Batch gradient descent with
    # alpha=1 converges linearly on standardised features: after 300 steps the reference
    # is within 1e-9 of it in every probability. 1e-4 leaves room for any correct
    # formulation (clipping, summation order), while a wrong gradient or a step uphill
    # is off by more than 0.1.
    model = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X[:, 1:], y)
    expected = model.predict_proba(X[:, 1:])[:, 1]
    w = student_weights(student, X, y, alpha=1.0, n_iter=300)
    assert float(np.max(np.abs(expit(X @ w) - expected))) <= 1e-4, _(
        "after 300 steps with alpha=1 the probabilities should match scikit-learn's LogisticRegression without regularisation"
    )
    require_descent(student, X, y)


@pytest.mark.task(3)
@pytest.mark.points(2)
def test_default_settings(student, random_problem):
    """gradient_descent(X, y) uses the defaults alpha=0.1 and n_iter=1000."""
    # On a dozen samples (cheap even for a gradient written as a loop), the call without
    # settings is compared with the student's own call with the defaults spelled out: a
    # wrong step is the first-steps check's business, not this one's.
    X, y, _weights = random_problem
    X, y = X[:12], y[:12]
    w = student_weights(student, X, y)
    spelled_out = student_weights(student, X, y, alpha=0.1, n_iter=1000)
    assert close(w, spelled_out, 1e-12), _(
        "gradient_descent(X, y) should use the defaults alpha=0.1 and n_iter=1000: "
        "it returns something else than gradient_descent(X, y, alpha=0.1, n_iter=1000)"
    )
    require_descent(student, X, y)


@pytest.mark.task(3)
@pytest.mark.points(4)
def test_predict_proba_and_predict(student, random_problem):
    """predict_proba is sigmoid(X @ w); predict is 1 where it is >= threshold (ties included), else 0."""
    X, _y, weights = random_problem
    w = weights[2]
    p = expit(X @ w)
    proba = student.predict_proba(w, X)
    assert isinstance(proba, np.ndarray), _("predict_proba returned a {type_name}; a numpy array is expected").format(type_name=type(proba).__name__)
    assert proba.shape == (len(X),), _("predict_proba should return a 1-D array with one probability per row of X")
    assert float(np.max(np.abs(proba.astype(float) - p))) <= 1e-12, _("predict_proba(w, X) should be sigmoid(X @ w)")
    for threshold in (0.5, 0.8, 0.2):
        labels = label_vector(student.predict(w, X, threshold=threshold), len(X))
        assert set(np.unique(labels).tolist()) <= {0, 1}, _("predict should return labels 0 and 1")
        assert (labels.astype(int) == (p >= threshold)).all(), _("predict should return 1 where the probability is >= threshold, else 0")
    labels = label_vector(student.predict(np.zeros(X.shape[1]), X), len(X))
    assert (labels.astype(int) == 1).all(), _("a probability exactly equal to the threshold (0.5 at w = 0) should give label 1")
