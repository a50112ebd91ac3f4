"""Data for the week-4 hidden tests, built in the grader process from each test's ``seed``.

The data is drawn fresh per submission (the ``seed`` fixture), so it cannot be learned
from one submission and recognised in the next; the fixtures are function-scoped, since
the grading loop keeps module and session fixtures from one submission to the next.

Only plain numpy arrays built here are sent to the submission; everything compared
against (brute-force answers, scikit-learn's neighbours) stays on this side.

Two kinds of data with duplicate points:
- float data: random normal points plus exact copies of some rows. Distinct points are
  never at exactly the same distance from a query, so every distance tie is between
  copies of one point, which any way of computing the distance gives bit-identical
  values (the differences to the query are identical).
- grid data: small integers. Squared distances are exact integers, so distances tie
  exactly between distinct points too (e.g. (1, 0) and (0, 1) from the origin), whatever
  formula computes them. These exercise the rule "equal distance: smaller index wins".
"""

from __future__ import annotations

import numpy as np
import pytest

# The notes' example: x1 takes the values 1..10 (root split at the median 5.5); the
# left half has x2 in {1, 3, 4, 7, 9} (median 4), the right half {2, 6, 8, 9, 10}
# (median 8); (5, 4), index 1, is the nearest point to (6, 4), at distance 1.
WORKED_EXAMPLE = np.array(
    [[2, 3], [5, 4], [9, 6], [4, 7], [8, 8], [7, 2], [1, 1], [3, 9], [6, 9], [10, 10]], dtype=float
)


def with_copies(rng: np.random.Generator, X: np.ndarray, n_copies: int) -> np.ndarray:
    """``X`` plus ``n_copies`` exact copies of random rows, shuffled so copies are scattered."""
    copies = X[rng.integers(0, len(X), size=n_copies)]
    return rng.permutation(np.vstack([X, copies]))


def float_points(seed: int | list[int], n: int, p: int, n_copies: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return with_copies(rng, rng.normal(size=(n, p)), n_copies)


def grid_points(seed: int | list[int], n: int, p: int, high: int) -> np.ndarray:
    """``n`` points with integer coordinates in [0, high): many duplicates and ties."""
    return np.random.default_rng(seed).integers(0, high, size=(n, p)).astype(float)


def queries_for(X: np.ndarray, seed: int | list[int], n_random: int, n_on_points: int) -> np.ndarray:
    """Random queries spread like ``X``, plus queries sitting exactly on data points."""
    rng = np.random.default_rng(seed)
    spread = rng.uniform(X.min(axis=0) - 0.5, X.max(axis=0) + 0.5, size=(n_random, X.shape[1]))
    return np.vstack([spread, X[rng.choice(len(X), size=n_on_points, replace=False)]])


@pytest.fixture(scope="session")
def worked_example() -> np.ndarray:
    return WORKED_EXAMPLE.copy()


@pytest.fixture
def float_sets(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Float data with duplicates in 2 and 3 dimensions, each with its queries."""
    sets = [float_points(seed=[seed, 41], n=110, p=2, n_copies=40), float_points(seed=[seed, 42], n=100, p=3, n_copies=30)]
    return [(X, queries_for(X, seed=[seed, 60 + i], n_random=20, n_on_points=8)) for i, X in enumerate(sets)]


# A grid draw on which a search that prunes by comparing the squared distance to a plane
# with the plain best distance misses a tied point: kept beside the fresh draws, so that
# mistake loses the tie test on every submission seed, not on two draws in three.
FIXED_GRID_SEED = 1244425836


@pytest.fixture
def grid_sets(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Integer data with many duplicates and exact distance ties in 2 and 3 dimensions, with
    queries on the grid and halfway between grid points (more exact ties)."""
    return grid_cases(seed)


@pytest.fixture(scope="session")
def fixed_grid_sets() -> list[tuple[np.ndarray, np.ndarray]]:
    """The grid sets of ``FIXED_GRID_SEED``, the same for every submission."""
    return grid_cases(FIXED_GRID_SEED)


def grid_cases(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The 2-D and 3-D grid sets drawn from ``seed``, each with its queries."""
    sets = [grid_points(seed=[seed, 43], n=60, p=2, high=5), grid_points(seed=[seed, 44], n=60, p=3, high=4)]
    cases = []
    for i, X in enumerate(sets):
        rng = np.random.default_rng([seed, 70 + i])
        queries = rng.integers(-1, 2 * int(X.max()) + 3, size=(30, X.shape[1])) / 2.0
        cases.append((X, queries))
    return cases
