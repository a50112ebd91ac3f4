"""Task 4: one-vs-all with K binary logistic regressions.

Each row of W must be the binary fit of its class against the rest, rows in np.unique
order. The binary fit is gradient descent: ours, or the student's own
``gradient_descent`` (so a mistake in task 3 is not counted again here).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from autograder.i18n import _

# 50 steps (200 until 2026-11-28): a student whose descent loops over the examples pays a
# quarter of what 200 cost them (~0.25 s against ~1 s per submission). On every mutant the
# audit makes and every fixture of the week, seeds 1-3, this test and the inputs test fail on
# exactly the same notebooks as with 200 steps: fewer steps leave each row farther from the
# optimum, where fits that differ stay apart.
ALPHA, N_ITER = 0.5, 50


def descend(X: np.ndarray, y: np.ndarray, alpha: float, n_iter: int) -> np.ndarray:
    w = np.zeros(X.shape[1])
    for _step in range(n_iter):
        w = w - alpha * X.T @ (expit(X @ w) - y) / len(y)
    return w


def close(a: np.ndarray, b: np.ndarray, rtol: float) -> bool:
    return a.shape == b.shape and float(np.max(np.abs(a - b))) <= rtol * (1 + float(np.max(np.abs(b))))


@pytest.mark.task(4)
@pytest.mark.points(15)
def test_one_vs_all_rows(student, iris_relabelled):
    """one_vs_all returns one row per class (three or two of them), in np.unique(y) order, each the fit of that class (1) against the rest (0)."""
    X3, y3, classes3 = iris_relabelled
    two = np.isin(y3, classes3[1:])  # the same rows with two classes only: K is the data's, not 3
    for X, y, classes in [(X3, y3, classes3), (X3[two], y3[two], classes3[1:])]:
        check_rows(student, X, y, classes)


def check_rows(student, X: np.ndarray, y: np.ndarray, classes: np.ndarray) -> None:
    """one_vs_all(X, y) against the binary fit of each class, in np.unique order."""
    W = student.one_vs_all(X, y, alpha=ALPHA, n_iter=N_ITER)
    assert isinstance(W, np.ndarray), _("one_vs_all should return a numpy array")
    assert W.shape == (len(classes), X.shape[1]), _("one_vs_all should return an array of shape (n_classes, n_features + 1)")
    for k, label in enumerate(classes):
        binary = (y == label).astype(float)
        if close(W[k], descend(X, binary, ALPHA, N_ITER), 1e-6):
            continue
        theirs = student.gradient_descent(X, binary, alpha=ALPHA, n_iter=N_ITER)
        assert isinstance(theirs, np.ndarray) and theirs.shape == W[k].shape and close(W[k], theirs.astype(float), 1e-6), _(
            "row k of W should be gradient descent (same alpha and n_iter) on labels 1 for the k-th class of np.unique(y), 0 for the others"
        )


@pytest.mark.task(4)
@pytest.mark.points(1)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, iris_relabelled, rng):
    """one_vs_all and predict_one_vs_all leave the caller's arrays as they were (no in-place relabelling of y)."""
    X, y, classes = iris_relabelled
    W = unchanged_inputs("one_vs_all", student.one_vs_all, X=X, y=y, alpha=ALPHA, n_iter=5)
    scores = rng.normal(size=(3, X.shape[1]))
    predicted = unchanged_inputs("predict_one_vs_all", student.predict_one_vs_all, W=scores, X=X)
    # a property that doing nothing also has: it counts only when the functions did their job
    rows = [descend(X, (y == label).astype(float), ALPHA, 5) for label in classes]
    theirs = [student.gradient_descent(X, (y == label).astype(float), alpha=ALPHA, n_iter=5) for label in classes]
    rows_right = isinstance(W, np.ndarray) and W.shape == (len(classes), X.shape[1]) and all(
        close(W[k], rows[k], 1e-6) or (isinstance(t, np.ndarray) and t.shape == W[k].shape and close(W[k], t.astype(float), 1e-6))
        for k, t in enumerate(theirs))
    indices_right = isinstance(predicted, (list, np.ndarray)) and np.shape(predicted) == (len(X),) \
        and (np.asarray(predicted) == np.argmax(X @ scores.T, axis=1)).all()
    assert rows_right and indices_right, _(
        "leaving the inputs unchanged counts only once one_vs_all and predict_one_vs_all return the right rows and indices"
    )


@pytest.mark.task(4)
@pytest.mark.points(4)
def test_predict_one_vs_all(student, rng):
    """predict_one_vs_all returns, for each row of X, the index of the row of W with the largest score."""
    for n_classes, n_columns in [(3, 5), (4, 3), (2, 4)]:
        W = rng.normal(size=(n_classes, n_columns))
        X = np.column_stack([np.ones(60), rng.normal(size=(60, n_columns - 1))])
        result = student.predict_one_vs_all(W, X)
        assert isinstance(result, (list, np.ndarray)), _(
            "predict_one_vs_all should return a list or a 1-D numpy array, not a {type_name}"
        ).format(type_name=type(result).__name__)
        result = np.asarray(result)
        assert result.ndim == 1, _("predict_one_vs_all should return a 1-D array (one index per row), not {ndim}-D").format(ndim=result.ndim)
        assert result.shape == (len(X),), _("predict_one_vs_all should return one index per row of X")
        assert (result == np.argmax(X @ W.T, axis=1)).all(), _(
            "predict_one_vs_all should return the index (0 to K-1) of the most confident classifier for each row"
        )
