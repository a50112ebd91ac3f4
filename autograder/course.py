"""The course on disk: where weeks live and what each week's tasks are worth.

A week is defined by its reference notebook ``source/weekNN/weekNN.ipynb``: its title
heading or metadata, and one markdown cell per task, declared by its heading
(``## Task N (P points)``) or metadata (``autograder.authoring`` reads both). The hidden tests in
``source/weekNN/tests/`` say with ``@pytest.mark.task(N)`` / ``@pytest.mark.points(P)``
how a task's points split across tests.

The course's grading environment is its own (``course.toml`` ``[grading]``, read into a
``libraries.GradingEnvironment``), and so are a week's files (``week.toml`` ``[files]``:
helper modules every worker can import, files handed out beside the student notebook),
whose every path must stay inside the week's folder.
"""

from __future__ import annotations

import gettext
import hashlib
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath, PureWindowsPath

import nbformat

from autograder.authoring import WeekSpec, read_spec
from autograder.course_languages import (
    WEEK_SETTINGS_FILE,
    Languages,
    read_grading,
    read_languages,
    read_week_files,
    read_week_languages,
)
from autograder.exceptions import CourseError
from autograder.libraries import GradingEnvironment
from autograder.provenance import grader_version

WEEK_PATTERN = re.compile(r"^week\d{2}$")


@dataclass(frozen=True)
class WeekFiles:
    """A week's own files (``week.toml`` ``[files]``), as paths relative to its folder,
    each checked to stay inside it: ``helpers`` (Python modules, read-only and importable in
    every worker, importable by the hidden tests) and ``handout`` (copied next to the
    student notebook)."""

    helpers: tuple[str, ...] = ()
    handout: tuple[str, ...] = ()


@dataclass(frozen=True)
class Task:
    number: int
    points: float
    manual: bool
    title: str


@dataclass(frozen=True)
class Week:
    """One week of the course, read from ``source/<name>/``."""

    name: str
    root: Path  # the course root (holds source/, assignments/, solutions/)

    @property
    def source_dir(self) -> Path:
        """``source/<week>/``: the instructor's folder, never visible to a worker."""
        return self.root / "source" / self.name

    @property
    def source_notebook(self) -> Path:
        """The reference-solution notebook that defines the week."""
        return self.source_dir / f"{self.name}.ipynb"

    @property
    def tests_dir(self) -> Path:
        """The hidden tests (``autograder.testing.hidden`` collects them)."""
        return self.source_dir / "tests"

    @property
    def data_dir(self) -> Path:
        """The week's data files: read-only in every worker as ``./data`` (see docs/AUTHORING.md)."""
        return self.source_dir / "data"

    @cached_property
    def languages(self) -> Languages:
        """The week's languages: the course's (``course.toml``), narrowed by the week's own
        ``week.toml`` (``autograder.course_languages``)."""
        return read_week_languages(self.source_dir, read_languages(self.root))

    @cached_property
    def files(self) -> WeekFiles:
        """The week's own files (``week.toml`` ``[files]``); CourseError naming an entry that
        is absolute, leaves the week's folder (``..``, a symlink leading out), is missing,
        or would give away the hidden tests or the reference."""
        table = read_week_files(self.source_dir, read_languages(self.root))
        helpers = tuple(self._own_file("helpers", entry) for entry in table.helpers)
        for entry in helpers:
            if not entry.endswith(".py"):
                raise CourseError(f"{self.source_dir / WEEK_SETTINGS_FILE}: [files] helpers {entry!r} is not a "
                                  "Python module: list only .py files there (data files go in data/, or in "
                                  "handout to be copied next to the student notebook)")
        return WeekFiles(helpers=helpers, handout=tuple(self._own_file("handout", entry) for entry in table.handout))

    def _own_file(self, key: str, entry: str) -> str:
        """``entry`` as a path inside the week's folder, or CourseError saying what to do."""
        where = f"{self.source_dir / WEEK_SETTINGS_FILE}: [files] {key} {entry!r}"
        fix = f"copy the file into {self.source_dir} and write its path from there, such as \"utilities.py\""
        path = PurePosixPath(entry)
        if path.is_absolute() or PureWindowsPath(entry).is_absolute() or PureWindowsPath(entry).drive:
            raise CourseError(f"{where} is an absolute path: {fix}")
        if ".." in path.parts or not path.parts or str(path) == ".":
            raise CourseError(f"{where} leaves the week's folder: {fix}")
        found = self.source_dir / path
        if not found.resolve().is_relative_to(self.source_dir.resolve()):
            raise CourseError(f"{where} is a symlink leading out of the week's folder (to {found.resolve()}): "
                              f"{fix}")
        if not found.is_file():
            raise CourseError(f"{where}: no such file in {self.source_dir}: add it, or remove the entry")
        if path.parts[0] == "tests" or path == PurePosixPath(self.source_notebook.name):
            raise CourseError(f"{where} would give the hidden tests or the reference solution to every worker: "
                              "move what students may see into a file of its own and list that")
        return str(path)

    @cached_property
    def grading(self) -> GradingEnvironment:
        """The course's grading environment (``course.toml`` ``[grading]``)."""
        return Course(self.root).grading

    @cached_property
    def grader_version(self) -> str:
        """The version a score of this week is recorded with: the grader's code and every
        library of the course's grading environment (``provenance``)."""
        return grader_version(self.grading.libraries)

    def assignment_notebook_in(self, language: str) -> Path:
        """The generated student notebook in ``language`` (``autograder generate``)."""
        return self.root / "assignments" / self.name / language / f"{self.name}.ipynb"

    def solution_notebook_in(self, language: str) -> Path:
        """The generated solution notebook in ``language``, released after the deadline."""
        return self.root / "solutions" / self.name / language / f"{self.name}.ipynb"

    @property
    def assignment_notebook(self) -> Path:
        """The generated student notebook in the source language."""
        return self.assignment_notebook_in(self.languages.source)

    @property
    def solution_notebook(self) -> Path:
        """The generated solution notebook in the source language."""
        return self.solution_notebook_in(self.languages.source)

    def handed_out(self) -> nbformat.NotebookNode | None:
        """Every cell students were given, in any language the week offers, as one notebook:
        what tells the cells a student added (``autograder.manual``); None when nothing is
        generated yet.

        The languages' notebooks share their cell ids (one source), and a notebook older
        than nbformat 4.5 has none; joined as they are, nbformat would repair both with a
        warning per cell. So each cell is normalised as it is read: its id becomes
        ``<language>-<index>`` (no caller reads these ids, only the cells' text)."""
        cells = []
        for language in self.languages.offered:
            try:
                given = nbformat.read(self.assignment_notebook_in(language), as_version=4)
            except (OSError, ValueError):
                continue
            for index, cell in enumerate(given.cells):
                cell.id = f"{language}-{index}"
                cells.append(cell)
        return nbformat.v4.new_notebook(cells=cells) if cells else None

    @cached_property
    def notebook(self) -> nbformat.NotebookNode:
        """The source notebook, read once."""
        nb: nbformat.NotebookNode = nbformat.read(self.source_notebook, as_version=4)
        return nb

    @cached_property
    def spec(self) -> WeekSpec:
        """What the source notebook declares (``autograder.authoring``)."""
        return read_spec(self.notebook)

    @cached_property
    def title(self) -> str:
        """The week's title from its title cell, else its name."""
        return self.spec.title or self.name

    def label(self, translations: gettext.NullTranslations | None = None) -> str:
        """``week01: Title``, as tables, pages and feedback name the week; its title in the
        language of ``translations`` when given (the week's catalog)."""
        return f"{self.name}: {self.title if translations is None else translations.gettext(self.title)}"

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        """The week's tasks in number order, from their headings or metadata (autograder.authoring)."""
        spec = self.spec
        if spec.problems:
            raise CourseError(f"{self.source_notebook}: " + "; ".join(spec.problems))
        if not spec.tasks:
            raise CourseError(
                f"{self.source_notebook}: no task cells: open each task with a markdown heading such as "
                "'## Task 1 (10 points): what to do' (see docs/AUTHORING.md)"
            )
        return tuple(Task(number=t.number, points=t.points, manual=t.manual, title=t.title) for t in spec.tasks)

    @property
    def max_score(self) -> float:
        """The points of every task, autograded and by hand."""
        return sum(t.points for t in self.tasks)

    @cached_property
    def test_files(self) -> tuple[Path, ...]:
        """The hidden test modules, sorted."""
        return tuple(sorted(self.tests_dir.glob("test_*.py")))

    @cached_property
    def tests_sha256(self) -> str:
        """Hash of everything that decides a score: the hidden tests and the task points."""
        h = hashlib.sha256()
        for path in sorted(p for p in self.tests_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(self.tests_dir)).encode())
            h.update(path.read_bytes())
        for t in self.tasks:
            h.update(f"{t.number}:{t.points}:{t.manual}".encode())
        return h.hexdigest()


@dataclass(frozen=True)
class Course:
    """The course folder: ``source/``, ``assignments/``, ``solutions/``."""

    root: Path

    @classmethod
    def locate(cls, root: Path | str | None = None) -> Course:
        """Find the course: an explicit root, else ``$AUTOGRADER_COURSE``, else the nearest
        folder holding ``source/`` above the working directory, else this checkout."""
        if root is None:
            root = os.environ.get("AUTOGRADER_COURSE") or None
        if root is not None:
            path = Path(root).resolve()
            if not (path / "source").is_dir():
                raise CourseError(f"{path} has no source/ folder: is it a course folder?")
            return cls(path)
        for candidate in [Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parent.parent]:
            if (candidate / "source").is_dir():
                return cls(candidate.resolve())
        raise CourseError("no course found: run inside a course folder or pass --course DIR")

    @property
    def languages(self) -> Languages:
        """The course's languages (``course.toml``)."""
        return read_languages(self.root)

    @property
    def grading(self) -> GradingEnvironment:
        """The course's grading environment (``course.toml`` ``[grading]``)."""
        table = read_grading(self.root)
        pins = {name.lower().replace("_", "-"): pinned for name, pinned in table.libraries.items()}
        return GradingEnvironment(pins=tuple(pins.items()), preload=tuple(table.preload))

    def week_names(self) -> list[str]:
        """Every ``source/weekNN`` folder: adding a week is adding a folder."""
        return sorted(p.name for p in (self.root / "source").iterdir() if WEEK_PATTERN.match(p.name) and p.is_dir())

    def week(self, name: str) -> Week:
        """The week asked for (``week1``, ``01`` and ``week01`` alike); CourseError if it has no notebook."""
        name = normalise_week_name(name)
        week = Week(name=name, root=self.root)
        if not week.source_notebook.is_file():
            raise CourseError.no_week(name, self.root)
        return week


def normalise_week_name(name: str) -> str:
    """Accept ``week01``, ``week1``, ``01`` and ``1`` for the same week.

    ASCII only: ``str.lower`` folds the Kelvin sign into ``k``, so ``wee\u212a01`` would
    otherwise be week01 under a name no other check expects."""
    digits = name.lower().removeprefix("week")
    if name.isascii() and digits.isdigit() and len(digits) <= 4:  # int() refuses '²' and 4,300 digits
        return f"week{int(digits):02d}"
    raise CourseError(f"{name!r} is not a week name: write week and its number, such as week01 or week07 "
                      "(or just the number: 1, 7)")
