"""audit.toml (autograder/audit/audit_toml.py): a malformed file says where and what to
write; a [[builds_on]] entry is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.audit.audit_toml import read_audit_toml
from autograder.exceptions import CourseError
from tests.audit.drills import BUILDS_ON, ENTRY


@pytest.mark.parametrize(("text", "says"), [
    ("[[equivalent]]\ntask = 1\n", "[[equivalent]] entry 1: operator: missing: write the operator's name, copied "
                                   "from the audit's report; [[equivalent]] entry 1: line: missing"),
    (ENTRY.replace('reason = "a drill: the test only asks for a positive number"', 'reason = " "'),
     '[[equivalent]] entry 1: reason = " " is empty: say in one line why no test can tell this mutant apart'),
    (ENTRY.replace('"constant"', '"typo"'), 'operator = "typo" is not one of arithmetic, comparison, constant'),
    ("[equivalent]\ntask = 1\n", "write each entry as [[equivalent]]"),
    ("task = [", "not valid TOML"),
    ("[builds_on]\ntask = 2\n", "write each entry as [[builds_on]] (an array of tables), not [builds_on]"),
    ("[[builds_on]]\ntask = 2\nreason = 'x'\n", "[[builds_on]] entry 1: uses: missing: write the number of the task "
                                                  "whose code those tests use"),
    (BUILDS_ON.replace("uses = 1", "uses = 1\nline = 'x'"), "[[builds_on]] entry 1: line: unknown key; the keys here are reason, task, uses"),
    (BUILDS_ON.replace("uses = 1", 'uses = "1"'), '[[builds_on]] entry 1: uses = "1" is not allowed here: write the number of the task'),
    (BUILDS_ON.replace("uses = 1", "uses = 3"), "[[builds_on]] entry 1: uses = 3 is not an autograded task of the "
                                                "week (its autograded tasks: 1, 2): write one of those"),
    (BUILDS_ON.replace("uses = 1", "uses = 2"), "task and uses are both 2: a task's tests always use its own code"),
    (BUILDS_ON.replace('"task 2 doubles what task 1 adds (the instructions say so)"', '""'),
     '[[builds_on]] entry 1: reason = "" is empty: say in one line why task 2\'s instructions build on task 1'),
    (BUILDS_ON + "\n" + BUILDS_ON, "[[builds_on]] entry 2: repeats entry 1 (task 2 uses task 1): delete one"),
    ("[[build_on]]\ntask = 2\n", "build_on: unknown key; the keys here are builds_on, equivalent: remove it or fix its name"),
])
def test_a_malformed_audit_toml_says_where_and_what_to_write(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(text)
    with pytest.raises(CourseError) as caught:
        read_audit_toml(path, [1, 2])
    assert str(caught.value).startswith(str(path)) and says in str(caught.value), str(caught.value)


def test_a_builds_on_entry_is_read(tmp_path: Path) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(BUILDS_ON + ENTRY)
    read = read_audit_toml(path, [1, 2])
    assert read.declared(2, 1) is not None and read.declared(1, 2) is None
    assert read.declared(2, 1).reason == "task 2 doubles what task 1 adds (the instructions say so)"  # type: ignore[union-attr]
    assert [e.mutant for e in read.equivalents] == ["return x + 2"]
