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
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from autograder.course import normalise_week_name
from autograder.exceptions import AutograderError, PolicyError
from autograder.i18n.runtime import N_, _
from autograder.settings_files import Loc, Table, load, refuse, toml_value

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
            return _("This week opens for submissions at {moment}; upload again from then.").format(
                moment=self.show(self.opens))
        if self.due is not None and self.late_cutoff_days is not None:
            cutoff = self.due + timedelta(days=self.late_cutoff_days)
            if now >= cutoff:
                return _("Submissions closed at {closed} (due {due}, late uploads accepted for {days} days). Ask "
                         "your instructor if you need an extension.").format(
                    closed=self.show(cutoff), due=self.show(self.due), days=f"{self.late_cutoff_days:g}")
        if self.max_attempts is not None and attempts_made >= self.max_attempts:
            return _("You have used all {count} attempts for this week; your counted score stays as it is. Ask "
                     "your instructor if you need another attempt.").format(count=self.max_attempts)
        if last_submitted is not None and self.min_interval_s > 0:
            ready = last_submitted + timedelta(seconds=self.min_interval_s)
            if now < ready:
                wait = math.ceil((ready - now).total_seconds())
                return _("Attempts must be at least {interval} apart: upload again at {moment} (in {wait}).").format(
                    interval=_duration(self.min_interval_s), moment=self.show(ready), wait=_duration(wait))
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


def _moment(value: datetime | date | None, zone: timezone | ZoneInfo, *, end_of_day: bool) -> datetime | None:
    """A TOML date or date-time as a moment: a date-time without an offset is in ``zone``;
    a date alone opens at the start of the day and is due at its end."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo is not None else value.replace(tzinfo=zone)
    return datetime.combine(value, time.max if end_of_day else time.min, tzinfo=zone).replace(microsecond=0)


MOMENT = N_("a TOML date or date-time such as 2026-09-14T23:59:00")


class WeekRules(Table):
    """One week's table, or ``[defaults]``, as written (a week's table holds the defaults'
    keys it does not set itself)."""

    opens: datetime | date | None = Field(default=None, description=MOMENT)
    due: datetime | date | None = Field(default=None, description=MOMENT)
    late_penalty_per_day: float = Field(default=0.0, ge=0, le=1, description=N_(
        "a fraction of the week's points taken off per day late, from 0 to 1 (0.1 = 10% a day)"))
    late_cutoff_days: float | None = Field(default=None, ge=0, description=N_(
        "a number of days of at least 0 (leave it out to accept late uploads at any time)"))
    max_attempts: int | None = Field(default=None, ge=1, description=N_(
        "a whole number of at least 1 (leave it out for no limit)"))
    min_interval_s: float = Field(default=0.0, ge=0, description=N_("a number of seconds of at least 0"))
    counted: Literal["best", "last"] = Field(default="best", description=N_('"best" or "last"'))

    @model_validator(mode="after")
    def _late_needs_due(self) -> Self:
        if self.due is None and (self.late_penalty_per_day or self.late_cutoff_days is not None):
            refuse(_("late_penalty_per_day and late_cutoff_days need a due date: add due = 2026-09-14T23:59:00 "
                     "or leave them out"))
        return self

    def policy(self, zone_name: str) -> WeekPolicy:
        """The rules as the store applies them, their times in ``zone_name``."""
        zone = _zone(zone_name)
        return WeekPolicy(opens=_moment(self.opens, zone, end_of_day=False),
                          due=_moment(self.due, zone, end_of_day=True),
                          late_penalty_per_day=self.late_penalty_per_day, late_cutoff_days=self.late_cutoff_days,
                          max_attempts=self.max_attempts, min_interval_s=self.min_interval_s, counted=self.counted,
                          timezone=zone_name)


_TOP = ("timezone", "defaults", SYNC_KEY)


class ServiceRules(Table):
    """``service.toml`` as this module reads it: each ``[weekNN]`` table under its week's
    canonical name, with ``[defaults]`` under it; ``[[sync]]`` is ``service.moodle_sync``'s."""

    timezone: str = Field(default="UTC", description=N_('an IANA time zone name such as "Europe/Berlin"'))
    defaults: WeekRules = Field(default_factory=WeekRules, description=N_(
        "a table: [defaults] on a line of its own, then the rules every week starts from under it"))
    weeks: dict[str, WeekRules] = Field(default_factory=dict, description=N_(
        "a table: [week01] on a line of its own, then the week's rules (opens, due, max_attempts, ...) under it"))
    sync: Any = None

    @model_validator(mode="before")
    @classmethod
    def _tables_by_week(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        base = data.get("defaults", {})
        weeks: dict[str, Any] = {}
        for name, table in data.items():
            if name in _TOP:
                continue
            try:
                week = normalise_week_name(name)
            except AutograderError:
                refuse(_("[{name}] is not a week: name tables [week01] ... or [defaults]").format(name=name))
            weeks[week] = {**base, **table} if isinstance(base, dict) and isinstance(table, dict) else table
        return {**{key: data[key] for key in _TOP if key in data}, "weeks": weeks}

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            _zone(name)
        except (ZoneInfoNotFoundError, ValueError):
            refuse(_('unknown timezone {name}: use an IANA name such as "Europe/Berlin"').format(name=toml_value(name)))
        return name

    @model_validator(mode="after")
    def _due_after_opens(self) -> Self:
        tables: list[tuple[Loc, WeekRules]] = [(("defaults",), self.defaults)]
        for week, rules in self.weeks.items():
            tables.append((("weeks", week), rules))
        for at, rules in tables:
            policy = rules.policy(self.timezone)
            if policy.opens is not None and policy.due is not None and policy.due <= policy.opens:
                refuse(_("due ({due}) must come after opens ({opens})").format(
                    due=policy.due.isoformat(), opens=policy.opens.isoformat()), at=at)
        return self


def _read(course_root: Path) -> tuple[dict[str, WeekPolicy], WeekPolicy]:
    rules = load(course_root / FILENAME, ServiceRules, PolicyError)
    if rules is None:
        return {}, WeekPolicy()
    return ({week: table.policy(rules.timezone) for week, table in rules.weeks.items()},
            rules.defaults.policy(rules.timezone))
