"""The pytest plugin behind the hidden tests: markers, ``--submission``, the ``student`` fixture.

``student`` asks the ``ChannelSource`` in the config's stash, which whoever starts pytest
chooses explicitly: grading passes its ``GradingLoop`` (each submission run as ``grade``'s
isolation says, sandboxed for anything a student handed in), an nbgrader or otter kernel
its own namespace (``autograder.interop.kernel``). Run from pytest's own command line
(``pytest source/week01/tests``) with no such plugin, this plugin installs
``InProcessReference``: the reference notebook executed in-process, which is how CI
proves every hidden test passes on the reference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from autograder.i18n.runtime import _
from autograder.notebook import code_cells
from autograder.testing.hidden import MARKERS, marker_problems, points_problems, read_markers, reference_notebook
from autograder.testing.student import Channel, Student


class ChannelSource(Protocol):
    """Whoever decides which submission ``student`` talks to, and how it runs."""

    def current_channel(self, item: pytest.Item) -> Channel:
        """The channel the test ``item`` talks to."""
        ...

    def current_seed(self) -> int:
        """The submission's seed: drawn fresh for every submission, kept in its result."""
        ...


CHANNEL_SOURCE = pytest.StashKey["ChannelSource"]()
THREAD_POOLS = pytest.StashKey[ThreadpoolController]()


class InProcessReference:
    """The channel source of a plain ``pytest`` run: the week's reference notebook (or the
    ``--submission`` notebook), run in this process. Trusted files only: no sandbox."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.runs: dict[Path, Channel] = {}  # one notebook at a time: the IPython shell is a singleton

    def current_channel(self, item: pytest.Item) -> Channel:
        """The in-process run of the notebook ``item`` is checked against, run once."""
        from autograder.execution import LocalRun

        option = self.config.getoption("submission")
        notebook = Path(option).resolve() if option else reference_notebook(Path(item.path))
        if notebook not in self.runs:
            self.runs.clear()
            run = LocalRun(code_cells(notebook.read_bytes()), folder=notebook.parent)
            run.execute()
            self.runs[notebook] = run
        return self.runs[notebook]

    def current_seed(self) -> int:
        """``--seed`` (0 unless given)."""
        return int(self.config.getoption("seed"))


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--submission`` and ``--seed`` for in-process runs of the hidden tests."""
    group = parser.getgroup("autograder", "hidden tests of an autograded week")
    group.addoption(
        "--submission",
        metavar="NOTEBOOK",
        default=None,
        help="bind the `student` fixture to this notebook, run in-process (trusted files only); "
        "default: the week's reference notebook",
    )
    group.addoption(
        "--seed",
        metavar="N",
        type=int,
        default=0,
        help="the submission seed behind the `seed` and `rng` fixtures when run in-process "
        "(grading draws a fresh one per submission and records it in the result)",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the hidden tests' markers (declared in ``autograder.testing.hidden``); with
    no channel source chosen by whoever started pytest (they configure first), the
    reference runs in-process."""
    for spec in MARKERS.values():
        config.addinivalue_line("markers", spec.help)
    config.stash.setdefault(CHANNEL_SOURCE, InProcessReference(config))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Run the test's own numpy/scikit-learn work on one thread (the student's code in the
    sandbox has one already). Their data is small, and OpenMP's threads wait for each
    other by spinning: on shared cores (a grader per core, other people's load) one
    ``KNeighborsClassifier.predict`` on 28 queries took 13-110 ms instead of 1 ms.

    The thread pools are found once, at the first test (the test modules have loaded
    scikit-learn's by then; pools loaded later keep their threads); limiting them around
    each test then costs microseconds, and the process gets its threads back after."""
    pools = item.config.stash.get(THREAD_POOLS, None)
    if pools is None:
        pools = item.config.stash[THREAD_POOLS] = ThreadpoolController()
    with pools.limit(limits=1):
        yield


@pytest.hookimpl(tryfirst=True)  # before ``-k`` and ``--deselect`` narrow the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a bad or missing marker, and a week whose tests' points do not add up to its
    tasks' (42 of 40), before a hidden test runs in-process (``pytest source``), so CI fails
    as grading would. The points are judged for a week collected whole: not when the run
    names single tests (``file::test``), nor for a week of which only some files were given.

    Grading, generation and the exporters collect with their own checks, which say the same
    in their own error (``autograder.testing.hidden``); so do ``--collect-only`` runs.
    """
    if not isinstance(config.stash.get(CHANNEL_SOURCE, None), InProcessReference) or config.option.collectonly:
        return
    problems = marker_problems(items)
    if problems:
        raise pytest.UsageError("hidden tests with a bad marker:\n  " + "\n  ".join(problems))
    problems = [] if any("::" in str(arg) for arg in config.args) else points_problems(items)
    if problems:
        raise pytest.UsageError("hidden tests whose points do not add up:\n  " + "\n  ".join(problems))


@pytest.fixture
def student(request: pytest.FixtureRequest) -> Student:
    """The submission under test (see docs/AUTHORING.md)."""
    channel = request.config.stash[CHANNEL_SOURCE].current_channel(request.node)
    return Student(channel, call_timeout=read_markers(request.node).call_timeout)


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed, below 2**32 (usable as ``random_state``).

    Hidden inputs drawn from a fixed seed can be learned from one submission and recognised
    in the next (a lookup table earns full marks), so grading draws a fresh seed per
    submission. The test's file and name are mixed in, so each test has its own stream
    whatever else runs, and a regrade with the recorded seed reproduces every input.
    """
    return derived_seed(request.config.stash[CHANNEL_SOURCE].current_seed(), Path(str(request.node.path)).name,
                        request.node.name)


def derived_seed(base: int, file_name: str, test_name: str) -> int:
    """The ``seed`` of test ``test_name`` in ``file_name`` for submission seed ``base``: a
    hash, so each test has its own stream (``scripts/seed_sweep.py`` sweeps ``base``)."""
    label = f"{base}:{file_name}::{test_name}"
    return int.from_bytes(hashlib.sha256(label.encode()).digest()[:4], "little")


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A numpy generator on this test's ``seed``: the way hidden tests draw their data."""
    return np.random.default_rng(seed)


@pytest.fixture
def unchanged_inputs(student: Student) -> Callable[..., Any]:
    """``unchanged_inputs("fit", model.fit, X=X, y=y)``: call with those arguments (in that
    order, positionally), return the value, and fail the test, naming the arguments, if
    the call changed any of them in place. The instructions promise students that their
    functions' inputs are theirs to read, not to change; see ``Student.call_checking_inputs``."""

    def check(what: str, function: Any, **arguments: Any) -> Any:
        names = list(arguments)
        value, changed = student.call_checking_inputs(function, *arguments.values())
        if changed:
            named = [names[int(c.removeprefix("argument ")) - 1] for c in changed]
            message = (_("{function} changed its argument {names} in place: it must not modify the data it is "
                         "given (work on a copy)") if len(named) == 1 else
                       _("{function} changed its arguments {names} in place: it must not modify the data it is "
                         "given (work on a copy)"))
            raise AssertionError(message.format(function=what, names=_(" and ").join(named)))
        return value

    return check
