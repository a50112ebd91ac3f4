"""Generating a week's files, or checking that the committed ones are what generation writes.

Generation owns ``assignments/weekNN/`` and ``solutions/weekNN/`` entirely: each holds one
folder per language the week offers (``en/``, ``ja/``...) with the week's generated
notebook in that language and a copy of the week's ``data/`` folder. Anything else found
there is ``extra`` (reported by a check, deleted by a write). The source folder holds only
the notebook, ``tests/``, ``data/``, ``locale/`` (translations), ``audit.toml`` and ``week.toml`` (the week's
languages): any other file is refused, since it
would otherwise be either copied where the sandbox cannot see it or silently dropped. Hidden files and ``__pycache__``
are never copied, reported or deleted
(Jupyter's ``.ipynb_checkpoints`` lives there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from autograder.authoring.notebook_io import read_source, to_bytes
from autograder.course import Course, Week
from autograder.exceptions import GenerationError
from autograder.formats.atomic import write_bytes
from autograder.generate.pipeline import check_markers, solution_notebook, student_notebook
from autograder.generate.validate import validate_week
from autograder.i18n.generation import language_plans
from autograder.testing.budgets import week_budgets

Kind = Literal["missing", "different", "extra"]


@dataclass(frozen=True, order=True)
class Difference:
    """A generated file that is not on disk as generation would write it."""

    path: Path  # relative to the course root
    kind: Kind

    def __str__(self) -> str:
        """What a check found, and what generating would do about it."""
        return {
            "missing": f"not generated yet: {self.path}",
            "different": f"out of date: {self.path}",
            "extra": f"not from source/ (generating deletes it): {self.path}",
        }[self.kind]

    def done(self) -> str:
        """What a write did."""
        return f"deleted {self.path}" if self.kind == "extra" else f"wrote {self.path}"


@dataclass(frozen=True)
class Plan:
    """Everything generating one week would write, computed before anything is written."""

    root: Path
    folders: tuple[Path, ...]  # the folders generation owns
    files: dict[Path, bytes] = field(default_factory=dict)  # absolute path -> contents


def generate_course(course: Course, *, weeks: Sequence[str] = (), check: bool = False) -> list[Difference]:
    """Generate the named weeks (all of them when none are named); see ``generate_weeks``."""
    names = list(weeks) or course.week_names()
    return generate_weeks([course.week(name) for name in names], check=check)


def generate_week(week: Week, *, check: bool = False) -> list[Difference]:
    """``generate_weeks`` for one week."""
    return generate_weeks([week], check=check)


def generate_weeks(weeks: Iterable[Week], *, check: bool = False) -> list[Difference]:
    """The files that differ from what generation writes, sorted by path.

    With ``check`` nothing is written: an empty list means the committed files are up to
    date. Without it the differences are fixed (written or deleted) and returned as the
    list of changes. Every week is generated in memory first, so a refusal (MarkerError,
    GenerationError) leaves every file as it was.
    """
    plans = [plan_week(week) for week in weeks]
    found = [(plan, compare(plan)) for plan in plans]
    if not check:
        for plan, differences in found:
            apply(plan, differences)
    return sorted(d for _, differences in found for d in differences)


def plan_week(week: Week) -> Plan:
    """The student and solution notebooks of ``week`` in every offered language, and its
    copied files, as bytes. The week's structure is checked first (its declarations, tests
    and solution markers), then its translations: a language whose catalog lacks a
    translation is refused."""
    source = read_source(week.source_notebook)
    validate_week(week, source)
    check_markers(source, path=week.source_notebook)  # a misspelt marker is no missing translation
    assignments, solutions = week.root / "assignments" / week.name, week.root / "solutions" / week.name
    files: dict[Path, bytes] = {}
    copied = _copied_files(week)
    budgets = week_budgets(week)
    for language, gettext in language_plans(week):
        student_path, solution_path = week.assignment_notebook_in(language), week.solution_notebook_in(language)
        student = student_notebook(source, path=week.source_notebook, language=language, gettext=gettext,
                                   budgets=budgets)
        solution = solution_notebook(source, path=week.source_notebook, language=language, gettext=gettext,
                                     budgets=budgets)
        files[student_path] = to_bytes(student, path=week.source_notebook)
        files[solution_path] = to_bytes(solution, path=week.source_notebook)
        for relative in copied:
            contents = (week.source_dir / relative).read_bytes()
            files[student_path.parent / relative] = contents
            files[solution_path.parent / relative] = contents
    return Plan(root=week.root, folders=(assignments, solutions), files=files)


def compare(plan: Plan) -> list[Difference]:
    """The files of ``plan`` that differ from what is on disk (and stale ones to delete)."""
    differences = []
    for path, contents in plan.files.items():
        if not path.is_file():
            differences.append(Difference(path.relative_to(plan.root), "missing"))
        elif path.read_bytes() != contents:
            differences.append(Difference(path.relative_to(plan.root), "different"))
    for folder in plan.folders:
        for path in _files_under(folder):
            if path not in plan.files:
                differences.append(Difference(path.relative_to(plan.root), "extra"))
    return differences


def apply(plan: Plan, differences: Iterable[Difference]) -> None:
    """Write what is missing or different, delete what is extra, prune emptied folders."""
    for difference in differences:
        path = plan.root / difference.path
        if difference.kind == "extra":
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, plan.files[path])
    for folder in plan.folders:
        for directory in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
            if not any(directory.iterdir()):
                directory.rmdir()


NOT_COPIED = ("tests", "audit.toml", "locale", "week.toml")  # with data/, the notebook and week.toml's [files]


def _copied_files(week: Week) -> list[Path]:
    """Paths, relative to the week's source folder, of the files copied to both outputs:
    those under ``data/`` and those ``week.toml`` hands out (``[files] handout``). A helper
    module that is not handed out stays in the week's folder; any other file, and a file
    that is a symlink leading out of the folder, is refused."""
    files = week.files  # refuses an entry that is absolute or leads out of the week's folder
    copied = []
    for path in _files_under(week.source_dir):
        relative = path.relative_to(week.source_dir)
        if path == week.source_notebook or relative.parts[0] in NOT_COPIED:
            continue
        if relative.as_posix() in files.helpers and relative.as_posix() not in files.handout:
            continue
        if not path.resolve().is_relative_to(week.source_dir.resolve()):
            raise GenerationError(
                f"{path}: nothing was written: it is a symlink leading out of the week's folder (to {path.resolve()}), "
                "which would hand that file to every student. Copy the file into the week's folder instead."
            )
        if path.suffix == ".ipynb":
            raise GenerationError(
                f"{path}: only {week.source_notebook.name} is generated; another notebook would be copied "
                "as it is, solutions and all. Move it out of the week's folder."
            )
        if relative.as_posix() not in files.handout and (relative.parts[0] != "data" or len(relative.parts) == 1):
            raise GenerationError(
                f"{path}: nothing was written: a week's folder holds only {week.source_notebook.name}, tests/, data/, "
                "locale/, audit.toml and week.toml. Move a data file into data/ (copied to the student and solution "
                "folders and readable at data/ while grading), list the file in week.toml's [files] (helpers: a "
                "module importable while grading; handout: copied next to the student notebook; docs/AUTHORING.md, "
                "\"A week's own files\"), or move the file out of the week's folder."
            )
        copied.append(relative)
    return copied


def _files_under(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)
    )

