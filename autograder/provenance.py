"""What produced a score: the grader's version, its code, and the grading libraries.

A result is reused from the gradebook only when the submission, the hidden tests and
this version string are all unchanged, so the string covers everything that can move a
score: a change to the grader's code or to a library of the grading environment (the
framework's own and those the course pins, ``libraries.GradingEnvironment``) means a
regrade.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from autograder import __version__


@cache
def grader_version(libraries: tuple[str, ...]) -> str:
    """``0.1.0+<12 hex digits>``: the release, plus a hash of the package's source and the
    installed versions of ``libraries`` (a course's ``GradingEnvironment.libraries``)."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    for name in sorted(set(libraries)):
        try:
            digest.update(f"{name}=={version(name)}".encode())
        except PackageNotFoundError:
            digest.update(f"{name} missing".encode())
    return f"{__version__}+{digest.hexdigest()[:12]}"
