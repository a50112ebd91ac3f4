"""The pytest plugin behind the hidden tests: markers, ``--submission``, the ``student`` fixture.

Run directly (``pytest source/week01/tests``), ``student`` is the reference notebook
executed in-process: that is how CI proves every hidden test passes on the reference.
During grading, ``autograder.grading.loop`` puts a sandboxed submission behind it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pytest

from autograder.i18n.runtime import _
from autograder.notebook import code_cells
from autograder.testing.hidden import MARKERS, marker_problems, read_markers, reference_notebook
from autograder.testing.student import Channel, Student


class ChannelSource(Protocol):
    """Whoever decides which submission ``student`` talks to (the grading loop)."""

    def current_channel(self) -> Channel: ...

    def current_seed(self) -> int:
        """The submission's seed: drawn fresh for every submission, kept in its result."""
        ...


CHANNEL_SOURCE = pytest.StashKey["ChannelSource"]()
_LOCAL = pytest.StashKey[dict[Path, "Channel"]]()


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


def pytest_configure(config: pytest.Config) -> None:
    """Register the hidden tests' markers (declared in ``autograder.testing.hidden``)."""
    for spec in MARKERS.values():
        config.addinivalue_line("markers", spec.help)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a bad or missing marker before a hidden test runs in-process (``pytest source``).

    Grading, generation and the exporters collect with their own checks, which say the same
    in their own error (``autograder.testing.hidden``); so do ``--collect-only`` runs.
    """
    if config.stash.get(CHANNEL_SOURCE, None) is not None or config.option.collectonly:
        return
    problems = marker_problems(items)
    if problems:
        raise pytest.UsageError("hidden tests with a bad marker:\n  " + "\n  ".join(problems))


def _local_channel(config: pytest.Config, notebook: Path) -> Channel:
    """One in-process notebook at a time (the IPython shell is a singleton)."""
    from autograder.execution.local import LocalChannel

    cache: dict[Path, Channel] = config.stash.setdefault(_LOCAL, {})
    if notebook not in cache:
        cache.clear()
        cache[notebook] = LocalChannel.run_notebook(code_cells(notebook.read_bytes()), folder=notebook.parent)
    return cache[notebook]


@pytest.fixture
def student(request: pytest.FixtureRequest) -> Student:
    """The submission under test (see docs/AUTHORING.md)."""
    timeout = read_markers(request.node).call_timeout
    source = request.config.stash.get(CHANNEL_SOURCE, None)
    if source is not None:
        return Student(source.current_channel(), call_timeout=timeout)
    option = request.config.getoption("submission")
    notebook = Path(option).resolve() if option else reference_notebook(Path(request.node.path))
    return Student(_local_channel(request.config, notebook), call_timeout=timeout)


def _base_seed(request: pytest.FixtureRequest) -> int:
    source = request.config.stash.get(CHANNEL_SOURCE, None)
    return source.current_seed() if source is not None else int(request.config.getoption("seed"))


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed, below 2**32 (usable as ``random_state``).

    Hidden inputs drawn from a fixed seed can be learned from one submission and recognised
    in the next (a lookup table earns full marks), so grading draws a fresh seed per
    submission. The test's file and name are mixed in, so each test has its own stream
    whatever else runs, and a regrade with the recorded seed reproduces every input.
    """
    label = f"{_base_seed(request)}:{Path(str(request.node.path)).name}::{request.node.name}"
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
