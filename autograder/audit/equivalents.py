"""``source/weekNN/audit.toml``: survivors the week's author judged equivalent.

A mutant that keeps every point may behave exactly like the reference (an initial weight
scale nobody can observe, a copy of an array that is never modified): no test can kill
it, and the author says so once, with a reason. An entry names its mutant by what stays
put while the notebook is edited elsewhere: the task, the operator, the changed line as
written and as mutated (never a mutant number, which shifts as code is added above)::

    [[equivalent]]
    task = 1
    operator = "constant"
    line = "w = rgen.normal(loc=0.0, scale=0.01, size=1 + X.shape[1])"
    mutant = "w = rgen.normal(loc=0.0, scale=0.02, size=1 + X.shape[1])"
    reason = "the initial weights' scale only rescales w; the predictions do not change"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from autograder.audit.operators import KINDS
from autograder.exceptions import CourseError

FILENAME = "audit.toml"
_FIELDS = {"task": int, "operator": str, "line": str, "mutant": str, "reason": str}


@dataclass(frozen=True)
class Equivalent:
    """One entry of audit.toml (``number``: its 1-based position, for messages)."""

    number: int
    task: int
    operator: str
    line: str
    mutant: str
    reason: str

    @property
    def key(self) -> tuple[int, str, str, str]:
        return (self.task, self.operator, self.line.strip(), self.mutant.strip())


def read_equivalents(path: Path) -> list[Equivalent]:
    """The entries of ``path`` (none when it does not exist); a malformed file or entry is a
    CourseError naming the entry and what to write instead."""
    if not path.is_file():
        return []
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path} is not valid TOML: {exc}") from None
    unknown = set(document) - {"equivalent"}
    if unknown:
        raise CourseError(f"{path}: unknown table(s) {sorted(unknown)}: the file holds only [[equivalent]] entries")
    entries = document.get("equivalent", [])
    if not isinstance(entries, list):
        raise CourseError(f"{path}: write each entry as [[equivalent]] (an array of tables), not [equivalent]")
    return [_entry(path, number, entry) for number, entry in enumerate(entries, start=1)]


def _entry(path: Path, number: int, entry: dict[str, object]) -> Equivalent:
    where = f"{path}: [[equivalent]] entry {number}"
    missing = [name for name in _FIELDS if name not in entry]
    extra = sorted(set(entry) - set(_FIELDS))
    if missing or extra:
        wrong = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown key(s) {', '.join(extra)}"] if extra else [])
        raise CourseError(f"{where}: {'; '.join(wrong)} (an entry has exactly {', '.join(_FIELDS)}: "
                          "copy them from the audit's report)")
    for name, kind in _FIELDS.items():
        if not isinstance(entry[name], kind) or isinstance(entry[name], bool):
            raise CourseError(f"{where}: {name} must be {'a whole number' if kind is int else 'a string'}")
    if entry["operator"] not in KINDS:
        raise CourseError(f"{where}: operator {entry['operator']!r} is not one of {', '.join(KINDS)}")
    if not str(entry["reason"]).strip():
        raise CourseError(f"{where}: the reason is empty: say in one line why no test can tell this mutant apart")
    return Equivalent(number=number, task=int(entry["task"]), operator=str(entry["operator"]),  # type: ignore[call-overload]
                      line=str(entry["line"]), mutant=str(entry["mutant"]), reason=str(entry["reason"]).strip())


def entry_text(task: int, operator: str, line: str, mutant: str) -> str:
    """The audit.toml entry for a survivor, ready to paste (the reason left to the author)."""
    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (f"[[equivalent]]\ntask = {task}\noperator = {quoted(operator)}\nline = {quoted(line)}\n"
            f"mutant = {quoted(mutant)}\nreason = \"\"\n")
