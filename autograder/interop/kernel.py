"""Running one of our hidden tests inside an nbgrader or otter Jupyter kernel.

Exported nbgrader and otter notebooks end with test cells that call ``run_hidden_test``:
it runs one test of a copy of the week's hidden tests with pytest, the ``student``
fixture bound to the kernel's own namespace through the same ``WorkerCore`` and JSON
codec the sandboxed worker uses, so the test sees exactly the values it sees when we
grade. There is no sandbox and no per-call time limit here: student code and the tests
share the kernel, which is how nbgrader and otter work (see docs/INTEROP.md).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from autograder.execution import LocalChannel
from autograder.grading.judge import describe_failure
from autograder.testing.hidden import pytest_args
from autograder.testing.plugin import CHANNEL_SOURCE

TESTS_FOLDER = "hidden_tests"  # <folder>/<week>/ holds the copy of source/<week>/tests/


class _KernelSource:
    """The ``student`` fixture's channel source: the kernel's own namespace, in-process."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.channel = LocalChannel.onto(namespace)

    def current_channel(self, item: pytest.Item) -> LocalChannel:
        """The kernel's namespace, whichever test asks."""
        return self.channel

    def current_seed(self) -> int:
        """The base seed of the hidden tests' data. nbgrader and otter run each test on its
        own, in the student's kernel, with nothing per submission to draw from: base seed 0,
        as the in-process reference run uses by default."""
        return 0


class _Binding:
    """A pytest plugin: binds ``student`` to the namespace and keeps the test's outcome."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.source = _KernelSource(namespace)
        self.failure: BaseException | None = None
        self.ran = False
        self.doc = ""

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """Put the kernel's namespace behind ``student`` (before the plugin's default)."""
        config.stash[CHANNEL_SOURCE] = self.source

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        self.ran = True
        doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
        self.doc = doc.strip().splitlines()[0].strip().rstrip(".") if doc.strip() else item.name
        if call.excinfo is not None and self.failure is None:
            self.failure = call.excinfo.value


def find_tests(week: str, start: Path | None = None) -> Path:
    """``hidden_tests/<week>`` in the working directory or the nearest folder above it."""
    here = (start or Path.cwd()).resolve()
    for folder in [here, *here.parents]:
        candidate = folder / TESTS_FOLDER / week
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no {TESTS_FOLDER}/{week}/ in {here} or any folder above it")


def run_hidden_test(week: str, test_file: str, test_name: str, namespace: dict[str, Any]) -> None:
    """Run one hidden test against ``namespace``; raise AssertionError when it fails.

    The error says what the test checks (its docstring's first line) and the author's
    message: the same student-safe feedback our grader gives. Prints nothing on success
    (otter compares a test cell's output with the empty output it recorded).
    """
    tests = find_tests(week)
    binding = _Binding(namespace)
    args = pytest_args(tests, f"{tests / test_file}::{test_name}", capture=False)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = pytest.main(args, plugins=[binding])
    if not binding.ran:
        raise RuntimeError(
            f"hidden test {test_file}::{test_name} was not run (pytest exit code {int(code)}):\n"
            f"{sink.getvalue()[-2000:]}"
        )
    if binding.failure is not None:
        raise AssertionError(f"{binding.doc}: failed ({describe_failure(binding.failure).reason})")
