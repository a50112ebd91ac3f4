"""What the worker said to one hidden test, so feedback can refuse to repeat it.

A hidden test's ``assert ..., "message"`` is the instructor's text and is shown to the
student. An instructor may (by mistake) format a value the student's code returned into
it: then the worker chooses part of the feedback, and a submission could echo hidden
inputs through it. ``Heard`` keeps every string the worker sent during the current test
(values, type names of handles, exception texts, warnings), and ``describe_failure``
drops a message that contains one of them. Bounded: past ``MAX_STRINGS`` the record
stops and every message counts as tainted, which only costs the student a hint.
"""

from __future__ import annotations

from typing import Any

MIN_LENGTH = 3  # shorter strings are in every sentence; they cannot carry much either
MAX_STRINGS = 20_000
PAYLOAD = ("value", "ename", "evalue", "warnings", "name", "error")


class Heard:
    """The strings of the replies seen since the last ``clear``."""

    def __init__(self) -> None:
        self.strings: set[str] = set()
        self.overflow = False

    def clear(self) -> None:
        """Forget what the worker said: a new hidden test starts."""
        self.strings.clear()
        self.overflow = False

    def note(self, reply: Any) -> None:
        """Record every string of a reply's payload: the value tree (not its one-letter tags
        nor the fixed ``nan``/``inf`` words), exception texts, warnings, a reported name."""
        if type(reply) is not dict:
            return
        stack = [reply.get(key) for key in PAYLOAD]
        while stack and not self.overflow:
            node = stack.pop()
            if type(node) is str:
                if len(node) >= MIN_LENGTH:
                    self.strings.add(node)
                    self.overflow = len(self.strings) > MAX_STRINGS
            elif type(node) is list:
                stack.extend(node)
            elif type(node) is dict:
                stack.extend(v for k, v in node.items() if k != "f")

    def echoed_in(self, text: str) -> bool:
        """Whether ``text`` repeats something the worker said (or the record overflowed)."""
        return self.overflow or any(s in text for s in self.strings)
