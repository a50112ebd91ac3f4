"""Every correct fixture passes every public check of its week's reference notebook.

A public check is a cell students run themselves: a code cell of the reference notebook,
outside the solution regions, that asserts. One that fails a correct notebook shows an
``AssertionError`` to a student who did nothing wrong (week 2 once compared an in-sample
error with ``==``, and ``1 - accuracy`` is correct but differs in the last bit), so public
checks must use the hidden tests' tolerances. The checks run are the *current* reference
notebook's, in the namespace each correct fixture leaves, in this process (fixtures are
trusted files), so a check edited later is held to every correct fixture already kept. A
fixture carries a check when one of its cells shares an ``assert`` line with the check cell
(an edit rarely rewrites every line of a check; cell ids are not in every notebook); a
notebook written from scratch carries none.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from autograder.authoring.markers import BEGIN
from autograder.execution import LocalRun
from autograder.notebook import code_cells

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def assert_lines(source: str) -> set[str]:
    return {line.strip() for line in source.splitlines() if line.strip().startswith("assert ")}


def public_checks(notebook: Path) -> list[str]:
    """The sources of ``notebook``'s public-check cells, in order."""
    checks = []
    for source in code_cells(notebook.read_bytes()):
        if BEGIN in source:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython magics: never a check
            continue
        if any(isinstance(node, ast.Assert) for node in ast.walk(tree)):
            checks.append(source)
    return checks


def correct_fixtures() -> list[tuple[str, str]]:
    """(week, fixture name) of every fixture that must get full marks."""
    cases = []
    for expectations in sorted(FIXTURES.glob("week*/expectations.json")):
        for name, expected in json.loads(expectations.read_text()).items():
            if expected.get("full"):
                cases.append((expectations.parent.name, name))
    return cases


def test_public_checks_are_found_in_every_week() -> None:
    """The detection the test below relies on finds the checks each week's notebook has."""
    weeks = sorted(p for p in (ROOT / "source").glob("week*") if (p / f"{p.name}.ipynb").is_file())
    assert weeks, "no week found under source/"
    for week in weeks:
        assert public_checks(week / f"{week.name}.ipynb"), f"{week.name}: no public-check cell found"


@pytest.mark.slow
@pytest.mark.parametrize(("week", "name"), correct_fixtures())
def test_correct_fixture_passes_every_public_check(week: str, name: str) -> None:
    """Run the fixture, then each public check of the week's reference notebook in its namespace."""
    folder = ROOT / "source" / week  # a notebook runs beside its week's data/
    fixture = FIXTURES / week / name
    cells = code_cells(fixture.read_bytes())
    run = LocalRun(cells, folder=folder)
    run.execute()
    carried = set().union(*(assert_lines(source) for source in cells))
    failed = []
    for number, source in enumerate(public_checks(folder / f"{week}.ipynb"), start=1):
        if not assert_lines(source) & carried:
            continue
        error = run.core.run_cell(source).get("error")
        if error is not None:
            failed.append(f"public check {number}: {error['ename']}: {error['evalue']}")
    assert not failed, f"{week}/{name} fails public checks of the reference notebook:\n" + "\n".join(failed)
