"""A quiet run says nothing but its results: no warning that alarms and says nothing.

`grade` of a week offered in four languages once printed about a hundred nbformat
``DuplicateCellId`` warnings (the languages' handed-out cells joined into one notebook
with shared ids), and a zygote that did not answer in time under load logged "failed to
fork ... replacing it" although the replacement was the whole remedy.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.execution import Limits, ZygoteSlot
from tests.helpers import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "week01"


def in_language(fixture: str, language: str) -> bytes:
    nb = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    nb.setdefault("metadata", {}).setdefault("autograder", {})["language"] = language
    return json.dumps(nb).encode()


@pytest.mark.sandbox
def test_a_grade_run_of_a_multi_language_week_prints_its_table_and_results_only(tmp_path: Path) -> None:
    assert len(Course.locate(ROOT).week("week01").languages.offered) > 1
    hand_ins = tmp_path / "hand-ins"
    hand_ins.mkdir()
    for name, fixture, language in (("ana", "correct_fresh_notebook.ipynb", "ja"),
                                    ("ben", "wrong_no_bias.ipynb", "es"), ("cy", "untouched_stub.ipynb", "en")):
        (hand_ins / f"{name}.ipynb").write_bytes(in_language(fixture, language))
    result = subprocess.run([sys.executable, "-m", "autograder", "grade", "week01", str(hand_ins),
                             "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "200"}, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    said = [line for line in result.stderr.splitlines() if line.strip()]
    # the one line at start that says which sandbox layers are on (docs/SECURITY.md), then the outputs
    assert said[0].startswith("sandbox layers: "), result.stderr[-3000:]
    assert said[1:] == [f"report: {tmp_path / 'out' / 'report.html'}",
                        f"gradebook: {tmp_path / 'out' / 'gradebook.csv'}",
                        f"marking sheet: {tmp_path / 'out' / 'manual-marking.csv'}"], result.stderr[-3000:]
    table = [line for line in result.stdout.splitlines() if line.strip()]
    assert table[0].strip() == "week01: The perceptron"
    assert all(re.match(r"^[┏┃┡│└]", line) for line in table[1:]), result.stdout
    assert {"ana", "ben", "cy"} <= {cell.strip() for line in table for cell in line.split("│")}


@pytest.fixture
def course_copy(tmp_path: Path) -> Course:
    """This course's settings and week 1 (its source and its handed-out notebooks)."""
    shutil.copy(ROOT / "course.toml", tmp_path / "course.toml")
    for folder in ("source", "assignments"):
        shutil.copytree(ROOT / folder / "week01", tmp_path / folder / "week01")
    return Course(tmp_path)


def test_the_languages_handed_out_join_without_warnings_whatever_their_nbformat(course_copy: Course) -> None:
    week = course_copy.week("week01")
    for minor in (5, 0):  # as generated (ids shared by every language), then nbformat 4.0 (no ids)
        if minor == 0:
            for language in week.languages.offered:
                path = week.assignment_notebook_in(language)
                nb = json.loads(path.read_text(encoding="utf-8"))
                nb["nbformat_minor"] = 0
                for cell in nb["cells"]:
                    cell.pop("id")
                path.write_text(json.dumps(nb), encoding="utf-8")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            given = week.handed_out()
        assert given is not None and not caught, [str(w.message) for w in caught][:3]
        sources = {cell.source for cell in given.cells}
        for language in week.languages.offered:
            handed = nbformat.read(week.assignment_notebook_in(language), as_version=4)
            assert {cell.source for cell in handed.cells} <= sources


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it (Linux's /proc/PID/task/TID/children)."""
    found = [pid]
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in children.read_text().split():
            found += process_tree(int(child))
    return found


@pytest.mark.sandbox
def test_a_zygote_that_stalls_once_is_replaced_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with ZygoteSlot(Limits()) as slot:
        assert slot.zygote is not None and slot.zygote.process is not None
        stalled = slot.zygote.process.pid
        for pid in process_tree(stalled):  # as if the machine were too busy for the zygote to answer
            os.kill(pid, signal.SIGSTOP)
        with caplog.at_level(logging.DEBUG, logger="autograder.execution.slot"):
            worker = slot.spawn()
        assert worker is not None and slot.zygote.process is not None and slot.zygote.process.pid != stalled
        slot.release(kill=True)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("failed to fork" in r.getMessage() for r in caplog.records)  # kept, at debug level
