"""A week's hidden tests: how pytest is started on them, their markers, and what a valid marker is.

The one place that knows this. Grading (``grading/grader.py``, ``grading/loop.py``),
generation's checks (``generate/validate.py``), the exporters (``interop/suite.py``) and
the runner inside an nbgrader or otter kernel (``interop/kernel.py``) all start pytest
with ``pytest_args`` and read markers with ``read_markers``; the plugin registers
``MARKERS`` and refuses a bad marker when the tests run in-process (``pytest source``),
so an authoring mistake shows in CI instead of when a batch is graded.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from autograder.exceptions import CourseError

if TYPE_CHECKING:
    from autograder.course import Week



@dataclass(frozen=True)
class MarkerSpec:
    help: str  # what `pytest --markers` shows and a bad marker's message asks for
    valid: Callable[[float], bool]


# registered by the plugin, declared nowhere else
MARKERS: dict[str, MarkerSpec] = {
    "task": MarkerSpec("task(n): the task a hidden test belongs to (a whole number, 1 or more)",
                       lambda n: n >= 1 and n.is_integer()),
    "points": MarkerSpec("points(p): the points a hidden test is worth (a number, 0 or more)", lambda n: n >= 0),
    "call_timeout": MarkerSpec("call_timeout(s): CPU-time limit in seconds for each call into student code "
                               "in this test (above 0)", lambda n: n > 0),
}
REQUIRED = ("task", "points")
MISSING = "every hidden test needs @pytest.mark.task(N) and @pytest.mark.points(P)"


def pytest_args(tests_dir: Path, *targets: str, capture: bool = True) -> list[str]:
    """How hidden tests are run: plain asserts (no values in messages), no cache, no
    terminal output (stdout may carry JSON), test modules imported by path, the week's
    own conftest only. ``targets`` narrows the run (``file::test``); default: the folder."""
    return [
        *(targets or (str(tests_dir),)),
        "--assert=plain",
        "-p", "no:cacheprovider",
        "-p", "no:terminal",
        "-p", "no:faulthandler",
        "--import-mode=importlib",
        f"--confcutdir={tests_dir}",
        f"--rootdir={tests_dir}",
        "-W", "ignore",
        *(() if capture else ("--capture=no",)),
    ]


@dataclass(frozen=True)
class Markers:
    """A test's autograder markers, each None when absent or invalid (see ``problems``)."""

    nodeid: str
    task: int | None = None
    points: float | None = None
    call_timeout: float | None = None
    problems: list[str] = field(default_factory=list)


def _number(value: object) -> float | None:
    """A real number (bool is not one), finite, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def read_markers(item: pytest.Item) -> Markers:
    """The test's task, points and call_timeout, and what is wrong with them (says where)."""
    values: dict[str, float | None] = {}
    problems: list[str] = []
    for name, spec in MARKERS.items():
        marker = item.get_closest_marker(name)
        if marker is None:
            values[name] = None
            continue
        number = _number(marker.args[0]) if len(marker.args) == 1 and not marker.kwargs else None
        valid = number is not None and spec.valid(number)
        values[name] = number if valid else None
        if not valid:
            given = ", ".join([*map(repr, marker.args), *(f"{k}={v!r}" for k, v in marker.kwargs.items())])
            problems.append(f"{item.nodeid}: @pytest.mark.{name}({given}) is not valid: write {spec.help}")
    task = values["task"]
    return Markers(
        nodeid=item.nodeid,
        task=int(task) if task is not None else None,
        points=values["points"],
        call_timeout=values["call_timeout"],
        problems=problems,
    )


def reference_notebook(test_path: Path) -> Path:
    """``source/weekNN/tests/test_x.py`` -> ``source/weekNN/weekNN.ipynb``."""
    week_dir = test_path.resolve().parent
    while week_dir.name == "tests" or week_dir.name.startswith("test"):
        week_dir = week_dir.parent
    return week_dir / f"{week_dir.name}.ipynb"


def is_hidden_test(item: pytest.Item) -> bool:
    """A test of a week's suite: it carries a task or points marker, or lives in a week's
    ``tests/`` beside the week's notebook (where ``student`` finds the reference)."""
    return any(item.get_closest_marker(m) for m in REQUIRED) or reference_notebook(Path(item.path)).is_file()


def marker_problems(items: list[pytest.Item]) -> list[str]:
    """Every invalid or missing marker among the hidden tests of ``items``."""
    problems: list[str] = []
    for item in filter(is_hidden_test, items):
        markers = read_markers(item)
        problems += markers.problems
        if not markers.problems and (markers.task is None or markers.points is None):
            problems.append(f"{item.nodeid}: {MISSING}")
    return problems


def points_problems(items: list[pytest.Item]) -> list[str]:
    """For every week all of whose test files ``items`` hold, what ``hidden_tests`` refuses
    (a task's tests adding up to more or less than its points, tests of a task graded by
    hand or of a task the notebook lacks). A week only partly collected (one file of
    several) cannot be judged and is left out; so is a week whose notebook does not read
    (``autograder generate`` says why)."""
    from autograder.course import Week

    weeks: dict[Path, list[pytest.Item]] = {}
    for item in filter(is_hidden_test, items):
        weeks.setdefault(reference_notebook(Path(item.path)), []).append(item)
    problems = []
    for notebook, mine in weeks.items():
        week = Week(name=notebook.stem, root=notebook.parent.parent.parent)
        if not notebook.is_file() or not set(week.test_files) <= {Path(item.path).resolve() for item in mine}:
            continue
        try:
            hidden_tests(week, _declared(mine))
        except CourseError as exc:
            problems.append(str(exc))
    return problems


def _declared(items: list[pytest.Item]) -> list[pytest.Item]:
    """One item per test the week declares: a run that parametrises the ``seed`` fixture over
    many submission seeds (``scripts/seed_sweep.py``) repeats each test, not its points."""
    declared: dict[tuple[str, str, str], pytest.Item] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = sorted((k, repr(v)) for k, v in callspec.params.items() if k != "seed") if callspec else []
        declared.setdefault((str(item.path), getattr(item, "originalname", item.name), repr(params)), item)
    return list(declared.values())


@dataclass(frozen=True)
class HiddenTest:
    """What the grader knows of one collected test, read once per batch."""

    nodeid: str
    name: str
    task: int
    points: float
    description: str  # the docstring's first line: what the test checks


def _description(item: pytest.Item) -> str:
    doc = (getattr(item, "obj", None).__doc__ or "").strip() if hasattr(item, "obj") else ""
    return doc.splitlines()[0].strip().rstrip(".") if doc else item.name


def hidden_tests(week: Week, items: list[pytest.Item]) -> list[HiddenTest]:
    """Read task, points and description of every collected test; refuse a suite with a bad
    marker or whose points do not add up to the week's task points."""
    problems = marker_problems(items)
    if problems:
        raise CourseError("\n".join(problems))
    tests = []
    for item in items:
        markers = read_markers(item)
        if markers.task is None or markers.points is None:  # a test without `student` and markers
            raise CourseError(f"{item.nodeid}: {MISSING}")
        tests.append(HiddenTest(item.nodeid, item.name, markers.task, markers.points, _description(item)))
    for t in week.tasks:
        total = sum(h.points for h in tests if h.task == t.number)
        if t.manual and total:
            raise CourseError(f"{week.name}: task {t.number} is graded by hand but has hidden tests")
        if not t.manual and abs(total - t.points) > 1e-9:
            raise CourseError(f"{week.name}: hidden tests of task {t.number} add up to {total:g} points, "
                              f"the task is worth {t.points:g}: fix their @pytest.mark.points")
    unknown = {h.task for h in tests} - {t.number for t in week.tasks}
    if unknown:
        raise CourseError(f"{week.name}: hidden tests name tasks {sorted(unknown)} the notebook does not have")
    return tests


@contextlib.contextmanager
def read_afresh(tests_dir: Path) -> Iterator[None]:
    """Put the week's folder (``tests_dir``'s parent) first on ``sys.path`` while the block
    runs, and forget the modules the session imported from it when it ends.

    On the path, the hidden tests (and a reference run in this process) import the week's
    helper modules (``week.toml`` ``[files] helpers``) as a worker does from its folder.
    Forgotten, because pytest's importlib mode reuses a module already imported under the
    same name: without this the next session in this process (a regrade after a test was
    fixed, the same week of another course, another week's ``utilities.py``) would run the
    old code.
    """
    week = tests_dir.parent
    before = set(sys.modules)
    sys.path.insert(0, str(week))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(week))
        for name in set(sys.modules) - before:
            module = sys.modules[name]
            places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or ())]
            if any(Path(place).is_relative_to(week) for place in places if isinstance(place, str)):
                del sys.modules[name]


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Send everything the block prints to ``/dev/null``: Python's ``sys.stdout`` and
    ``sys.stderr`` and the file descriptors 1 and 2 under them (C code writes there).

    Grading runs each hidden test under it, with pytest's capture off: capture would
    spool what a test prints to a file in ``/tmp`` and then read it all into memory, and a
    test can print without bound (a scikit-learn fit with the student's ``verbose=1``
    writes a line per epoch). Nobody reads a test's output during grading (feedback comes
    from outcomes), so it is kept nowhere; the cost is six system calls a test.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = (os.dup(1), os.dup(2))
    null = os.open(os.devnull, os.O_WRONLY)
    streams = sys.stdout, sys.stderr
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with open(null, "w", encoding="utf-8", errors="replace", closefd=False) as sink:
            sys.stdout = sys.stderr = sink
            try:
                yield
            finally:
                sys.stdout, sys.stderr = streams
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


class _Collector:
    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)


def collect(tests_dir: Path) -> list[pytest.Item]:
    """Collect the hidden tests in ``tests_dir`` (nothing runs); CourseError if they do not collect.

    Collecting is how pytest itself sees markers (class, module ``pytestmark``,
    parametrize), which reading the files' text would miss. It leaves the process's file
    descriptors and logging alone (no capture, no logging plugin): the service collects in
    its web process (a week page's budgets), where capturing fd 2 for a moment would swallow
    the log lines other threads write then.
    """
    collector = _Collector()
    with read_afresh(tests_dir), contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main([*pytest_args(tests_dir, capture=False), "--collect-only", "-p", "no:randomly",
                            "-p", "no:logging"], plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise CourseError(f"{tests_dir}: the hidden tests do not collect (pytest exit code {int(code)}): "
                          f"run `pytest {tests_dir}` to see why")
    return collector.items
