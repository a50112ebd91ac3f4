"""Hostile cases: the notebook patches its own worker to forge the replies the grader reads.

The worker is the student's process, so ``WorkerCore.handle`` (and ``run_cell``) can be
replaced from a cell. Every forged string carries ``__MARKER__``, which must reach no
result; a forged reply must earn nothing (``testing.student.check_reply`` accepts a reply only
when the request could have produced it, and feedback uses the grader's words only).
Cell requests are passed through untouched unless the case says otherwise: errors of the
notebook's first run are the student's own output and are shown.
"""

PATCH = '''
import autograder.worker.core as _core
_real_handle = _core.WorkerCore.handle
def _forge(self, request):
    if request.get("op") == "cell":
        return _real_handle(self, request)
    return FORGE(self, request)
_core.WorkerCore.handle = _forge
'''


def forging(body: str) -> list[str]:
    """Cells that define ``FORGE(self, request)`` and install it."""
    return [body, PATCH]


CASES = [
    dict(name="forged_missing_name_with_inputs", base="leak",
         attack="answer every call with a 'missing' naming the call's hidden arguments",
         cells=forging('''
def FORGE(self, request):
    return {"ok": False, "kind": "missing", "name": "__MARKER__ " + repr(request)[:200]}
''')),
    dict(name="forged_missing_name_for_lookups", base="leak",
         attack="answer name lookups with a 'missing' that names something else",
         cells=forging('''
def FORGE(self, request):
    if request.get("op") == "get":
        return {"ok": False, "kind": "missing", "name": request["name"] + " __MARKER__"}
    return _real_handle(self, request)
''')),
    dict(name="forged_exception_names", base="leak",
         attack="report exceptions whose type names and texts carry the call's arguments",
         cells=forging('''
import itertools
_names = itertools.cycle(["ValueError", "E__MARKER__".replace("-", "_"), "X(1, 2)", "__MARKER__", "KeyError"])
def FORGE(self, request):
    return {"ok": False, "kind": "exception", "ename": next(_names),
            "evalue": "__MARKER__ " + repr(request)[:400], "not_implemented": False}
''')),
    dict(name="forged_huge_strings", base="leak",
         attack="10 MB names, exception texts and values in every reply",
         cells=forging('''
import itertools
_big = "__MARKER__" * 1_000_000
_kinds = itertools.cycle([
    {"ok": False, "kind": "missing", "name": _big},
    {"ok": False, "kind": "exception", "ename": "ValueError", "evalue": _big, "not_implemented": False},
    {"ok": True, "value": _big},
    {"ok": False, "kind": _big},
])
def FORGE(self, request):
    return next(_kinds)
''')),
    dict(name="forged_type_names", base="wrong",
         attack="hand back handles whose type names carry the arguments, and claim to be a Perceptron",
         cells=forging('''
def FORGE(self, request):
    reply = _real_handle(self, request)
    value = reply.get("value")
    if isinstance(value, dict) and "h" in value:
        value["h"][1] = "__MARKER__" + repr(request)[:150]
    elif request.get("op") == "call":
        reply = {"ok": True, "value": {"h": [1, "Perceptron __MARKER__", True]}}
    return reply
''')),
    dict(name="forged_warnings_and_kinds", base="leak",
         attack="replies of unknown kinds, warnings lists and 'has' answers that are strings",
         cells=forging('''
import itertools
_kinds = itertools.cycle([
    {"ok": False, "kind": "__MARKER__", "evalue": "__MARKER__"},
    {"ok": True, "value": 1, "warnings": ["__MARKER__"] * 50},
    {"ok": "__MARKER__", "value": "__MARKER__"},
    {"ok": True, "value": {"__MARKER__": ["__MARKER__"]}},
    {"ok": True, "value": {"d": [["__MARKER__", {"f": "__MARKER__"}]]}},
])
def FORGE(self, request):
    return next(_kinds)
''')),
    dict(name="forged_passing_values", base="wrong",
         attack="answer attribute reads and calls with the values a correct perceptron would give",
         cells=forging('''
import numpy as np
from autograder.worker.codec import encode
def FORGE(self, request):
    reply = _real_handle(self, request)
    if request.get("op") == "getattr" and request.get("name") == "errors_":
        return {"ok": True, "value": encode([2, 2, 3, 2, 1, 0, 0, 0, 0, 0]), "note": "__MARKER__"}
    return reply
''')),
    dict(name="forged_cell_errors_after_a_crash", base="leak",
         attack="crash the worker from a hidden test's call, then forge cell errors carrying the "
                "call's arguments in the re-run",
         cells=['''
import os
import autograder.worker.core as _core
_real_handle, _real_cell = _core.WorkerCore.handle, _core.WorkerCore.run_cell
_flag = "/tmp/forged-cell-errors"
def _cell(self, source, *rest):
    if os.path.exists(_flag):
        return {"ok": True, "error": {"ename": "ValueError", "evalue": "__MARKER__ " + open(_flag).read()[:150]}}
    return _real_cell(self, source, *rest)
def _handle(self, request):
    if request.get("op") == "call":
        with open(_flag, "w") as f:
            f.write(repr(request)[:300])
        os._exit(0)
    return _real_handle(self, request)
_core.WorkerCore.handle = _handle
_core.WorkerCore.run_cell = _cell
''', "after = 'a cell whose error the re-run forges'"]),
]
