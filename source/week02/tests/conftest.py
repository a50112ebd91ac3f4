"""Data for the week-2 hidden tests, built in the grader process.

Each test sees the fixed sets below (chosen so every tell-tale mistake shows) and, next to
them, sets drawn fresh per submission from the ``seed`` fixture, so a notebook that
recognises known inputs gains nothing. Fresh data is function-scoped: the grading loop
keeps session fixtures from one submission to the next.

Only plain numpy arrays built here are sent to the submission; everything compared
against (reference pocket runs, scikit-learn fits) stays on this side.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

Dataset = tuple[np.ndarray, np.ndarray]


def noisy(seed: int, n: int = 40) -> Dataset:
    """Two overlapping Gaussian clouds, half +1 and half -1: no line separates them.

    The seeds used below were chosen so that each tell-tale mistake changes the result on
    at least one of the two sets: keeping the last weights, pocketing on a tie (<=), measuring E_in
    before the epoch's pass, starting from zeros, and ignoring eta.
    """
    rng = np.random.RandomState(seed)
    y = np.where(np.arange(n) % 2 == 0, 1, -1)
    rng.shuffle(y)
    X = rng.normal(size=(n, 2)) * 1.5 + np.outer(y, [1.0, 0.5]) + [2.0, -1.0]
    return X, y


def separated_by_start(random_state: int, n: int = 30) -> Dataset:
    """Points the seeded starting weights already classify correctly, with a margin.

    A pocket that starts from ``RandomState(random_state).normal(0, 0.01, 3)`` makes no
    update in its first epoch, so it must stop there and return exactly those weights.
    """
    w0 = np.random.RandomState(random_state).normal(0.0, 0.01, 3)
    X = np.random.RandomState(100 + random_state).uniform(-1.0, 1.0, size=(4 * n, 2))
    net = X @ w0[1:] + w0[0]
    keep = np.abs(net) >= 0.1 * np.linalg.norm(w0)
    X = X[keep][:n]
    return X, np.where(net[keep][:n] >= 0.0, 1, -1)


def separable(seed: int, n: int = 50) -> Dataset:
    """Linearly separable points with a clear margin, far from the seeded start."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3.0, 3.0, size=(4 * n, 2))
    score = X @ np.array([0.8, -0.6]) + 0.5
    keep = np.abs(score) >= 0.3
    X, score = X[keep][:n], score[keep][:n]
    return X, np.where(score > 0, 1, -1)


def never_separable(data: Dataset) -> Dataset:
    """``data`` with its last point replaced by a copy of its first with the other label.

    Two overlapping clouds of 30 to 50 points are sometimes separable by chance (about one
    draw in a few thousand), and then a correct pocket stops early where the tests expect
    every epoch to run. A point and its contradicting copy can never both be classified
    right, so every epoch makes an update, on every draw."""
    X, y = data[0].copy(), data[1].copy()
    X[-1], y[-1] = X[0], -y[0]
    return X, y


@pytest.fixture
def noisy_sets(seed: int) -> list[Dataset]:
    """Two fixed overlapping sets, one fresh one (made never separable), and one whose
    starting weights (random_state=1) beat every epoch.

    The last set is what the instructions' "pocket on the first epoch" is about: the
    starting weights misclassify only the planted contradiction, every pass makes the
    fit worse, and the pocket must still hold the first epoch's weights, not the start."""
    return [noisy(seed=5), noisy(seed=2), never_separable(noisy(seed=seed, n=30 + seed % 21)),
            never_separable(separated_by_start(1))]


@pytest.fixture
def start_sets(seed: int) -> dict[int, Dataset]:
    """random_state -> a data set its starting weights already separate (1 and 7, and a fresh one)."""
    fresh = 10 + seed % 10_000
    return {random_state: separated_by_start(random_state) for random_state in (1, 7, fresh)}


@pytest.fixture
def separable_sets(seed: int) -> list[Dataset]:
    """The fixed separable set and a fresh one."""
    return [separable(seed=3), separable(seed=seed)]


@pytest.fixture(scope="session")
def digits_15() -> Dataset:
    """The notebook's data: images of the digits 1 (+1) and 5 (-1), in load_digits order."""
    digits = load_digits()
    is_1_or_5 = (digits.target == 1) | (digits.target == 5)
    return digits.images[is_1_or_5], np.where(digits.target[is_1_or_5] == 1, 1, -1)
