"""``autograder audit`` (autograder/audit/cli.py) on throwaway courses graded through the
real sandboxed grading path (strength: mutants lose points on their task; blame: only on
their task, unless audit.toml says it builds on another)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

from autograder.cli import app
from autograder.course import Course
from tests.audit.drills import CHAIN_CELLS, CHAIN_TESTS, CHAIN_TOML, ENTRY, LONG, STALE, WEAK_TEST, drill_course
from tests.helpers import throwaway_course


@pytest.fixture
def drill(tmp_path: Path) -> Course:
    return drill_course(tmp_path)


def audit(course: Course, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", "week08", "--course", str(course.root), "--jobs", "1",
                                      "--html", str(course.root / "audit.html"), *args])
    return result.exit_code, result.output


@pytest.mark.sandbox
def test_a_weak_test_lets_a_mutant_survive_until_it_is_recorded_as_equivalent(drill: Course) -> None:
    code, output = audit(drill)
    assert code == 1, output
    assert "unexplained" in output and "return x + 2" in output and "3 mutants, 3 graded, 2 killed" in output
    assert 'mutant = "return x + 2"' in output  # the entry to paste, shown with the survivor
    page = (drill.root / "audit.html").read_text()
    assert "unexplained" in page and "return x + 2" in page and "mutant = &#34;return x + 2&#34;" in page
    survivor = nbformat.read(drill.root / "audit" / "mutant002.ipynb", as_version=4)  # to replay with pytest --seed
    assert "return x + 2" in survivor.cells[2].source

    (drill.root / "source" / "week08" / "audit.toml").write_text(ENTRY + STALE)
    code, output = audit(drill, "--budget", "60")
    assert code == 0, output
    assert "1 equivalent" in output and "passed" in output
    assert "stale audit.toml entry 2" in output and "x = x * 3" not in output.split("stale")[0]
    assert "unneeded audit.toml entry 3 (task 1, arithmetic: return x - 1): the tests now" in output


@pytest.mark.sandbox
def test_an_audit_stops_handing_out_mutants_at_its_budget(drill: Course) -> None:
    code, output = audit(drill, "--budget", "1")
    assert code == 0, output  # nothing graded, nothing survived: passed, but every mutant is counted as skipped
    assert "0 graded" in output and "3 skipped (budget)" in output


@pytest.mark.sandbox
def test_a_reference_that_fails_its_own_tests_stops_the_audit(drill: Course) -> None:
    tests = drill.root / "source" / "week08" / "tests"
    (tests / "test_week08.py").unlink()  # a new module name: this process already imported test_week08
    (tests / "test_week08_strict.py").write_text(WEAK_TEST.replace("add_one(0) > 0", "add_one(0) > 5"))
    code, output = audit(drill)
    assert code == 2 and "the reference solution loses points" in output, output


@pytest.fixture
def chain(tmp_path: Path) -> Course:
    return throwaway_course(tmp_path, "week09", CHAIN_CELLS, "test_week09_chain.py", CHAIN_TESTS)


@pytest.mark.sandbox
def test_a_mutant_losing_points_on_another_tasks_tests_fails_until_declared(chain: Course) -> None:
    result = CliRunner().invoke(app, ["audit", "week09", "--course", str(chain.root), "--jobs", "1",
                                      "--html", str(chain.root / "audit.html")])
    output = result.output
    assert result.exit_code == 1, output
    assert "6 mutants, 6 graded" in output and "2 cross-task loss(es) (0 declared)" in output, output
    assert "failed: 1 unexplained survivor(s), 2 cross-task loss(es)" in output
    assert "cross-task losses" in output and "mutant003" in output.split("cross-task losses")[1]
    lines = output.splitlines()
    # the entries to paste, each line whole (a table cell would wrap them at 80 columns)
    assert f'line = "{LONG}"' in lines and f'mutant = "{LONG.replace("2 * x", "3 * x")}"' in lines, output
    assert ["[[builds_on]]", "task = 2", "uses = 1", 'reason = ""'] == lines[lines.index("[[builds_on]]"):][:4]
    page = (chain.root / "audit.html").read_text()
    rows = [row for row in page.split("<tr>") if "test_double_of_add_one" in row]
    assert len(rows) == 2 and all("<strong>undeclared</strong>" in row and "<td>2</td>" in row for row in rows), rows

    (chain.root / "source" / "week09" / "audit.toml").write_text(CHAIN_TOML)
    result = CliRunner().invoke(app, ["audit", "week09", "--course", str(chain.root), "--jobs", "1",
                                      "--html", str(chain.root / "audit.html")])
    assert result.exit_code == 0, result.output
    assert "2 cross-task loss(es) (2 declared)" in result.output and "passed" in result.output
    page = (chain.root / "audit.html").read_text()
    assert page.count("declared: task 2 doubles what task 1 adds (the instructions say so)") == 2
    assert "unneeded audit.toml [[builds_on]] entry 2 (task 1 uses task 2)" in result.output

