"""One import, checked before it is written: build, check in a staging copy, then write.

The week is first written to a temporary course holding the target's ``course.toml``
and checked there as ``generate`` and grading will use it: the structural validation
and generation of the student and solution notebooks (``plan_week``: a student cell
that does not compile is refused too: a stub at the wrong depth), every
library the notebook imports present in the grading environment, and every hidden test
passing on the reference. Only a week passing all of it is written into the course.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.authoring.notebook_io import read_source
from autograder.course import Week
from autograder.course_languages import LANGUAGE_PATTERN, SETTINGS_FILE, read_languages
from autograder.exceptions import AutograderError, InteropError
from autograder.formats.atomic import copy_file
from autograder.generate.week import plan_week
from autograder.interop.report import ImportReport, Note
from autograder.interop.week_writer import ImportedWeek, python_name, python_source, write_week
from autograder.testing.budgets import source_cells

Build = Callable[[Path, ImportReport, str], ImportedWeek]
TEST_TIMEOUT = 900  # seconds for every hidden test on the reference together
NOT_LIBRARIES = {"otter", "nbgrader", "__future__"}
OUR_ERROR = re.compile(r"^autograder\.[\w.]+: ")  # our own error's module path: internal, not the instructor's
MISSING = re.compile(r"^autograder\.exceptions\.MissingName: (\S+)$")  # a name the submission lacks


@dataclass(frozen=True)
class Imported:
    """Where the week was written, and what the instructor must know about it."""

    notebook: Path
    notes: list[Note]


def notebook_language(nb: NotebookNode) -> str | None:
    """The natural language the notebook says it is written in, if it says so."""
    for value in (nb.metadata.get("autograder", {}).get("language"), nb.metadata.get("language"),
                  nb.metadata.get("lang")):
        if isinstance(value, str) and LANGUAGE_PATTERN.match(value):
            return value
    return None


def import_week(build: Build, original: Path, *, week: str, out_root: Path, language: str | None = None) -> Imported:
    """Build the week from ``original``, check it, write it into ``out_root``; or raise
    InteropError naming every problem, having written nothing."""
    report = ImportReport(str(original))
    if not original.is_file():
        raise InteropError(f"{original}: no such notebook")
    try:
        imported = build(original, report, week)
    except nbformat.reader.NotJSONError as error:
        raise InteropError(f"{original}: not a notebook ({error})") from error
    report.refuse_if_any()
    imported.language = _language(imported.notebook, language, out_root, report)
    if (out_root / "source" / week).exists():
        report.problems.append(f"{out_root / 'source' / week} exists already: import into a new week (--week), "
                               "or delete that folder first")
    _libraries(imported, report, _helpers(imported, original.parent, report))
    report.refuse_if_any()
    with tempfile.TemporaryDirectory(prefix="autograder-import-") as staging:
        root = Path(staging)
        if (out_root / SETTINGS_FILE).is_file():
            copy_file(out_root / SETTINGS_FILE, root / SETTINGS_FILE)
        try:
            write_week(imported, week=week, out_root=root)
        except AutograderError as error:  # the generated week itself is invalid: say so, not the staging path
            report.problems.append(str(error))
        else:
            check_week(Week(name=week, root=root), imported, report)
        # the problems name the files where they will be, not the staging copy
        report.problems = [p.replace(str(root), str(out_root)) for p in report.problems]
    report.refuse_if_any()
    return Imported(write_week(imported, week=week, out_root=out_root), report.notes)


def _language(nb: NotebookNode, given: str | None, out_root: Path, report: ImportReport) -> str:
    """The week's language: ``--language`` when given, else the notebook's metadata, else
    the course's source language."""
    said = notebook_language(nb)
    if given is not None:
        if not LANGUAGE_PATTERN.match(given):
            report.problems.append(f"--language {given!r} is not a language code such as 'en', 'ru' or 'pt_BR'")
        elif said and said != given:
            report.note("changed", "notebook metadata", f"it says the notebook is in {said!r}; --language {given!r} "
                        "was used")
        return given
    if said:
        return said
    try:
        return read_languages(out_root).source
    except AutograderError as error:
        report.problems.append(str(error))
        return "en"


def _module_names(sources: list[str]) -> dict[str, str]:
    """Dotted module name -> the first statement importing it, in ``sources``."""
    found: dict[str, str] = {}
    for source in sources:
        try:
            tree = ast.parse(python_source(source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                found.setdefault(name, ast.unparse(node))
    return found


def _student_sources(imported: ImportedWeek) -> list[str]:
    """The code students run: the notebook's code cells, its public checks aside."""
    return [c.source for c in imported.notebook.cells
            if c.cell_type == "code" and not c.metadata.get("autograder", {}).get("check")]


def imported_modules(imported: ImportedWeek) -> dict[str, str]:
    """Top-level module -> the first statement importing it, in the notebook and its tests."""
    sources = [c.source for c in imported.notebook.cells if c.cell_type == "code"]
    sources += [cell.source for test in imported.tests for cell in test.cells]
    found: dict[str, str] = {}
    for name, statement in _module_names(sources).items():
        found.setdefault(name.split(".")[0], statement)
    return found


def helper_module(folder: Path, name: str) -> str | None:
    """The course's own module ``name`` (dotted) in ``folder``, the original notebook's, as a
    path relative to it: ``utilities.py``, ``code/utilities.py`` for ``code.utilities``, or
    one folder down when no library has the name (``code/utilities.py`` for ``utilities``: a
    notebook that puts ``code`` on ``sys.path``). None when there is none."""
    parts = name.split(".")
    direct = folder.joinpath(*parts[:-1], f"{parts[-1]}.py")
    if direct.is_file():
        return direct.relative_to(folder).as_posix()
    if len(parts) == 1 and not folder.joinpath(parts[0]).is_dir() and importlib.util.find_spec(name) is None:
        below = sorted(p for p in folder.glob(f"*/{parts[0]}.py") if p.is_file() and not p.parent.name.startswith("."))
        if below:
            return below[0].relative_to(folder).as_posix()
    return None


def _helpers(imported: ImportedWeek, folder: Path, report: ImportReport) -> set[str]:
    """The course's own modules the notebook or its tests import, found beside the original
    notebook: copied into the week's folder and declared in ``week.toml`` (helpers, and
    handout when the student notebook imports them). Returns their top-level names: not
    libraries to look for in the grading environment."""
    sources = [c.source for c in imported.notebook.cells if c.cell_type == "code"]
    sources += [cell.source for test in imported.tests for cell in test.cells]
    students = _module_names(_student_sources(imported))
    own: set[str] = set()
    for name, statement in _module_names(sources).items():
        relative = helper_module(folder, name)
        if relative is None or relative in imported.helpers:
            continue
        if not (folder / relative).resolve().is_relative_to(folder.resolve()):
            report.problems.append(f"`{statement}`: {relative} beside the notebook is a symlink leading out of its "
                                   f"folder (to {(folder / relative).resolve()}): copy the module itself there, "
                                   "import again")
            continue
        own.add(name.split(".")[0])
        imported.helpers[relative] = folder / relative
        handed_out = name in students
        if handed_out:
            imported.handout.append(relative)
        report.note("changed", f"`{statement}`", f"{relative} beside the notebook is the course's own module, not a "
                    "library: copied into the week's folder and listed in week.toml's [files] helpers (importable "
                    "and read-only while grading)" + (" and handout (copied next to the student notebook, which "
                    "imports it)" if handed_out else ", not handed out (only the hidden tests import it)"))
    return own


def _libraries(imported: ImportedWeek, report: ImportReport, own: set[str]) -> None:
    """A library the course imports that the grading environment lacks is refused by name:
    student code and hidden tests could not run. The course's own modules (``own``) are
    no libraries."""
    for module, statement in imported_modules(imported).items():
        if module not in NOT_LIBRARIES | own and importlib.util.find_spec(module) is None:
            report.problems.append(f"`{statement}`: {module!r} is not installed in the grading environment, so "
                                   "submissions could not run: pin it at its exact version in course.toml's "
                                   "[grading.libraries] (docs/AUTHORING.md, 'Adding a library'), run `make setup`, "
                                   "import again. A module of the course's own belongs beside the notebook")


def check_week(week: Week, imported: ImportedWeek, report: ImportReport) -> None:
    """Everything that would stop ``generate`` or grading, as problems in ``report``."""
    source = read_source(week.source_notebook)
    try:
        plan = plan_week(week)
    except AutograderError as error:
        report.problems.append(str(error))
        return
    student = nbformat.reads(plan.files[week.assignment_notebook].decode("utf-8"), as_version=4)
    for index, (given, cell) in enumerate(zip(source.cells, source_cells(student.cells))):
        if cell.cell_type == "code" and _compiles(given.source) and not _compiles(cell.source):
            report.problems.append(f"cell {index + 1} of the student notebook does not compile although the "
                                   "reference does: fix where its solution markers sit")
    _reference_passes(week, imported, report)
    if not report.problems:  # the negative control judges tests that pass the reference (docs/INTEROP.md)
        from autograder.grading.negative_control import check_weeks, refusal

        if found := check_weeks([(week, plan.files[week.assignment_notebook])]):
            report.problems.append(refusal(found))


def _compiles(source: str) -> bool:
    """Whether a cell is Python as IPython runs it (magics and shell escapes transformed)."""
    try:
        compile(python_source(source), "-", "exec")
    except SyntaxError:
        return False
    return True


def _reference_passes(week: Week, imported: ImportedWeek, report: ImportReport) -> None:
    """Run every hidden test on the reference notebook; each failure is a problem. pytest
    starts in the week's folder, so its helper modules import as they do while grading."""
    xml = week.root / "reference.xml"
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                               str(week.tests_dir)], capture_output=True, text=True, cwd=week.source_dir,
                              timeout=TEST_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        report.problems.append(f"the converted hidden tests ran over {TEST_TIMEOUT} s on the reference: make the "
                               "notebook or its test cells faster, or import a smaller version and add the rest")
        return
    if not xml.is_file():
        report.problems.append(f"the converted hidden tests did not run on the reference:\n{done.stdout[-2000:]}")
        return
    origin = {f"test_{python_name(t.name)}": t for t in imported.tests}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        if failed is None:
            continue
        name = case.get("name", "?")
        test = origin.get(name.rstrip("_"))
        said = (failed.get("message") or "").strip().splitlines()
        came = f" (from {test.name!r})" if test else ""
        missing = MISSING.match(said[0]) if said else None
        why = (f"it reads `{missing[1]}`, which neither the notebook's imports nor the reference's answers define: "
               "each converted test cell runs on its own, so a name an earlier test cell computed is not there; "
               "compute it in this test cell too" if missing else
               OUR_ERROR.sub('', said[0])[:800] if said else 'see pytest')
        report.problems.append(f"hidden test {name}{came} fails on the reference: {why}")
