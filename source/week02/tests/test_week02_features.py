"""Task 2: the intensity and (top-bottom) symmetry features of 8x8 digit images."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from autograder.i18n import _


def features(student, images: np.ndarray) -> np.ndarray:
    """The student's features as a float array, after checking the shape."""
    result = student.intensity_symmetry(images)
    assert isinstance(result, np.ndarray), _("intensity_symmetry should return a numpy array")
    assert result.shape == (len(images), 2), _("intensity_symmetry should return an array of shape (n_images, 2)")
    return result.astype(float)


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


@pytest.fixture(scope="module")
def digit_images() -> np.ndarray:
    """A few hundred of scikit-learn's digits, all ten classes."""
    return load_digits().images[::5]


@pytest.mark.task(2)
@pytest.mark.points(8)
def test_shape_and_intensity(student, digit_images, rng):
    """intensity_symmetry returns one row per image, with the intensity (mean pixel value) in column 0."""
    random_images = rng.integers(0, 17, size=(int(rng.integers(5, 40)), 8, 8)).astype(float)
    for images in (random_images, digit_images, digit_images[:1]):
        result = features(student, images)
        assert max_abs_diff(result[:, 0], images.mean(axis=(1, 2))) <= 1e-9, _(
            "column 0 should be the intensity: the mean of each image's 64 pixel values"
        )


@pytest.mark.task(2)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, rng):
    """intensity_symmetry leaves the caller's images as they were (no in-place scaling or flipping)."""
    images = rng.integers(0, 17, size=(12, 8, 8)).astype(float)
    result = unchanged_inputs("intensity_symmetry", student.intensity_symmetry, images=images)
    # a property that doing nothing also has: it counts only when the function did its job
    expected = np.column_stack([images.mean(axis=(1, 2)), -np.abs(images - images[:, ::-1, :]).mean(axis=(1, 2))])
    assert isinstance(result, np.ndarray) and result.shape == expected.shape and max_abs_diff(result, expected) <= 1e-9, _(
        "leaving the images unchanged counts only once intensity_symmetry returns their intensity and symmetry"
    )


@pytest.mark.task(2)
@pytest.mark.points(10)
def test_top_bottom_symmetry(student, digit_images, rng):
    """Column 1 is minus the mean |image - image upside down|: 0 for a top-bottom mirror image, below 0 otherwise."""
    top = rng.integers(0, 17, size=(4, 8)).astype(float)
    mirrored_top_bottom = np.vstack([top, top[::-1]])
    left = rng.integers(0, 17, size=(8, 4)).astype(float)
    mirrored_left_right = np.hstack([left, left[:, ::-1]])
    result = features(student, np.stack([mirrored_top_bottom, mirrored_left_right]))
    assert abs(result[0, 1]) <= 1e-12, _("an image equal to itself turned upside down should have symmetry 0")
    assert result[1, 1] < 0, _(
        "an image that is symmetric only left-right should have a negative symmetry: "
        "compare each image with itself flipped top-bottom (its rows reversed)"
    )
    for images in (digit_images, rng.integers(0, 17, size=(20, 8, 8)).astype(float)):
        expected = -np.abs(images - images[:, ::-1, :]).mean(axis=(1, 2))
        result = features(student, images)
        assert max_abs_diff(result[:, 1], expected) <= 1e-9, _(
            "column 1 should be minus the mean absolute difference between each image and the same image upside down"
        )
