"""Hostile cases that rewrite the worker itself and forge every reply to the hidden tests.

The worker is the student's process: a notebook can replace ``WorkerCore.handle`` and
answer each request with anything. Leakers (base ``leak``) put the call's arguments (the
hidden inputs) and the run's ``__MARKER__`` into every field the feedback could quote;
forgers (base ``wrong``) claim success. Neither may gain a point or a word of feedback.
These complete ``corpus_forged_replies.py`` (missing names, type names, huge strings,
unknown kinds, passing values) with the kinds it lacks. Loaded by ``corpus.py``.
"""

PATCH = '''
import json, os
from autograder.worker import core as _core
_real = _core.WorkerCore.handle

def _args(request):
    return "__MARKER__ " + json.dumps(request.get("args", request.get("name", "")))[:400]

def _install(forge):
    def handle(self, request):
        if request.get("op") in ("cell", "has"):
            return _real(self, request)
        return forge(self, request)
    _core.WorkerCore.handle = handle
'''


def _forging(body: str) -> list[str]:
    return [PATCH + body]


CASES = [
    dict(name="forged_builtin_exception_message", base="leak",
         attack="a built-in exception type (which feedback may name) carrying the arguments as its message",
         cells=_forging('_install(lambda self, r: {"ok": False, "kind": "exception", "ename": "ValueError", '
                        '"evalue": _args(r)})')),
    dict(name="forged_not_implemented", base="leak", status="not_attempted",
         attack="claim NotImplementedError with the arguments as its message (so: not attempted, and no more)",
         cells=_forging('_install(lambda self, r: {"ok": False, "kind": "exception", "ename": "NotImplementedError", '
                        '"evalue": _args(r), "not_implemented": True})')),
    dict(name="forged_echo", base="wrong",
         attack="answer each call with its own first argument (a fit that returns X, a predict that returns y)",
         cells=_forging('_install(lambda self, r: {"ok": True, "value": (r.get("args") or [None])[0]})')),
    dict(name="forged_items_bomb", base="leak",
         attack="a reply of 15 million empty lists, under the frame cap, to exhaust the grader's memory",
         cells=_forging('_install(lambda self, r: {"ok": True, "value": [[] for _ in range(15_000_000)]})')),
]
