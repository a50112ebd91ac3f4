"""The floor: the student's code and the hidden tests' own computation, nothing else.

Each distinct notebook of the mix runs in-process (the trusted ``--submission`` path of
the hidden tests' plugin: no sandbox, no worker, no pipe), in a process that has already
imported everything, through the same pytest options as grading. What is timed is
pytest's run loop: executing the notebook's cells plus running every hidden test, with
bare failure reports (as the grading loop makes them: no traceback formatting), less
the time in full garbage collections (the in-process path resets IPython's shell per
notebook, which runs ``gc.collect()`` over the grader's whole heap: an artefact of
measuring in-process, not work of the student's or the tests').
Usage: ``floor.py WEEK NOTEBOOK...``. Prints JSON: wall and CPU seconds per distinct notebook
(the least of three runs each).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import sys
import time
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.testing.hidden import pytest_args


class Timer:
    def __init__(self) -> None:
        self.seconds = self.cpu_seconds = 0.0
        self.gc_seconds = self.gc_cpu_seconds = 0.0
        self._gc_started = self._gc_cpu_started = 0.0

    def _on_gc(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._gc_started, self._gc_cpu_started = time.perf_counter(), time.process_time()
        else:
            self.gc_seconds += time.perf_counter() - self._gc_started
            self.gc_cpu_seconds += time.process_time() - self._gc_cpu_started

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
        """A bare report, as the grading loop builds: pytest's own would format a traceback
        for each failure, which is neither the student's work nor the tests'."""
        excinfo = call.excinfo
        skipped = excinfo is not None and isinstance(excinfo.value, pytest.skip.Exception)
        outcome = "passed" if excinfo is None else "skipped" if skipped else "failed"
        longrepr = None if excinfo is None else (str(item.path), 0, "skipped") if skipped else excinfo.typename
        return pytest.TestReport(item.nodeid, item.location, {}, outcome, longrepr, call.when,
                                 duration=call.duration, start=call.start, stop=call.stop)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        gc.callbacks.append(self._on_gc)
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds = time.perf_counter() - started - self.gc_seconds
            self.cpu_seconds = time.process_time() - cpu_started - self.gc_cpu_seconds
            gc.callbacks.remove(self._on_gc)


def time_notebook(args: list[str], notebook: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the notebook's run and its tests."""
    timer = Timer()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main([*args, "--submission", str(notebook)], plugins=[timer])
    return timer.seconds, timer.cpu_seconds


def main() -> None:
    week = Course.locate(Path(__file__).resolve().parent.parent).week(sys.argv[1])
    args = pytest_args(week.tests_dir)
    notebooks = [Path(p) for p in sys.argv[2:]]
    time_notebook(args, notebooks[0])  # warm: imports, first IPython shell
    timed = {}
    for nb in notebooks:
        runs = [time_notebook(args, nb) for _ in range(3)]
        timed[str(nb)] = {"wall_s": min(w for w, _ in runs), "cpu_s": min(c for _, c in runs)}
    print(json.dumps(timed))


if __name__ == "__main__":
    main()
