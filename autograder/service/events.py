"""The service's log as a log collector reads it: one line per event, with its fields.

``event("graded", attempt=12, learner="s01", course="c1", score=8.0)`` logs one INFO line
through the stdlib ``logging`` (logger ``autograder.events``); ``configure`` (``serve
--log-format``) writes every record, events and the package's warnings alike, as one line in
one of three formats:

- ``json``: JSON lines, ``{"time": ..., "level": ..., "logger": ..., "event": ..., "message": ..., <fields>}``
- ``logfmt``: ``time=... level=... logger=... event=graded attempt=12 ... msg="..."``
- ``text`` (the default): ``TIME LEVEL event field=value ...: message``, for a person at a terminal

The events (docs/LMS.md, "Logs"): ``listening``, ``database`` (its URL without the password),
``queued``, ``graded``, ``failed``, ``taken over`` (by the replica taking over an attempt or
a score post whose claim expired, naming the replica it was taken from, and by the one that
finds its claim lost), ``score posted``, ``score already there`` and ``score superseded``
(a 409 that means nothing is wrong), ``score refused``, ``score retried``, ``shutdown``.
Their fields name the attempt, the week, the learner and the course (LTI ids) where known,
never a token, a cookie or a password: the callers pass only those, and a record's
traceback is folded into its one line.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

log = logging.getLogger("autograder.events")

LogFormat = Literal["json", "logfmt", "text"]
FORMATS: tuple[LogFormat, ...] = ("json", "logfmt", "text")


def event(name: str, /, *, level: int = logging.INFO, message: str = "", **fields: Any) -> None:
    """Log the event ``name`` with ``fields`` (names and ids, never a secret) as one line, with
    ``message`` in words where the event needs explaining (a takeover, a refusal)."""
    log.log(level, "%s", message, extra={"event": name, "fields": fields})


def attempt_fields(attempt: Any) -> dict[str, Any]:
    """What an event says of an attempt (``store.Attempt``): its id, week, learner and course."""
    return {"attempt": attempt.id, "week": attempt.week, "learner": attempt.user, "course": attempt.context}


def _moment(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def _parts(record: logging.LogRecord, formatter: logging.Formatter) -> tuple[str, dict[str, Any], str]:
    """A record's event name, its fields and its message (an exception's traceback appended)."""
    name = getattr(record, "event", None)
    fields: dict[str, Any] = dict(getattr(record, "fields", {}))
    message = record.getMessage()
    if record.exc_info:
        message = f"{message}\n{formatter.formatException(record.exc_info)}".strip()
    return name or "message", fields, message


class JsonLines(logging.Formatter):
    """One JSON object per record (newlines in a message escaped, so one line each)."""

    def format(self, record: logging.LogRecord) -> str:
        name, fields, message = _parts(record, self)
        line: dict[str, Any] = {"time": _moment(record), "level": record.levelname.lower(), "logger": record.name,
                                "event": name, **fields}
        if message:
            line["message"] = message
        return json.dumps(line, ensure_ascii=False, default=str)


def _logfmt_value(value: Any) -> str:
    text = "" if value is None else str(value)
    if text and not any(c in text for c in ' ="\\\n\t'):
        return text
    return json.dumps(text, ensure_ascii=False)  # quoted, with \" \\ \n escaped: still one line


class Logfmt(logging.Formatter):
    """``key=value`` pairs, values quoted where they hold spaces, quotes or newlines."""

    def format(self, record: logging.LogRecord) -> str:
        name, fields, message = _parts(record, self)
        pairs = {"time": _moment(record), "level": record.levelname.lower(), "logger": record.name, "event": name,
                 **fields}
        if message:
            pairs["msg"] = message
        return " ".join(f"{key.replace(' ', '_')}={_logfmt_value(value)}" for key, value in pairs.items())


class Text(logging.Formatter):
    """A line for a person: time, level, the event and its fields, or the message."""

    def format(self, record: logging.LogRecord) -> str:
        name, fields, message = _parts(record, self)
        head = f"{_moment(record)} {record.levelname}"
        if name != "message":
            head += f" {name}" + "".join(f" {key}={_logfmt_value(value)}" for key, value in fields.items())
        return f"{head}: {message}" if message else head


def configure(log_format: LogFormat) -> None:
    """Every log record to stderr as one line of ``log_format``: the package's at INFO and up
    (its events), everything else's at WARNING and up, as before."""
    formatter = {"json": JsonLines, "logfmt": Logfmt, "text": Text}[log_format]()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("autograder").setLevel(logging.INFO)
