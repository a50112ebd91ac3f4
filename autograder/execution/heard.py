"""What a hidden test sent the student's code, so feedback never discloses it.

A hidden test's ``assert ..., _("message")`` is the instructor's text and is shown to the
student. A message with a value formatted into it (``_("... {x}").format(x=...)``) could
carry one of the test's hidden inputs to the student: the words of a corpus it drew, or
the student's return value when that value is an input the code sent back. ``Heard``
keeps every word of the strings the current test sent to the student's code (the
arguments of its calls, string arrays included), and ``disclosed_in`` says whether a
message repeats one of them as a whole word outside the instructor's own text.

Only what the test sent counts: a type name, a dictionary key or an exception text the
student's code sent is the student's own and discloses nothing hidden, and a word that
the message's template holds ("spam" in week 5's notes example) is the instructor's.
Words are whole (``\\w+``, case-folded): "dict" sent never hides a message about
``predict``. Bounded: past ``MAX_WORDS`` the record stops and every message counts as
disclosing, which only costs the student a hint.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from autograder.exceptions import ProtocolError
from autograder.worker.codec import decode

MIN_LENGTH = 3  # shorter words are in every sentence; they cannot carry much either
MAX_WORDS = 20_000
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The whole words of ``text`` that count (``MIN_LENGTH`` characters or more), case-folded."""
    return [w for w in _WORD.findall(text.casefold()) if len(w) >= MIN_LENGTH]


class Heard:
    """The words the current hidden test sent to the student's code since the last ``clear``."""

    def __init__(self) -> None:
        self.sent: set[str] = set()
        self.overflow = False

    def clear(self) -> None:
        """Forget what was sent: a new hidden test starts."""
        self.sent.clear()
        self.overflow = False

    def note(self, request: dict[str, Any]) -> None:
        """Record the words of a request's call arguments (``call``, and each step of
        ``calls``): every string of the value trees, the items of string arrays; not the
        keyword names (the task's interface), nor the type names of handles passed back
        (the worker chose those)."""
        steps = request.get("steps")
        trees: list[Any] = []
        for call in [request, *(steps if type(steps) is list else [])]:
            if type(call) is not dict:
                continue
            trees.append(call.get("args"))
            kwargs = call.get("kwargs")
            pairs = kwargs.get("d") if type(kwargs) is dict else None
            if type(pairs) is list:
                trees.extend(pair[1] for pair in pairs if type(pair) is list and len(pair) == 2)
        self._walk(trees)

    def _walk(self, stack: list[Any]) -> None:
        seen: set[int] = set()  # a value sent to several calls is one tree, walked once
        while stack and not self.overflow:
            node = stack.pop()
            if type(node) is str:
                self.sent.update(words(node))
                self.overflow = len(self.sent) > MAX_WORDS
            elif type(node) in (list, dict) and id(node) not in seen:
                seen.add(id(node))
                if type(node) is list:
                    stack.extend(node)
                elif "a" in node:
                    stack.extend(_strings_of_array(node))
                elif "d" in node or "t" in node:
                    stack.append(node.get("d", node.get("t")))
                # "h" (a handle: its type name is the worker's) and "f" (nan, inf) hold no input

    def disclosed_in(self, text: str, template: str | None = None) -> bool:
        """Whether ``text`` repeats a word the test sent (or the record overflowed).
        ``template``: the instructor's text ``text`` was formatted from (its placeholders
        filled in); its own words are not counted, only what was filled in."""
        if self.overflow:
            return True
        found = Counter(words(text))
        if template is not None and _made_from(template, text):
            found -= Counter(words(_literal_text(template)))
        return any(word in self.sent for word in found)


def _strings_of_array(node: dict[str, Any]) -> list[str]:
    """The items of a string array as sent (``{"a": [dtype, shape, data]}``); none for numbers."""
    spec = node.get("a")
    if type(spec) is not list or not spec or type(spec[0]) is not str or "U" not in spec[0]:
        return []
    try:
        return [str(item) for item in decode(node).ravel().tolist()]
    except (ProtocolError, ValueError, TypeError):
        return []


def _literal_text(template: str) -> str:
    """The template's own text, its placeholders left out (one per line: words never join)."""
    return "\n".join(literal for literal, _field, _spec, _conversion in string.Formatter().parse(template))


def _made_from(template: str, text: str) -> bool:
    """Whether ``text`` is ``template`` with its placeholders filled in."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        return False
    pattern = "".join(re.escape(literal) + (".*" if field is not None else "") for literal, field, _s, _c in parts)
    return re.fullmatch(pattern, text, re.DOTALL) is not None
