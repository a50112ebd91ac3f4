"""``source/weekNN/audit.toml``: what the week's author explains to the audit, with a reason.

Two kinds of entry. ``[[equivalent]]``: a survivor judged equivalent. A mutant that keeps
every point may behave exactly like the reference (an initial weight scale nobody can
observe, a copy of an array that is never modified): no test can kill it, and the author
says so once. An entry names its mutant by what stays put while the notebook is edited
elsewhere: the task, the operator, the changed line as written and as mutated (never a
mutant number, which shifts as code is added above)::

    [[equivalent]]
    task = 1
    operator = "constant"
    line = "w = rgen.normal(loc=0.0, scale=0.01, size=1 + X.shape[1])"
    mutant = "w = rgen.normal(loc=0.0, scale=0.02, size=1 + X.shape[1])"
    reason = "the initial weights' scale only rescales w; the predictions do not change"

``[[builds_on]]``: task ``task``'s tests may use task ``uses``'s code, because the
instructions say task ``task`` builds on it; without it, a mutant of one task that costs
points on another task's tests is a blame failure (the points went to the wrong task)::

    [[builds_on]]
    task = 3
    uses = 1
    reason = "task 3 asks for a pipeline around task 1's scaler (the instructions say so)"
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from autograder.audit.operators import KINDS
from autograder.exceptions import CourseError

FILENAME = "audit.toml"
_EQUIVALENT = {"task": int, "operator": str, "line": str, "mutant": str, "reason": str}
_BUILDS_ON = {"task": int, "uses": int, "reason": str}


@dataclass(frozen=True)
class Equivalent:
    """One ``[[equivalent]]`` entry (``number``: its 1-based position among them, for messages)."""

    number: int
    task: int
    operator: str
    line: str
    mutant: str
    reason: str

    @property
    def key(self) -> tuple[int, str, str, str]:
        return (self.task, self.operator, self.line.strip(), self.mutant.strip())


@dataclass(frozen=True)
class BuildsOn:
    """One ``[[builds_on]]`` entry: ``task``'s tests may lose points to a bug in ``uses``."""

    number: int
    task: int
    uses: int
    reason: str


@dataclass(frozen=True)
class AuditToml:
    """What a week's audit.toml explains."""

    equivalents: tuple[Equivalent, ...] = ()
    builds_on: tuple[BuildsOn, ...] = ()

    def declared(self, task: int, uses: int) -> BuildsOn | None:
        """The entry letting task ``task``'s tests use task ``uses``'s code, if any."""
        return next((b for b in self.builds_on if b.task == task and b.uses == uses), None)


def read_audit_toml(path: Path, autograded: Iterable[int]) -> AuditToml:
    """The entries of ``path`` (none when it does not exist). ``autograded``: the week's
    autograded task numbers, which a ``[[builds_on]]`` entry must name. A malformed file or
    entry is a CourseError naming the file, the entry, the key and what to write instead."""
    if not path.is_file():
        return AuditToml()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path} is not valid TOML: {exc}") from None
    unknown = set(document) - {"equivalent", "builds_on"}
    if unknown:
        raise CourseError(f"{path}: unknown table(s) {sorted(unknown)}: the file holds only [[equivalent]] and "
                          "[[builds_on]] entries")
    for table in ("equivalent", "builds_on"):
        if not isinstance(document.get(table, []), list):
            raise CourseError(f"{path}: write each entry as [[{table}]] (an array of tables), not [{table}]")
    equivalents = tuple(_equivalent(path, number, entry)
                        for number, entry in enumerate(document.get("equivalent", []), start=1))
    tasks = sorted(set(autograded))
    builds_on = tuple(_builds_on(path, number, entry, tasks)
                      for number, entry in enumerate(document.get("builds_on", []), start=1))
    seen: dict[tuple[int, int], int] = {}
    for b in builds_on:
        if (b.task, b.uses) in seen:
            raise CourseError(f"{path}: [[builds_on]] entry {b.number} repeats entry {seen[(b.task, b.uses)]} "
                              f"(task {b.task} uses task {b.uses}): delete one")
        seen[(b.task, b.uses)] = b.number
    return AuditToml(equivalents, builds_on)


def _checked(path: Path, table: str, number: int, entry: dict[str, object], fields: dict[str, type],
             hint: str) -> str:
    """Check ``entry``'s keys and their types against ``fields``; return where it is, for messages."""
    where = f"{path}: [[{table}]] entry {number}"
    missing = [name for name in fields if name not in entry]
    extra = sorted(set(entry) - set(fields))
    if missing or extra:
        wrong = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown key(s) {', '.join(extra)}"] if extra else [])
        raise CourseError(f"{where}: {'; '.join(wrong)} (an entry has exactly {', '.join(fields)}: {hint})")
    for name, kind in fields.items():
        if not isinstance(entry[name], kind) or isinstance(entry[name], bool):
            raise CourseError(f"{where}: {name} must be {'a whole number' if kind is int else 'a string'}")
    if not str(entry["reason"]).strip():
        raise CourseError(f"{where}: reason is empty: say in one line why "
                          + ("no test can tell this mutant apart" if table == "equivalent"
                             else f"task {entry['task']}'s instructions build on task {entry['uses']}"))
    return where


def _equivalent(path: Path, number: int, entry: dict[str, object]) -> Equivalent:
    where = _checked(path, "equivalent", number, entry, _EQUIVALENT, "copy them from the audit's report")
    if entry["operator"] not in KINDS:
        raise CourseError(f"{where}: operator {entry['operator']!r} is not one of {', '.join(KINDS)}")
    return Equivalent(number=number, task=int(entry["task"]), operator=str(entry["operator"]),  # type: ignore[call-overload]
                      line=str(entry["line"]), mutant=str(entry["mutant"]), reason=str(entry["reason"]).strip())


def _builds_on(path: Path, number: int, entry: dict[str, object], tasks: list[int]) -> BuildsOn:
    where = _checked(path, "builds_on", number, entry, _BUILDS_ON,
                     "task = the task whose tests use another's code, uses = that other task")
    task, uses = int(entry["task"]), int(entry["uses"])  # type: ignore[call-overload]
    for key, value in (("task", task), ("uses", uses)):
        if value not in tasks:
            raise CourseError(f"{where}: {key} = {value} is not an autograded task of the week (its autograded "
                              f"tasks: {', '.join(map(str, tasks)) or 'none'}): write one of those")
    if task == uses:
        raise CourseError(f"{where}: task and uses are both {task}: a task's tests always use its own code; "
                          "name the other task it builds on in uses")
    return BuildsOn(number=number, task=task, uses=uses, reason=str(entry["reason"]).strip())


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def entry_text(task: int, operator: str, line: str, mutant: str) -> str:
    """The audit.toml entry for a survivor, ready to paste (the reason left to the author)."""
    return (f"[[equivalent]]\ntask = {task}\noperator = {_quoted(operator)}\nline = {_quoted(line)}\n"
            f"mutant = {_quoted(mutant)}\nreason = \"\"\n")


def builds_on_text(task: int, uses: int) -> str:
    """The audit.toml entry declaring that task ``task`` builds on task ``uses`` (reason left
    to the author, who writes it only when the instructions say so)."""
    return f"[[builds_on]]\ntask = {task}\nuses = {uses}\nreason = \"\"\n"
