"""Text that every writer can encode, whatever a submission put in it.

A JSON file may spell a lone surrogate (``"\\ud800"``), and Python decodes it into a
``str`` that UTF-8 cannot encode: the first write of it (a result's JSON, the gradebook,
the marking sheet, a message between grader processes) would raise and stop the batch.
The same holds for file names that are not UTF-8 (``os`` decodes them with
``surrogateescape``). Text from a submission passes through ``scrub`` where it enters
the grader (the notebook reader) and where results are written (``result_json``).
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so UTF-8 can always encode it."""
    return text if text.isascii() else _SURROGATE.sub(REPLACEMENT, text)


def scrub_tree(value: Any) -> Any:
    """``scrub`` applied to every string (keys too) of a JSON-like tree of dicts and lists."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_tree(v) for v in value]
    return value
