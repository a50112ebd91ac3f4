"""The grading libraries are the course's (course.toml [grading.libraries]) and pinned
exactly: a regrade next month must run on the same versions the first grading ran on."""

from __future__ import annotations

import importlib.util
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from autograder.course import Course
from autograder.exceptions import CourseError

ROOT = Path(__file__).resolve().parent.parent


def test_the_course_pins_exactly_what_is_installed_and_the_package_admits_its_pins() -> None:
    grading = Course(ROOT).grading
    assert dict(grading.pins).keys() >= {"numpy", "scipy", "scikit-learn", "matplotlib", "threadpoolctl"}
    for name, pinned in grading.pins:
        assert version(name) == pinned, f"{name}: installed {version(name)}, pinned {pinned}: run make setup"
    dependencies = [Requirement(line) for line in tomllib.loads((ROOT / "pyproject.toml").read_text())
                    ["project"]["dependencies"]]
    for requirement in dependencies:
        if requirement.name in dict(grading.pins):
            assert requirement.specifier.contains(dict(grading.pins)[requirement.name]), requirement


def test_every_pinned_library_enters_the_grader_version_and_every_preloaded_module_exists() -> None:
    grading = Course(ROOT).grading
    assert {name for name, _ in grading.pins} | {"ipython", "pytest"} <= set(grading.libraries)
    assert grading.preload[0] == "matplotlib.pyplot"  # the zygote chooses Agg before it
    missing = [m for m in grading.preload if importlib.util.find_spec(m) is None]
    assert missing == []


def test_a_version_that_is_not_exact_is_refused_naming_the_library(tmp_path: Path) -> None:
    (tmp_path / "course.toml").write_text('[grading.libraries]\nnumpy = "2.4.6"\npandas = ">=2"\n')
    with pytest.raises(CourseError, match=r'\[grading\] libraries: pandas = ">=2" is not one exact version: write '
                                          r'one, such as pandas = "2.3.3"'):
        assert Course(tmp_path).grading
