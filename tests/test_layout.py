"""Where shared test code lives: the framework's fixtures in ``tests/conftest.py``, helper
functions two test files share in ``tests/helpers.py`` (README, "Development").
``tests/conftest.py`` is pytest's to load: under ``--import-mode=importlib``
(pyproject.toml) ``from conftest import`` fails, so a helper kept there had no home a test
file could rely on."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_no_test_file_imports_the_shared_conftest() -> None:
    offenders = [f"{path.relative_to(TESTS)}: {name}" for path in sorted(TESTS.rglob("*.py"))
                 if "fixtures" not in path.relative_to(TESTS).parts
                 for name in imported_modules(path) if name in ("conftest", "tests.conftest")]
    assert offenders == [], "move shared helpers to tests/helpers.py: " + ", ".join(offenders)


def test_the_shared_helpers_import_as_the_readme_says() -> None:
    from tests.helpers import notebook_bytes, write_week_from_the_docs

    assert notebook_bytes("x = 1").startswith(b"{") and callable(write_week_from_the_docs)
