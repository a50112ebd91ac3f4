"""The grading libraries are named in autograder/libraries.py and pinned alike everywhere:
a regrade next month must run on the same versions the first grading ran on."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from autograder.libraries import GRADING_LIBRARIES, PINNED, PRELOADED_MODULES

ROOT = Path(__file__).resolve().parent.parent


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;#]+).*", line)
        if match:
            pins[match[1].lower()] = match[2]
    return pins


def test_pyproject_and_the_grading_requirements_pin_the_same_versions() -> None:
    requirements = _pins((ROOT / "requirements" / "grading.txt").read_text().splitlines())
    project = _pins(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for name in PINNED:
        assert name in requirements and name in project, f"{name} must be pinned exactly in both files"
        assert requirements[name] == project[name], name
        assert version(name) == requirements[name], f"{name}: installed {version(name)}, pinned {requirements[name]}"


def test_every_pinned_library_enters_the_grader_version_and_every_preloaded_module_exists() -> None:
    assert set(PINNED) <= set(GRADING_LIBRARIES)
    missing = [m for m in PRELOADED_MODULES if importlib.util.find_spec(m) is None]
    assert missing == []
