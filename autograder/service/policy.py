"""Per-week submission rules of the grading service, read from the course's ``service.toml``.

The rules belong to the course, not to the code: an instructor edits ``service.toml`` in
the course root (one ``[weekNN]`` table per week, an optional ``[defaults]`` table that
every week starts from) and the service reads it again on each submission. A week with
no table has no limits and counts its best attempt::

    timezone = "Europe/Berlin"            # for dates written without an offset

    [defaults]
    max_attempts = 10
    min_interval_s = 60

    [week01]
    opens = 2026-09-01T08:00:00
    due = 2026-09-14T23:59:00
    late_penalty_per_day = 0.1            # of the week's points, per day or part of a day
    late_cutoff_days = 3                  # refused from 3 days after the due date
    counted = "last"                      # or "best" (the default)

``[[sync]]`` entries in the same file (Moodle Assignments synced on a schedule) are read
by ``service/moodle_sync.py`` when the service starts.

This module decides; the store applies its decisions inside the transaction that records
an attempt, so two uploads at once cannot both slip under a limit.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autograder.course import normalise_week_name
from autograder.exceptions import AutograderError, PolicyError

FILENAME = "service.toml"
SYNC_KEY = "sync"  # [[sync]]: the Moodle Assignments `serve` syncs on a schedule
DAY = timedelta(days=1)




@dataclass(frozen=True)
class WeekPolicy:
    """When and how often a week may be submitted, and which attempt counts.

    ``late_penalty_per_day`` is a fraction of the week's points taken off per day (or part
    of a day) after ``due``; ``late_cutoff_days`` refuses uploads that many days after
    ``due`` (None: never). ``timezone`` is only how times are written in messages."""

    opens: datetime | None = None
    due: datetime | None = None
    late_penalty_per_day: float = 0.0
    late_cutoff_days: float | None = None
    max_attempts: int | None = None
    min_interval_s: float = 0.0
    counted: Literal["best", "last"] = "best"
    timezone: str = "UTC"

    def days_late(self, submitted_at: datetime) -> int:
        """Whole days (a started day counts) between ``due`` and ``submitted_at``; 0 if on time."""
        if self.due is None or submitted_at <= self.due:
            return 0
        return math.ceil((submitted_at - self.due) / DAY)

    def penalty(self, submitted_at: datetime) -> float:
        """The fraction of the week's points taken off an attempt made at ``submitted_at``."""
        return min(1.0, round(self.late_penalty_per_day * self.days_late(submitted_at), 9))

    def refusal(self, *, now: datetime, attempts_made: int, last_submitted: datetime | None) -> str | None:
        """Why an upload at ``now`` is refused (what and when, for the student), or None.

        ``attempts_made`` counts the attempts that count against ``max_attempts`` (those
        the grader failed on do not); ``last_submitted`` is the latest of those."""
        if self.opens is not None and now < self.opens:
            return f"This week opens for submissions at {self.show(self.opens)}; upload again from then."
        if self.due is not None and self.late_cutoff_days is not None:
            cutoff = self.due + timedelta(days=self.late_cutoff_days)
            if now >= cutoff:
                return (f"Submissions closed at {self.show(cutoff)} (due {self.show(self.due)}, late uploads "
                        f"accepted for {self.late_cutoff_days:g} days). Ask your instructor if you need an extension.")
        if self.max_attempts is not None and attempts_made >= self.max_attempts:
            return (f"You have used all {self.max_attempts} attempts for this week; your counted score stays as it "
                    "is. Ask your instructor if you need another attempt.")
        if last_submitted is not None and self.min_interval_s > 0:
            ready = last_submitted + timedelta(seconds=self.min_interval_s)
            if now < ready:
                wait = math.ceil((ready - now).total_seconds())
                return (f"Attempts must be at least {_duration(self.min_interval_s)} apart: upload again at "
                        f"{self.show(ready)} (in {_duration(wait)}).")
        return None

    def show(self, moment: datetime) -> str:
        """``moment`` as a student reads it: in the course's time zone, to the minute or second."""
        local = moment.astimezone(_zone(self.timezone))
        spec = "%Y-%m-%d %H:%M" if local.second == 0 else "%Y-%m-%d %H:%M:%S"
        return f"{local.strftime(spec)} {self.timezone}"


def _duration(seconds: float) -> str:
    seconds = math.ceil(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _zone(name: str) -> timezone | ZoneInfo:
    if name.upper() == "UTC":
        return UTC
    return ZoneInfo(name)


def load_policies(course_root: Path) -> dict[str, WeekPolicy]:
    """The policy of every week ``course_root/service.toml`` names; {} when there is no file.

    ``policy_for`` also gives weeks the file does not name (its ``[defaults]``)."""
    return _read(course_root)[0]


def policy_for(course_root: Path, week: str) -> WeekPolicy:
    """The policy that applies to ``week`` now: the file is read on every call, so an
    instructor's edit applies to the next upload without a restart."""
    named, default = _read(course_root)
    return named.get(normalise_week_name(week), default)


def read_config(course_root: Path) -> dict[str, Any]:
    """``service.toml`` as TOML reads it, {} when there is none: its week tables are this
    module's, its ``[[sync]]`` entries ``service.moodle_sync``'s."""
    path = course_root / FILENAME
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: not valid TOML ({exc}); fix the file and reload") from exc


def _read(course_root: Path) -> tuple[dict[str, WeekPolicy], WeekPolicy]:
    path = course_root / FILENAME
    data = read_config(course_root)
    if not data:
        return {}, WeekPolicy()
    data.pop(SYNC_KEY, None)  # read when the service starts (service/moodle_sync.py)
    zone_name = data.pop("timezone", "UTC")
    if not isinstance(zone_name, str):
        raise PolicyError(f"{path}: timezone must be a name such as \"Europe/Berlin\", not {zone_name!r}")
    try:
        zone = _zone(zone_name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise PolicyError(f"{path}: unknown timezone {zone_name!r}: use an IANA name such as "
                          "\"Europe/Berlin\"") from exc
    base = data.pop("defaults", {})
    if not isinstance(base, dict):
        raise PolicyError(f"{path}: [defaults] must be a table")
    policies: dict[str, WeekPolicy] = {}
    for name, table in data.items():
        if not isinstance(table, dict):
            raise PolicyError(f"{path}: {name!r} must be a [weekNN] table, e.g. [week01]")
        try:
            week = normalise_week_name(name)
        except AutograderError:
            raise PolicyError(f"{path}: [{name}] is not a week: name tables [week01] ... or [defaults]") from None
        policies[week] = _policy(path, name, {**base, **table}, zone, zone_name)
    return policies, _policy(path, "defaults", base, zone, zone_name)


_KEYS = {f.name for f in fields(WeekPolicy)} - {"timezone"}


def _policy(path: Path, table: str, values: dict[str, Any], zone: timezone | ZoneInfo, zone_name: str) -> WeekPolicy:
    where = f"{path}: [{table}]"
    unknown = sorted(set(values) - _KEYS)
    if unknown:
        raise PolicyError(f"{where}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(_KEYS))}")

    def moment(key: str, end_of_day: bool) -> datetime | None:
        value = values.get(key)
        if value is None:
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo is not None else value.replace(tzinfo=zone)
        if isinstance(value, date):  # a date alone: the start of the day opens, its end is due
            return datetime.combine(value, time.max if end_of_day else time.min, tzinfo=zone).replace(microsecond=0)
        raise PolicyError(f"{where}: {key} must be a TOML date or date-time such as 2026-09-14T23:59:00, "
                          f"not {value!r}")

    def number(key: str, default: float | None, *, whole: bool = False) -> Any:
        value = values.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (
                whole and not float(value).is_integer()):
            kind = "a whole number" if whole else "a number"
            raise PolicyError(f"{where}: {key} must be {kind} of at least 0, not {value!r}")
        return int(value) if whole else float(value)

    opens, due = moment("opens", False), moment("due", True)
    if opens is not None and due is not None and due <= opens:
        raise PolicyError(f"{where}: due ({due.isoformat()}) must come after opens ({opens.isoformat()})")
    counted = values.get("counted", "best")
    if counted not in ("best", "last"):
        raise PolicyError(f"{where}: counted must be \"best\" or \"last\", not {counted!r}")
    penalty = number("late_penalty_per_day", 0.0)
    if penalty > 1:
        raise PolicyError(f"{where}: late_penalty_per_day is a fraction of the week's points (0.1 = 10% a day), "
                          f"not {penalty!r}")
    if due is None and (penalty or values.get("late_cutoff_days") is not None):
        raise PolicyError(f"{where}: late_penalty_per_day and late_cutoff_days need a due date")
    max_attempts = number("max_attempts", None, whole=True)
    if max_attempts == 0:
        raise PolicyError(f"{where}: max_attempts must be at least 1 (leave it out for no limit)")
    return WeekPolicy(opens=opens, due=due, late_penalty_per_day=penalty,
                      late_cutoff_days=number("late_cutoff_days", None), max_attempts=max_attempts,
                      min_interval_s=number("min_interval_s", 0.0), counted=counted, timezone=zone_name)
