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

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from autograder.audit.operators import KINDS
from autograder.exceptions import CourseError
from autograder.i18n.runtime import N_, _
from autograder.settings_files import Table, load, refuse, toml_value

FILENAME = "audit.toml"
COPIED = N_("a string, copied from the audit's report")
TASK = N_("a task's number, a whole number such as 1")


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


class EquivalentTable(Table):
    """One ``[[equivalent]]`` entry as written."""

    task: int = Field(description=TASK)
    operator: str = Field(description=N_("the operator's name, copied from the audit's report"))
    line: str = Field(description=COPIED)
    mutant: str = Field(description=COPIED)
    reason: str = Field(description=N_("one line saying why no test can tell this mutant apart"))

    @field_validator("operator")
    @classmethod
    def _an_operator(cls, name: str) -> str:
        if name not in KINDS:
            refuse(_("= {name} is not one of {kinds}: copy it from the audit's report").format(
                name=toml_value(name), kinds=", ".join(KINDS)))
        return name

    @field_validator("reason")
    @classmethod
    def _said(cls, reason: str) -> str:
        if not reason.strip():
            refuse(_("= {reason} is empty: say in one line why no test can tell this mutant apart").format(
                reason=toml_value(reason)))
        return reason.strip()


class BuildsOnTable(Table):
    """One ``[[builds_on]]`` entry as written (``context["tasks"]``: the week's autograded
    task numbers, which ``task`` and ``uses`` must be)."""

    task: int = Field(description=N_("the number of the task whose tests use another task's code"))
    uses: int = Field(description=N_("the number of the task whose code those tests use"))
    reason: str = Field(description=N_("one line saying where the instructions build on that task"))

    @field_validator("task", "uses")
    @classmethod
    def _autograded(cls, number: int, info: ValidationInfo) -> int:
        tasks: list[int] = (info.context or {})["tasks"]
        if number not in tasks:
            refuse(_("= {number} is not an autograded task of the week (its autograded tasks: {tasks}): write one "
                     "of those").format(number=number, tasks=", ".join(map(str, tasks)) or _("none")))
        return number

    @field_validator("reason")
    @classmethod
    def _said(cls, reason: str, info: ValidationInfo) -> str:
        if not reason.strip():
            refuse(_("= {reason} is empty: say in one line why task {task}'s instructions build on task {uses}").format(
                reason=toml_value(reason), task=info.data.get("task", "?"), uses=info.data.get("uses", "?")))
        return reason.strip()

    @model_validator(mode="after")
    def _another_task(self) -> Self:
        if self.task == self.uses:
            refuse(_("task and uses are both {task}: a task's tests always use its own code; name the other task it "
                     "builds on in uses").format(task=self.task))
        return self


def _array_of_tables(table: str, value: object) -> object:
    if isinstance(value, dict):
        refuse(_("write each entry as [[{table}]] (an array of tables), not [{table}]").format(table=table))
    return value


class AuditTomlFile(Table):
    """``audit.toml`` as written."""

    equivalent: list[EquivalentTable] = Field(default_factory=list, description=N_(
        "[[equivalent]] tables (two brackets), one per survivor, copied from the audit's report"))
    builds_on: list[BuildsOnTable] = Field(default_factory=list, description=N_(
        "[[builds_on]] tables (two brackets), each with task, uses and reason"))

    @field_validator("equivalent", mode="before")
    @classmethod
    def _equivalents(cls, value: object) -> object:
        return _array_of_tables("equivalent", value)

    @field_validator("builds_on", mode="before")
    @classmethod
    def _builds_ons(cls, value: object) -> object:
        return _array_of_tables("builds_on", value)

    @model_validator(mode="after")
    def _once_each(self) -> Self:
        seen: dict[tuple[int, int], int] = {}
        for index, entry in enumerate(self.builds_on):
            if (entry.task, entry.uses) in seen:
                refuse(_("repeats entry {first} (task {task} uses task {uses}): delete one").format(
                    first=seen[(entry.task, entry.uses)] + 1, task=entry.task, uses=entry.uses),
                    at=("builds_on", index))
            seen[(entry.task, entry.uses)] = index
        return self


def read_audit_toml(path: Path, autograded: Iterable[int]) -> AuditToml:
    """The entries of ``path`` (none when it does not exist). ``autograded``: the week's
    autograded task numbers, which a ``[[builds_on]]`` entry must name. A malformed file or
    entry is a CourseError naming the file, the entry, the key and what to write instead."""
    document = load(path, AuditTomlFile, CourseError, context={"tasks": sorted(set(autograded))})
    if document is None:
        return AuditToml()
    return AuditToml(
        tuple(Equivalent(number=number, task=e.task, operator=e.operator, line=e.line, mutant=e.mutant,
                         reason=e.reason) for number, e in enumerate(document.equivalent, start=1)),
        tuple(BuildsOn(number=number, task=b.task, uses=b.uses, reason=b.reason)
              for number, b in enumerate(document.builds_on, start=1)))


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
