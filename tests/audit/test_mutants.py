"""The mutants of a week (autograder/audit/mutants.py): only its solution regions are
mutated, and the grading order is seeded."""

from __future__ import annotations

from pathlib import Path

from autograder.audit.mutants import generate_mutants, grading_order
from tests.audit.drills import drill_course


def test_only_the_solution_region_is_mutated_and_the_order_is_seeded(tmp_path: Path) -> None:
    drill = drill_course(tmp_path)
    generated = generate_mutants(drill.week("week08"))
    assert sorted(m.mutated for m in generated.mutants) == ["return x + 0", "return x + 2", "return x - 1"]
    assert all(m.task == 1 for m in generated.mutants)
    order = grading_order(generated.mutants, 11)
    assert order == grading_order(generated.mutants, 11)

