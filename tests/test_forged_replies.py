"""Nothing a worker says reaches a person except in the grader's own words.

A hostile worker (the student's code owns the process: it can patch ``WorkerCore.handle``)
answers every request of the real hidden tests with arbitrary frames or arbitrary
messages. Every string it chooses carries ``LEAK``; the property is that ``LEAK`` never
appears in a test's output, a message, the result JSON or the feedback page. What the
worker says about the notebook's own first run (cell errors, before any hidden test has
called it) is the student's own output and may be shown: it carries ``OWN``.

The grading path is the real one (``grade``: pytest, the hidden tests, ``SubmissionRun``,
``Student``, the judge, the result JSON, the feedback template); only the worker behind
``SubmissionRun`` is the hostile one. The sandboxed version, with notebooks that patch the
real worker, is ``tests/hostile/corpus_forged_replies.py`` and the last tests here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import asdict
from typing import Any

import nbformat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.course import Course
from autograder.exceptions import MissingName, ProtocolError, StudentCodeError, WorkerDied, WorkerTimeout
from autograder.execution import Limits, Sandboxed, SubmissionRun, ZygoteSlot
from autograder.execution import isolation as isolation_module
from autograder.execution.cells import cell_error
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.grading.judge import describe_failure
from autograder.report.feedback import render_feedback
from autograder.submission import Submission
from autograder.testing.student import Student, check_reply
from autograder.worker.codec import dumps_message, loads_message


def notebook_bytes(*cells: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()


LEAK = "Qzleak"
OWN = "Qzown"


# -- what a hostile worker can say -------------------------------------------------------------
def marked(marker: str) -> st.SearchStrategy[str]:
    """Strings the worker chose: the marker first (a cut keeps it), some identifiers."""
    return st.one_of(
        st.text(max_size=40).map(lambda s: marker + s),
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True).map(lambda s: marker + s),
        st.integers(0, 3000).map(lambda n: marker + "x" * n),
    )


def scalars(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), text)


def trees(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Value trees as the codec writes them, and malformed ones."""
    return st.recursive(
        scalars(text),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.builds(lambda xs: {"t": xs}, st.lists(inner, max_size=4)),
            st.builds(lambda ps: {"d": ps}, st.lists(st.tuples(scalars(text), inner).map(list), max_size=3)),
            st.builds(lambda i, n, c: {"h": [i, n, c]}, st.integers(0, 50), text, st.booleans()),
            st.builds(lambda f: {"f": f}, st.sampled_from(["nan", "inf", "-inf"]) | text),
            st.dictionaries(text, inner, max_size=2),
        ),
        max_leaves=12,
    )


def replies(text: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Forged replies: well-formed ones of every kind, naming what the worker likes."""
    names = st.one_of(text, st.sampled_from(["ValueError", "NotImplementedError", "Perceptron", "ppn"]))
    return st.one_of(
        st.builds(lambda v: {"ok": True, "value": v}, trees(text)),
        st.builds(lambda v, w: {"ok": True, "value": v, "warnings": w}, trees(text), st.lists(text, max_size=3)),
        st.builds(lambda n: {"ok": False, "kind": "missing", "name": n}, names),
        st.builds(lambda e, v, s: {"ok": False, "kind": "exception", "ename": e, "evalue": v, "not_implemented": s},
                  names, text, st.booleans()),
        st.builds(lambda k, v: {"ok": False, "kind": k, "evalue": v}, text, text),
        st.dictionaries(text, trees(text), max_size=4),
        st.builds(lambda e, v: {"ok": True, "error": {"ename": e, "evalue": v}}, names, text),
        # where the error was raised: a position the grader quotes its own copy of the notebook at
        st.builds(lambda e, v, w: {"ok": False, "kind": "exception", "ename": e, "evalue": v, "where": w},
                  names, text, positions(text)),
        st.builds(lambda e, v, w: {"ok": True, "error": {"ename": e, "evalue": v, "where": w}},
                  names, text, positions(text)),
    )


def positions(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Forged ``[cell, line]`` positions: in the notebook, out of it, or not positions at all."""
    return st.one_of(st.lists(st.integers(-2, 40), min_size=2, max_size=2), trees(text), st.none())


def frames(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """What arrives on the pipe: a message, raw bytes, or the worker hanging or dying."""
    return st.one_of(
        replies(text),
        replies(text),
        st.binary(max_size=200),
        text.map(lambda s: json.dumps(s).encode()),
        st.sampled_from([WorkerDied, WorkerTimeout]),
    )


class HostileWorker:
    """Stands where the sandboxed worker stands (``Worker.request``): every reply is drawn."""

    def __init__(self, hostile: HostileSlot) -> None:
        self.hostile = hostile
        self.dead = False

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        first_run = message.get("op") == "cell" and self.hostile.boots == 1 and not self.hostile.tests_started
        drawn = self.hostile.data.draw(frames(marked(OWN if first_run else LEAK)))
        if drawn in (WorkerDied, WorkerTimeout):
            self.dead = True
            raise drawn("the hostile worker")
        raw = drawn if isinstance(drawn, bytes) else dumps_message(drawn)
        try:
            return loads_message(raw)  # exactly what Worker.request does with a frame
        except ProtocolError:
            self.dead = True
            raise


class HostileSlot:
    """A ``ZygoteSlot`` whose workers are hostile; counts boots per submission."""

    missing: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.boots = 0
        self.tests_started = False

    def start(self) -> HostileSlot:
        return self

    def spawn(self, limits: Limits | None = None) -> HostileWorker:
        self.boots += 1
        return HostileWorker(self)

    def release(self, *, kill: bool) -> None:
        pass

    def settle(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def hostile_runs(monkeypatch: pytest.MonkeyPatch):
    """``SubmissionRun`` as it is, telling the hostile slot when a submission starts and
    when its hidden tests start (after that, no cell error may be shown)."""

    class Run(SubmissionRun):
        def __init__(self, slot: Any, cells: list[str], limits: Limits) -> None:
            slot.boots, slot.tests_started = 0, False
            super().__init__(slot, cells, limits)

        def execute(self) -> None:
            super().execute()
            self.slot.tests_started = True

    monkeypatch.setattr(isolation_module, "SubmissionRun", Run)  # what Sandboxed runs


def everything_shown(result: Any, title: str) -> str:
    return "\n".join([json.dumps(to_dict(result), ensure_ascii=False), json.dumps(asdict(result), default=str),
                      render_feedback(result, week_title=title)])


@pytest.mark.sandbox
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_hostile_worker_chooses_no_word_of_what_anyone_reads(course: Course, hostile_runs: None, data: st.DataObject):
    week = course.week("week01")
    slot = HostileSlot(data)
    submissions = [Submission(origin=f"s{i}", key=f"s{i}", content=notebook_bytes("x = 1", "y = 2")) for i in range(2)]
    results = grade(week, submissions, isolation=Sandboxed(Limits(restarts=2), slot))  # type: ignore[arg-type]
    assert [r.key for r in results] == ["s0", "s1"]
    for result in results:
        shown = everything_shown(result, week.name)
        assert LEAK not in shown, [line for line in shown.splitlines() if LEAK in line][:3]
        assert LEAK.encode("unicode_escape").decode() not in shown


# -- replies are checked against their request -------------------------------------------------
def test_a_missing_name_is_the_one_the_test_asked_for():
    assert check_reply({"op": "get", "name": "ppn"}, {"ok": False, "kind": "missing", "name": "ppn"}) \
        == {"ok": False, "kind": "missing"}
    for request, name in (({"op": "get", "name": "ppn"}, "X(40, 2):-0.2496"),
                          ({"op": "call", "obj": 1}, "fit"), ({"op": "has", "name": "ppn"}, "ppn"),
                          ({"op": "getattr", "obj": 1, "name": "w_"}, "w_")):
        with pytest.raises(ProtocolError) as caught:
            check_reply(request, {"ok": False, "kind": "missing", "name": name})
        assert name not in str(caught.value)


@pytest.mark.parametrize("reply", [
    {"ok": False, "kind": "exception", "ename": "X(40, 2)", "evalue": ""},
    {"ok": False, "kind": "exception", "ename": "ValueError", "evalue": 3},
    {"ok": False, "kind": "exception", "ename": "V" * 101, "evalue": ""},
    {"ok": False, "kind": "exception", "ename": "ValueError", "evalue": "", "not_implemented": "yes"},
    {"ok": False, "kind": "secret-kind"},
    {"ok": "yes", "value": 1},
    {"ok": True},
    {"ok": True, "value": 1, "warnings": "RuntimeWarning: secret"},
    {"ok": True, "value": 1, "warnings": ["w"] * 21},
])
def test_malformed_replies_are_protocol_errors_in_grader_words(reply: dict[str, Any]):
    request = {"op": "call", "obj": 1, "warnings": True}
    with pytest.raises(ProtocolError) as caught:
        check_reply(request, reply)
    assert "secret" not in str(caught.value) and "X(40" not in str(caught.value)


def test_an_exception_keeps_only_a_builtin_type_name_in_feedback():
    checked = check_reply({"op": "call", "obj": 1},
                          {"ok": False, "kind": "exception", "ename": "Leak_4_2", "evalue": "X=[1,2]"})
    assert StudentCodeError(checked["ename"], checked["evalue"]).feedback() == "your code raised an exception"
    assert StudentCodeError("ValueError", "X=[1,2]").feedback() == "your code raised ValueError"


def test_cell_errors_are_shown_as_the_students_own_output_and_stored_safely():
    assert cell_error({"ename": "ValueError", "evalue": "bad \ud800"}) == "ValueError: bad ?"
    assert cell_error({"ename": "X(40, 2)", "evalue": None}) == "an exception"
    assert len(cell_error({"ename": "E", "evalue": "v" * 10_000})) < 210


# -- the sandboxed worker, patched by the notebook ----------------------------------------------
FORGE_MISSING = '''
import autograder.worker.core as core
_real = core.WorkerCore.handle
def handle(self, request):
    if request.get("name") == "HIDDEN":
        return {"ok": False, "kind": "missing", "name": "HIDDEN"}
    return {"ok": False, "kind": "missing", "name": "HIDDEN " + repr(request)[:90]}
core.WorkerCore.handle = handle
'''


def test_a_patched_worker_cannot_name_what_is_missing(slot: ZygoteSlot):
    limits = Limits(cell_timeout_s=10, call_timeout_s=5, submission_timeout_s=30, tests_timeout_s=30)
    run = SubmissionRun(slot, ["def f(x):\n    return x", FORGE_MISSING], limits)
    slot.limits = limits
    try:
        run.execute()
        student = Student(run)
        with pytest.raises(ProtocolError) as forged:  # a lookup answered with another name
            student.f  # noqa: B018
        with pytest.raises(ProtocolError) as forged_call:  # a "missing" for a call
            student.f(np.arange(3))
        for caught in (forged, forged_call):
            assert "HIDDEN" not in str(caught.value)
            assert describe_failure(caught.value).reason == "your code's answer could not be read as plain data"
        with pytest.raises(MissingName) as missing:  # the name the test asked for, the worker agreeing
            student.HIDDEN  # noqa: B018 - the lookup itself must raise
        assert missing.value.feedback() == "your notebook does not define `HIDDEN`"
    finally:
        run.close()
        slot.limits = Limits()


# -- the grader's memory ------------------------------------------------------------------------
PARSE_BOMB = textwrap.dedent('''
    import resource, sys
    from autograder.exceptions import ProtocolError
    from autograder.worker.codec import loads_message
    raw = b'{"ok":true,"value":[' + b"[]," * 20_000_000 + b'[]],"seq":1}'   # 60 MB, under the frame cap
    worst = b'{"ok":true,"value":[' + b"{}," * 1_990_000 + b'{}],"seq":1}'  # just under the value cap
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        loads_message(raw)
        print("parsed")
    except ProtocolError:
        pass
    bomb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    loads_message(worst)
    print(bomb >> 10, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10)
''')


@pytest.mark.slow
def test_a_reply_is_bounded_in_memory_before_it_is_built():
    """20 M empty lists (1.75 GB once built) are refused by counting; the largest message
    that passes costs under 256 MB. Measured in a fresh process (peak RSS growth)."""
    out = subprocess.run([sys.executable, "-c", PARSE_BOMB], capture_output=True, text=True, check=True).stdout
    bomb_mb, worst_mb = (int(x) for x in out.split())
    assert bomb_mb < 16, out
    assert worst_mb < 256, out


def test_grader_processes_get_a_memory_limit(monkeypatch: pytest.MonkeyPatch):
    from autograder.grading import grader_process

    monkeypatch.setenv("AUTOGRADER_GRADER_MEMORY_MB", "1024")
    assert grader_process.grader_memory_bytes() == 1024 << 20
    monkeypatch.setenv("AUTOGRADER_GRADER_MEMORY_MB", "0")
    assert grader_process.grader_memory_bytes() is None
    code = textwrap.dedent('''
        import resource
        from autograder.grading.grader_process import limit_memory
        limit_memory(256 << 20)
        print(resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)
        try:
            block = bytearray(512 << 20)
            print("allocated")
        except MemoryError:
            print("MemoryError")
    ''')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["256", "MemoryError"]
