"""Moodle Assignments synced by ``autograder serve`` on a schedule: ``[[sync]]`` in service.toml.

A course that keeps Moodle's own Assignment activity gets feedback within a minute of a
hand-in when the service runs the sync (``moodle_ws.sync.sync``, what ``autograder moodle
sync`` runs) every ``interval_s`` seconds::

    [[sync]]
    week = "week04"
    url = "https://moodle.example.edu"
    assignment = 31                       # the assignment's id (mod_assign instance)
    token_file = "secrets/moodle-token"   # relative to the course folder; only its owner may read it
    interval_s = 60                       # the default; at least 10
    # allow_pending = true                # push a provisional grade while hand marking is pending
    # out = "results/week04-moodle-31"    # the default: the folder `autograder moodle sync` uses

The token is never in service.toml: the file names a file that only its owner can read,
checked as ``--token-file`` is, and read again before every run, so a new token written
there is used from the next run on without a restart. A bad entry stops ``serve`` from
starting, with a message naming the entry and the fix.

Each entry has a thread that runs one sync at a time in a child process: a child that
crashes or is stopped takes nothing of the service with it. The sync is built to be cut
anywhere (``sync_state``): stopping the service ends a run under way and the next run
carries on. Replicas of the service on one database (``serve --database``) each have these
threads, and each run is taken by one of them through the database (``sync_leases``: a
lease per synced assignment, renewed while the run lasts, with the schedule and the last
run beside it): a due run is made once, by whichever replica takes it first, the next one
is due ``interval_s`` after it on every replica's clock, and a replica that dies mid-run
leaves a lease that expires, after which another replica runs the entry at its next turn.

A run grades in the service's own grader pool (``grading.relay``: the child hands its
batch to the service over a pipe; the service's uploads go first), so ``serve --jobs N``
never runs more than N graders and a sync reuses their warm graders; with ``--scheduler``
it grades on that cluster. Its results folder and gradebook are the sync's own
(results/WEEK-moodle-ID, as from the command line), not the service's data folder: the
service's attempts and the Moodle users never mix in a report. Replicas must all see that
folder (a shared volume, as the data folder): what was pushed is remembered there, and a
replica with a folder of its own would take its peers' pushes for grades changed by hand.

An error in a run (Moodle refusing the token, the network, anything) is recorded and the
next run tries again; it never stops the service. ``SyncStatus`` is what the instructor's
page shows: the last run, what it pulled, graded, pushed and left alone, the next run, and
the last error in words, read from the database, so the same on every replica.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from autograder.course import Course
from autograder.database import Database, clock
from autograder.exceptions import AutograderError, PolicyError
from autograder.grading.grader_process import START_METHOD
from autograder.grading.pool import GraderPool
from autograder.grading.relay import Relay, RelayedGraders
from autograder.i18n.runtime import N_, _
from autograder.results_folders import moodle_results
from autograder.service.claims import CLAIM_TTL_S
from autograder.service.health import Outage
from autograder.service.policy import FILENAME, SYNC_KEY
from autograder.service.sync_leases import SyncLeases, SyncRecord
from autograder.settings_files import Table, load, refuse, toml_value

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 60.0
MIN_INTERVAL_S = 10.0  # as `autograder moodle sync --watch`: Moodle is asked at most this often
STOP_GRACE_S = 10.0  # a run told to stop (the service is stopping) is killed after this
LOOK_AGAIN_S = 1.0  # after another replica took a run first


@dataclass(frozen=True)
class SyncEntry:
    """One ``[[sync]]`` entry, checked: the week exists, the token file is the owner's own."""

    number: int  # its place among the [[sync]] entries, from 1, for messages
    week: str
    url: str
    assignment: int
    token_file: Path
    out: Path
    interval_s: float = DEFAULT_INTERVAL_S
    allow_pending: bool = False  # as --allow-pending

    @property
    def title(self) -> str:
        return f"{self.week}: assignment {self.assignment} on {self.url}"


@dataclass(frozen=True)
class SyncStatus:
    """What one entry's sync has done, as the instructor's page shows it (UTC times).

    The counts are the last finished run's (None before the first, or when it failed);
    ``error`` is that run's problem in words, None when it went through."""

    entry: SyncEntry
    state: Literal["waiting", "running", "stopped"] = "waiting"
    started: datetime | None = None  # the run under way, or the last one
    finished: datetime | None = None
    next_run: datetime | None = None
    succeeded: datetime | None = None  # the last run that went through
    pulled: int | None = None  # new or changed hand-ins downloaded
    graded: int | None = None
    pushed: int | None = None
    unchanged: int | None = None
    kept: dict[str, str] = field(default_factory=dict)  # student -> why their grade changed in Moodle was kept
    left: dict[str, str] = field(default_factory=dict)  # student -> why nothing was pushed for them
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def skipped(self) -> int | None:
        """Grades left alone because someone changed them by hand in Moodle."""
        return None if self.pulled is None else len(self.kept)


def _course_path(course: Course, value: str) -> Path:
    """A path of service.toml: relative to the course folder, ``~`` expanded."""
    return course.root / Path(value).expanduser()


PATH = N_("a path relative to the course folder, such as \"results/week04-moodle-31\"")


class SyncTable(Table):
    """One ``[[sync]]`` entry as written, checked as ``autograder moodle sync`` checks its
    options (``context["course"]``: the course the week must be in and paths are relative to)."""

    named_by = ("week", "assignment")

    token: Any = None  # refused first: the worst mistake an entry can hold
    week: str = Field(description=N_('the week, such as "week04"'))
    url: str = Field(description=N_('the Moodle site, such as "https://moodle.example.edu"'))
    assignment: int = Field(ge=1, description=N_("the assignment's id, a whole number such as 31"))
    token_file: str = Field(description=N_(
        "the path of a file holding the token that only you can read (chmod 600), relative to the course folder"))
    interval_s: float = Field(default=DEFAULT_INTERVAL_S, ge=MIN_INTERVAL_S, description=N_(
        "a number of seconds of at least 10"))
    allow_pending: bool = Field(default=False, description=N_("true or false"))
    out: str | None = Field(default=None, description=PATH)

    @field_validator("token")
    @classmethod
    def _never_the_token(cls, value: object) -> None:
        refuse(_("never put the token in {file}: write it to a file only you can read (chmod 600) and name that "
                 "file as token_file").format(file=FILENAME))

    @field_validator("week")
    @classmethod
    def _a_week_of_the_course(cls, name: str, info: ValidationInfo) -> str:
        try:
            return _context_course(info).week(name).name
        except AutograderError as exc:
            refuse(str(exc))

    @field_validator("url")
    @classmethod
    def _a_moodle_site(cls, url: str) -> str:
        from autograder.moodle_ws.webservice import check_site_url

        try:
            return check_site_url(url)
        except AutograderError as exc:
            refuse(str(exc))

    @field_validator("token_file", "out")
    @classmethod
    def _a_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        course = _context_course(info)
        if value is None:
            return value
        if not value.strip():
            refuse(_("= {value} is not a path: write one relative to the course folder {root}").format(
                value=toml_value(value), root=course.root))
        if info.field_name == "token_file":
            from autograder.moodle_ws.sync import read_token

            try:
                read_token(_course_path(course, value))
            except AutograderError as exc:
                refuse(str(exc))
        return value

    def entry(self, number: int, course: Course) -> SyncEntry:
        """The entry the service runs (``number``: its place among the entries, from 1)."""
        week = course.week(self.week)
        out = _course_path(course, self.out) if self.out is not None else moodle_results(week, self.assignment)
        return SyncEntry(number=number, week=week.name, url=self.url, assignment=self.assignment,
                         token_file=_course_path(course, self.token_file), out=out.resolve(),
                         interval_s=self.interval_s, allow_pending=self.allow_pending)


def _context_course(info: ValidationInfo) -> Course:
    course: Course = (info.context or {})["course"]
    return course


class ServiceSyncs(Table):
    """The ``[[sync]]`` entries of service.toml (its other tables are ``service.policy``'s);
    ``context["service_data"]``, the service's own folder, is one no entry may sync into."""

    model_config = ConfigDict(extra="ignore")

    sync: list[SyncTable] = Field(default_factory=list, description=N_(
        "[[sync]] tables (two brackets), one per Moodle assignment, each with week, url, assignment and token_file"))

    @field_validator("sync", mode="before")
    @classmethod
    def _an_array_of_tables(cls, value: object) -> object:
        if isinstance(value, dict):
            refuse(_("must be written [[{key}]] (two brackets), one such table per Moodle assignment").format(
                key=SYNC_KEY))
        return value

    @model_validator(mode="after")
    def _apart(self, info: ValidationInfo) -> Self:
        course = _context_course(info)
        data = (info.context or {}).get("service_data")
        entries: list[SyncEntry] = []
        for number, table in enumerate(self.sync, start=1):
            entry = table.entry(number, course)
            at = (SYNC_KEY, number - 1)
            if data is not None and entry.out == Path(data).resolve():
                refuse(_("out is the service's data folder, where the Moodle users would mix with the service's "
                         "attempts in one report: leave out unset ({default}) or name another folder").format(
                    default=moodle_results(course.week(entry.week), entry.assignment).relative_to(course.root)),
                    at=at)
            for other in entries:
                if (other.url, other.assignment) == (entry.url, entry.assignment) or other.out == entry.out:
                    refuse(_("entries {first} and {number} both sync assignment {assignment} into {out}: keep one "
                             "of them").format(first=other.number, number=number, assignment=entry.assignment,
                                               out=entry.out), at=at)
            entries.append(entry)
        return self


def load_syncs(course: Course, *, service_data: Path | None = None) -> list[SyncEntry]:
    """The ``[[sync]]`` entries of the course's service.toml, each checked; a PolicyError
    naming the entry, the key and the fix for a bad one. ``service_data`` is the service's
    own folder, which no entry may sync into."""
    syncs = load(course.root / FILENAME, ServiceSyncs, PolicyError,
                 context={"course": course, "service_data": service_data})
    return [] if syncs is None else [table.entry(number, course) for number, table in enumerate(syncs.sync, start=1)]


class MoodleSyncs:
    """The entries' threads, from ``__enter__`` to ``__exit__`` (a context manager).

    ``database`` is the service's: each entry's lease, schedule and last run are there
    (``sync_leases``), so of the replicas sharing it one at a time runs an entry, and
    ``claim_ttl_s`` is how long a dead replica's lease lasts. ``pool`` and ``scheduler`` are
    the service's: what one run grades in (with neither, a run grades in one grader process
    of its own)."""

    def __init__(self, entries: list[SyncEntry], course: Course, database: Database, *,
                 claim_ttl_s: float = CLAIM_TTL_S, pool: GraderPool | None = None,
                 scheduler: str | None = None) -> None:
        self.course = course
        self.pool = pool
        self.scheduler = scheduler
        self._entries = {entry.number: entry for entry in entries}
        self._leases = SyncLeases(database, ttl_s=claim_ttl_s)
        self._rows: dict[int, int] = {}  # entry number -> its row in service_syncs
        self._stopped: set[int] = set()  # the entries whose thread has ended (the service is stopping)
        self._stop = threading.Event()
        self._turn = threading.Lock()  # one sync at a time in this process
        self._threads: list[threading.Thread] = []

    def statuses(self) -> list[SyncStatus]:
        """Each entry's status now, in service.toml's order: as the database has it, so the
        same on every replica (but for "stopped", which is this process's own)."""
        records = self._leases.records(list(self._rows.values())) if self._rows else {}
        now = clock.now()
        return [_status(entry, records.get(self._rows.get(number, -1)), stopped=number in self._stopped,
                        ttl_s=self._leases.ttl_s, now=now)
                for number, entry in sorted(self._entries.items())]

    def __enter__(self) -> Self:
        for number, entry in sorted(self._entries.items()):
            self._rows[number] = self._leases.register(entry.url, entry.assignment)
        for number, entry in sorted(self._entries.items()):
            thread = threading.Thread(target=self._loop, args=(entry, self._rows[number]), daemon=True,
                                      name=f"autograder-sync-{entry.week}-{entry.assignment}")
            thread.start()
            self._threads.append(thread)
            log.info("syncing %s every %g s into %s", entry.title, entry.interval_s, entry.out)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self._leases.close()

    def _loop(self, entry: SyncEntry, row_id: int) -> None:
        delay = 0.0  # the first look at once: a run due (or never made: hand-ins made while no service ran) starts
        outage = Outage(f"the schedule of the sync of {entry.title}")  # its errors: one line a minute, a wait
        while not self._stop.wait(delay):
            try:
                record = self._leases.records([row_id])[row_id]
                outage.recovered()
                now = clock.now()
                delay = max(0.0, (record.due(self._leases.ttl_s, now) - now).total_seconds())
                if delay > 0:
                    continue
                if not self._take_turn():
                    break
                try:
                    ran = self._take_run(entry, row_id)
                finally:
                    self._turn.release()
                delay = 0.0 if ran else LOOK_AGAIN_S  # not ours: another replica took it first
            except Exception as exc:  # noqa: BLE001 - the database away for a moment: never the end of the schedule
                delay = outage.failed(exc)
        self._stopped.add(entry.number)

    def _take_turn(self) -> bool:
        """Wait for the other entries' runs; False (without the turn) once the service stops."""
        while not self._turn.acquire(timeout=0.5):
            if self._stop.is_set():
                return False
        if self._stop.is_set():
            self._turn.release()
            return False
        return True

    def _take_run(self, entry: SyncEntry, row_id: int) -> bool:
        """Run the entry if this replica takes its lease (False: another holds it, or ran it
        meanwhile); the outcome, or why there is none, recorded with the next run due."""
        now = clock.now()
        next_run = now + timedelta(seconds=entry.interval_s)
        if not self._leases.take(row_id, now=now, next_run=next_run):
            return False
        try:
            outcome = self._run(entry)
        except Exception as exc:  # one run's failure never ends the schedule
            log.exception("the sync of %s failed", entry.title)
            outcome = RunOutcome(error=f"{type(exc).__name__}: {exc}")
        self._record(entry, row_id, outcome, next_run)
        return True

    def _run(self, entry: SyncEntry) -> RunOutcome:
        """One sync in a child process: its outcome, or why there is none."""
        context: Any = multiprocessing.get_context(START_METHOD)
        ours, theirs = context.Pipe(duplex=True)
        relay = None if self.pool is None else Relay(ours, self.course.week)
        # not a daemon: without the service's pool the run starts a grader process of its own
        process = context.Process(target=_child, args=(entry, self.course.root, relay is not None, self.scheduler,
                                                       theirs),
                                  name=f"autograder-sync-{entry.week}-{entry.assignment}")
        process.start()
        theirs.close()
        outcome: RunOutcome | None = None
        try:
            if relay is not None and self.pool is not None:
                self.pool.add(relay)
            handles = [ours, process.sentinel] + ([relay.waker] if relay is not None else [])
            while outcome is None and process.is_alive() and not self._stop.is_set():
                wait(handles, timeout=0.5)
                outcome = _receive(ours, relay)
            if outcome is None:  # sent just before it ended
                outcome = _receive(ours, relay)
        except (EOFError, OSError):
            pass
        finally:
            if relay is not None and self.pool is not None:
                self.pool.remove(relay)
                relay.close()
            ours.close()
            _end(process, stopping=outcome is None)
        if outcome is None:
            why = ("stopped with the service that ran it; the next run carries on" if self._stop.is_set() else
                   f"the sync process ended unexpectedly (exit code {process.exitcode}); tried again next run")
            outcome = RunOutcome(error=why)
        return outcome

    def _record(self, entry: SyncEntry, row_id: int, outcome: RunOutcome, next_run: datetime) -> None:
        """The run's outcome into the database together with when the next run is due
        (``next_run``, or now if this one took longer), so a page never sees a finished run
        without its next one."""
        now = clock.now()
        report: dict[str, Any] | None = None
        error: str | None
        if outcome.error is not None:
            log.warning("sync of %s: %s", entry.title, outcome.error)
            error = outcome.error
        else:
            interrupted = outcome.interrupted
            error = f"stopped early: {interrupted}; the next run pushes what is missing" if interrupted else None
            log.info("sync of %s: %d pulled, %d graded, %d pushed, %d kept as changed in Moodle", entry.title,
                     outcome.pulled, outcome.graded, outcome.pushed, len(outcome.kept))
            report = outcome.model_dump(include=set(REPORTED))
        if not self._leases.finish(row_id, now=now, next_run=max(next_run, now), report=report, error=error):
            log.warning("the sync of %s outlived its lease (its renewals failed) and another replica took it "
                        "over: this run's outcome is not recorded", entry.title)


REPORTED = ("pulled", "graded", "pushed", "unchanged", "kept", "left", "notes")  # what a status shows of a run


class RunOutcome(BaseModel):
    """What a run's process sends the service as it ends (JSON on the run's pipe, after the
    batch it relayed, ``grading.relay``): what the run did, or ``error``, why it did nothing.
    One that does not parse is that run's error, naming the field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error: str | None = None
    pulled: int = 0
    graded: int = 0
    pushed: int = 0
    unchanged: int = 0
    kept: dict[str, str] = Field(default_factory=dict)  # user -> why their Moodle grade was left alone
    left: dict[str, str] = Field(default_factory=dict)  # user -> why nothing was pushed for them
    notes: list[str] = Field(default_factory=list)
    interrupted: str | None = None


def _status(entry: SyncEntry, record: SyncRecord | None, *, stopped: bool, ttl_s: float,
            now: datetime) -> SyncStatus:
    """What the instructor's page shows of an entry whose row is ``record`` (None: not made yet)."""
    if record is None:
        return SyncStatus(entry=entry, state="stopped" if stopped else "waiting")
    report = record.report or {}
    running = record.live(ttl_s, now)
    error = record.error
    if record.owner is not None and not running and record.started is not None:
        error = (f"the run started {record.started:%Y-%m-%d %H:%M} UTC on {record.owner} never finished (that "
                 "replica stopped or lost the database); the next run carries on")
    return SyncStatus(
        entry=entry, state="stopped" if stopped else "running" if running else "waiting",
        started=record.started, finished=record.finished, succeeded=record.succeeded,
        next_run=None if stopped or running else record.due(ttl_s, now) if record.next_run else None,
        pulled=report.get("pulled"), graded=report.get("graded"), pushed=report.get("pushed"),
        unchanged=report.get("unchanged"), kept=dict(report.get("kept", {})), left=dict(report.get("left", {})),
        notes=tuple(report.get("notes", ())), error=error)


def _child(entry: SyncEntry, course_root: Path, relayed: bool, scheduler: str | None, conn: Connection) -> None:
    """The body of one run's process: the sync, graded in the service's pool when ``relayed``,
    and what it did as JSON (nothing pickled back)."""
    # SIGTERM (the service stopping) ends pytest and the run like Ctrl-C, cleaning up the sandbox
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    token = ""
    try:
        from autograder.batch import GradingOptions
        from autograder.moodle_ws.sync import read_token, sync
        from autograder.moodle_ws.webservice import MoodleClient

        week = Course.locate(course_root).week(entry.week)
        token = read_token(entry.token_file)  # again each run: a new token written there is used at once
        with MoodleClient(entry.url, token, token_source=str(entry.token_file)) as client:
            options = GradingOptions(out_dir=entry.out, allow_pending=entry.allow_pending, jobs=1,
                                     scheduler=scheduler, graders=RelayedGraders(conn) if relayed else None)
            report = sync(week, client, entry.assignment, options)
        outcome = RunOutcome(pulled=len(report.fetched), graded=report.graded, pushed=len(report.pushed),
                             unchanged=report.unchanged, kept=report.kept, left=report.left, notes=report.notes,
                             interrupted=report.interrupted)
    except KeyboardInterrupt:
        return
    except AutograderError as exc:
        outcome = RunOutcome(error=str(exc))
    except Exception as exc:  # shown on the instructor's page, tried again next run
        log.exception("the sync of %s failed", entry.title)
        outcome = RunOutcome(error=f"unexpected {type(exc).__name__}: {exc} (the service's log has the details)")
    text = outcome.model_dump_json()
    conn.send_bytes((text.replace(token, "[token]") if token else text).encode())
    conn.close()


def _receive(conn: Connection, relay: Relay | None) -> RunOutcome | None:
    """The run's outcome once it sent it; meanwhile what it asks the service's pool, passed on."""
    if relay is not None:
        message = relay.pump()
        return None if message is None else RunOutcome.model_validate(message)
    return RunOutcome.model_validate_json(conn.recv_bytes()) if conn.poll() else None


def _end(process: multiprocessing.process.BaseProcess, *, stopping: bool) -> None:
    """Let a finished run's process exit; one still running (``stopping``: the service is
    stopping) is asked to stop, then killed after STOP_GRACE_S."""
    process.join(timeout=0 if stopping else 5)
    if process.is_alive():
        process.terminate()
        process.join(timeout=STOP_GRACE_S)
    if process.is_alive():
        process.kill()
        process.join()
