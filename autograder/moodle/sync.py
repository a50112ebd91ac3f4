"""Grade a Moodle Assignment where it is: pull submissions, grade them, push grades back.

One run (``sync``) does, in order:
1. list the submissions handed in (status ``submitted``) new or changed since the last
   run, and download their notebooks through webservice/pluginfile.php;
2. grade every known submission exactly as ``autograder grade`` does
   (``batch.grade_submissions``: same gradebook, cache, sandbox, ``--jobs``/``--scheduler``,
   report); an unchanged submission is taken from the gradebook, not graded again, and a
   run with nothing new to grade or push leaves the outputs (report, worksheet) as they are;
3. read Moodle's grades, and push in one ``mod_assign_save_grades`` call per batch what
   changed: the grade scaled to the assignment's maximum, the per-student summary as the
   feedback comment (HTML), and the feedback page as a feedback file.

What was pushed and confirmed is kept in the gradebook (``sync_state``), so a second run
pushes nothing, and a run cut short by the network loses nothing: the next run reads the
grades back and pushes only what is missing. A grade changed in Moodle after our last
push (its ``timemodified`` is newer) is never overwritten; the report says so.
Hand-graded tasks follow the worksheet's rule: no grade while marks are pending (unless
``allow_pending``), and the comment says which part is pending.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from autograder.batch import GradingOptions, all_graded, grade_submissions, rewrite_outputs
from autograder.course import Week
from autograder.exceptions import AutograderError, MoodleServiceError
from autograder.formats.worksheet import GRADED_STATUSES, feedback_comment
from autograder.gradebook import FILENAME, Gradebook
from autograder.moodle.entries import MAX_FILE_BYTES
from autograder.moodle.export import read_export
from autograder.moodle.sync_state import SyncState, UserState
from autograder.moodle.webservice import NO_GRADE, Assignment, GradeUpdate, MoodleClient, RemoteGrade, RemoteSubmission
from autograder.report import render_feedback
from autograder.results import Participant, Status, SubmissionResult
from autograder.submission import Submission

log = logging.getLogger(__name__)

FILES_DIR = "moodle-files"  # the downloaded hand-ins, one folder per user
FEEDBACK_FILENAME = "feedback.html"
PUSH_BATCH = 50  # users per mod_assign_save_grades call
TOKEN_ENV = "MOODLE_TOKEN"
_FETCHED = (".ipynb", ".zip")  # what grading can use; other files are only named
_LOCK = ".moodle-sync.lock"
_UNAVAILABLE = ".unavailable"  # beside a file Moodle would not give: holds why


@dataclass
class Push:
    """One user's grade, comment and feedback page, as pushed (or to push)."""

    userid: int
    name: str
    grade: float  # NO_GRADE while hand-marked tasks are pending
    attempt: int
    comment: str
    page: str | None
    signature: str

    def shown(self) -> str:
        return "no grade yet (hand marking pending)" if self.grade == NO_GRADE else f"{self.grade:g}"


@dataclass
class SyncReport:
    """What a run did; ``interrupted`` says why it stopped early (the next run carries on)."""

    assignment: Assignment
    dry_run: bool
    fetched: list[str] = field(default_factory=list)  # users whose new or changed hand-in was downloaded
    graded: int = 0  # graded in this run (the rest came unchanged from the gradebook)
    pushed: list[Push] = field(default_factory=list)  # confirmed, or (dry run) would be pushed
    unchanged: int = 0
    kept: dict[str, str] = field(default_factory=dict)  # user -> why their Moodle grade was left alone
    left: dict[str, str] = field(default_factory=dict)  # user -> why nothing was pushed for them
    notes: list[str] = field(default_factory=list)  # about the assignment as a whole
    interrupted: str | None = None

    @property
    def complete(self) -> bool:
        return self.interrupted is None


def sync(
    week: Week,
    client: MoodleClient,
    assignment_id: int,
    options: GradingOptions,
    *,
    dry_run: bool = False,
) -> SyncReport:
    """One sync of ``assignment_id`` for ``week``; results and state in ``options.out_dir``,
    graded with ``options`` as ``autograder grade`` grades.

    The entry point for a scheduler too (``autograder serve``): call it every few minutes
    with a client of its own. Raises MoodleServiceError when Moodle refuses the token, a
    capability or the assignment (nothing to retry until someone fixes it); a network
    failure mid-run ends the run early with ``report.interrupted`` set instead."""
    out_dir = options.folder()
    out_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(out_dir):
        assignment = client.assignment(assignment_id)
        report = SyncReport(assignment=assignment, dry_run=dry_run)
        _check(assignment, report)
        participants = client.participants(assignment)
        with SyncState(out_dir / FILENAME, site=client.url, assignment=assignment.id, week=week.name) as state:
            try:
                _pull(client, assignment, state, out_dir / FILES_DIR, report)
            except MoodleServiceError as err:
                if not err.retryable:
                    raise
                report.interrupted = str(err)  # grade what came; the push waits for the next run
            users = state.users()
            for userid, user in users.items():
                if userid in participants and participants[userid] != user.fullname:
                    state.named(userid, participants[userid])
                    user.fullname = participants[userid]
            # one with nothing to grade is recorded when it comes; again would only start a grader
            submissions = [s for s in _submissions(week, out_dir / FILES_DIR, users)
                           if s.content is not None or s.key.removeprefix("moodle-user-") in report.fetched]
            # nothing new to grade: the outputs (report, worksheet, ~4 s for a class) stay as they are
            fresh = not all_graded(week, submissions, out_dir=out_dir)
            if fresh:
                outcome = grade_submissions(week, submissions, options)
                report.graded = sum(s.content is not None for s in submissions) - outcome.reused
            if report.interrupted is None:
                try:
                    _push(week, client, assignment, state, users, participants, out_dir, report,
                          allow_pending=options.allow_pending)
                except MoodleServiceError as err:
                    if not err.retryable:
                        raise
                    report.interrupted = str(err)
            if not fresh and report.pushed and not dry_run:  # hand marks stored since: show them there too
                rewrite_outputs(week, submissions, out_dir=out_dir, allow_pending=options.allow_pending)
    return report


def watch(run: Callable[[], SyncReport], *, every_s: float, on_report: Callable[[SyncReport], None],
          on_error: Callable[[MoodleServiceError], None], stop: Callable[[], bool] = lambda: False) -> None:
    """Run ``run`` every ``every_s`` seconds until ``stop()``; a network failure is reported
    and retried at the next tick, a refusal (token, capability) ends the watch."""
    while not stop():
        started = time.monotonic()
        try:
            on_report(run())
        except MoodleServiceError as err:
            on_error(err)
            if not err.retryable:
                raise
        time.sleep(max(0.0, every_s - (time.monotonic() - started)))


def read_token(token_file: Path | None, environ: dict[str, str] | None = None) -> str:
    """The token from ``token_file`` (which only its owner may read) or from MOODLE_TOKEN.

    Never from the command line: arguments are visible to every user in ``ps``."""
    if token_file is not None:
        try:
            info = token_file.stat()
        except OSError as err:
            raise AutograderError(f"{token_file}: cannot read the token file ({err.strerror})") from err
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise AutograderError(f"{token_file} can be read by other users (mode {stat.S_IMODE(info.st_mode):o}): "
                                  f"run `chmod 600 {token_file}` and try again")
        if info.st_uid != os.geteuid():
            raise AutograderError(f"{token_file} belongs to another user: the token file must be your own")
        token = token_file.read_text(encoding="utf-8").strip()
        if not token:
            raise AutograderError(f"{token_file} is empty: put the Moodle web-service token in it")
        return token
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip()
    if not token:
        raise AutograderError(f"no Moodle token: set {TOKEN_ENV}, or pass --token-file PATH (a file only you can "
                              "read); never put the token on the command line")
    return token


def _check(assignment: Assignment, report: SyncReport) -> None:
    """Refuse what points cannot express; note what limits the feedback."""
    if assignment.max_grade <= 0:
        kind = "a scale" if assignment.max_grade < 0 else "no grade"
        raise MoodleServiceError(f"assignment {assignment.id} ({assignment.name!r}) uses {kind}, not points: "
                                 "set Grade > Type to Point in its settings")
    if assignment.team_submission:
        raise MoodleServiceError(f"assignment {assignment.id} ({assignment.name!r}) takes team submissions, which "
                                 "the sync does not grade yet: use `autograder grade` on its export")
    if "comments" not in assignment.feedback_plugins:
        report.notes.append("feedback comments are off in this assignment: turn on Feedback types > "
                            "Feedback comments to give students the summary")
    if "file" not in assignment.feedback_plugins:
        report.notes.append("feedback files are off in this assignment: turn on Feedback types > "
                            "Feedback files to give students their feedback page")
    if assignment.marking_workflow:
        report.notes.append("marking workflow is on: students see grades only once you release them in Moodle")


def _pull(client: MoodleClient, assignment: Assignment, state: SyncState, root: Path, report: SyncReport) -> None:
    """List new or changed submissions and download their notebooks (and zips) to ``root``."""
    users = state.users()
    listed = client.submissions(assignment, since=state.since())
    for item in listed:
        known = users.get(item.userid)
        if known is None or known.modified != item.timemodified or known.attemptnumber != item.attemptnumber:
            state.listed(item.userid, attemptnumber=item.attemptnumber, modified=item.timemodified,
                         files=[f"{f.filepath.strip('/')}/{f.filename}".lstrip("/") for f in item.files])
    waiting = {u.userid: u for u in state.users().values() if u.needs_download}
    for item in listed:
        if item.userid in waiting and waiting[item.userid].modified == item.timemodified:
            _download(client, item, root)
            state.downloaded(item.userid, item.timemodified)
            report.fetched.append(str(item.userid))


def _download(client: MoodleClient, item: RemoteSubmission, root: Path) -> None:
    """Replace the user's folder with the hand-in's notebooks and zips, in one rename."""
    folder = root / _folder(item.userid)
    partial = root.parent / f"{FILES_DIR}.partial" / _folder(item.userid)  # outside what the reader reads
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for file in item.files:
        if not file.filename.lower().endswith(_FETCHED):
            continue
        relative = _safe_relative(file.filepath, file.filename)
        if relative is None:
            continue
        target = partial / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.write_bytes(client.download(file, max_bytes=MAX_FILE_BYTES))
        except MoodleServiceError as err:
            if err.retryable:
                raise
            (partial / f"{relative}{_UNAVAILABLE}").write_text(str(err), encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def _folder(userid: int) -> str:
    """Named like an export's folder, so the export reader picks the notebook the same way."""
    return f"u_{userid}_assignsubmission_file"


def _safe_relative(filepath: str, filename: str) -> PurePosixPath | None:
    parts = [p for p in f"{filepath}/{filename}".split("/") if p]
    if not parts or any(p in (".", "..") or p.startswith(".") for p in parts):
        return None
    return PurePosixPath(*parts)


def _submissions(week: Week, root: Path, users: dict[int, UserState]) -> list[Submission]:
    """One Submission per downloaded user, chosen as an export's would be, keyed by Moodle user id."""
    found: dict[int, Submission] = {}
    if root.is_dir() and any(root.iterdir()):
        for read in read_export(root, week=week.name, teams=False):
            number = read.participant.participant_id if read.participant else None
            if number is not None and number.isdigit():
                found[int(number)] = read
    made = []
    for userid, user in sorted(users.items()):
        if user.downloaded is None:
            continue
        participant = Participant(full_name=user.fullname)
        submission = found.get(userid)
        unavailable = sorted((root / _folder(userid)).rglob(f"*{_UNAVAILABLE}"))
        if unavailable and (submission is None or submission.content is None):
            submission = Submission(origin=f"moodle user {userid}", key="", content=None, status=Status.ERROR,
                                    message="; ".join(p.read_text(encoding="utf-8") for p in unavailable))
        if submission is None:
            seen = f"files seen: {', '.join(user.files)}" if user.files else "no files (online text only?)"
            submission = Submission(origin=f"moodle user {userid}", key="", content=None,
                                    status=Status.NOT_SUBMITTED, message=f"no .ipynb notebook handed in; {seen}")
        submission.key, submission.participant = f"moodle-user-{userid}", participant
        made.append(submission)
    return made


def _push(week: Week, client: MoodleClient, assignment: Assignment, state: SyncState, users: dict[int, UserState],
          participants: dict[int, str | None], out_dir: Path, report: SyncReport, *, allow_pending: bool) -> None:
    """Decide per user what to push, then push in batches, confirming each by reading back."""
    with Gradebook.open(out_dir / FILENAME) as book:
        results = {r.key: r for r in book.results(week.name)}
    remote = client.grades(assignment)
    todo: list[Push] = []
    for userid, user in sorted(users.items()):
        result = results.get(f"moodle-user-{userid}")
        name = user.fullname or f"user {userid}"
        if result is None:
            continue
        if userid not in participants:
            report.left[name] = "no longer a participant of the assignment (unenrolled or suspended): not pushed"
            continue
        if result.status not in GRADED_STATUSES:
            report.left[name] = f"status {result.status.value}: left for you in Moodle ({'; '.join(result.messages)})"
            continue
        push = _prepare(week, assignment, userid, name, user, result, allow_pending=allow_pending)
        held = _held_by_hand(user, remote.get(userid), state)
        if held:
            report.kept[name] = held
        elif push.signature == user.pushed:
            report.unchanged += 1
        else:
            todo.append(push)
    if report.dry_run:
        report.pushed = todo
        return
    for start in range(0, len(todo), PUSH_BATCH):
        _send(client, assignment, state, todo[start:start + PUSH_BATCH], report)


def _prepare(week: Week, assignment: Assignment, userid: int, name: str, user: UserState,
             result: SubmissionResult, *, allow_pending: bool) -> Push:
    """The grade scaled to Moodle's maximum, the comment, the page, and their signature."""
    pending = [t for t in result.tasks if t.pending]
    grade = NO_GRADE
    if not pending or allow_pending:
        scaled = result.score * assignment.max_grade / result.max_score if result.max_score > 0 else 0.0
        grade = round(min(max(scaled, 0.0), assignment.max_grade), 5)  # above the maximum, Moodle drops it silently
    comment = feedback_comment(result)
    if pending:
        tasks = ", ".join(str(t.task) for t in pending)
        comment += (f"<p>Task {tasks} ({result.pending_points:g} points) is marked by hand and not marked yet: "
                    + ("this grade is provisional.</p>" if allow_pending else "the grade follows once it is.</p>"))
    page = (render_feedback(result, week_title=f"{week.name}: {week.title}", week=week)
            if "file" in assignment.feedback_plugins else None)
    body = json.dumps([grade, user.attemptnumber, comment if "comments" in assignment.feedback_plugins else None,
                       page], ensure_ascii=False)
    return Push(userid=userid, name=name, grade=grade, attempt=user.attemptnumber, comment=comment, page=page,
                signature=hashlib.sha256(body.encode()).hexdigest())


def _held_by_hand(user: UserState, grade: RemoteGrade | None, state: SyncState) -> str | None:
    """Why Moodle's grade must be left alone, or None when the sync may write it.

    Ours: no grade yet, a grade of an older attempt, the grade as our last confirmed push
    left it, or an unanswered push of ours that did land (same grade: adopted here)."""
    if grade is None or grade.attemptnumber != user.attemptnumber:
        return None
    if user.pushed_attempt == grade.attemptnumber and user.pushed_modified is not None \
            and grade.timemodified <= user.pushed_modified:
        return None
    if user.inflight is not None and _same(grade.grade, user.inflight_grade):
        state.confirmed(user.userid, user.inflight, attempt=grade.attemptnumber, moodle_modified=grade.timemodified)
        user.pushed, user.pushed_modified, user.pushed_attempt = user.inflight, grade.timemodified, grade.attemptnumber
        return None
    if grade.grade is None and user.pushed_modified is None:
        return None  # an empty grade record (Moodle makes one when the grader page opens)
    when = datetime.fromtimestamp(grade.timemodified, UTC).strftime("%Y-%m-%d %H:%M UTC")
    shown = "removed" if grade.grade is None else f"{grade.grade:g}"
    since = "after our last push" if user.pushed_modified is not None else "before the sync ever pushed"
    return (f"grade {shown} set in Moodle by user {grade.grader} at {when}, {since}: not overwritten "
            "(change it in Moodle if needed)")


def _same(moodle: float | None, ours: float | None) -> bool:
    if ours is None or ours == NO_GRADE:
        return moodle is None
    return moodle is not None and abs(moodle - ours) < 1e-4


def _send(client: MoodleClient, assignment: Assignment, state: SyncState, batch: list[Push],
          report: SyncReport) -> None:
    """Upload the pages, mark the batch in flight, save, then read back to confirm."""
    updates = []
    for push in batch:
        draft = client.upload_draft(FEEDBACK_FILENAME, push.page.encode("utf-8")) if push.page is not None else None
        comment = push.comment if "comments" in assignment.feedback_plugins else None
        updates.append(GradeUpdate(userid=push.userid, grade=push.grade, attemptnumber=push.attempt,
                                   comment_html=comment, draft_itemid=draft))
    for push in batch:
        state.sending(push.userid, push.signature, push.grade)
    client.save_grades(assignment, updates)
    stored = client.grades(assignment)
    for push in batch:
        grade = stored.get(push.userid)
        if grade is None or not _same(grade.grade, push.grade):
            report.left[push.name] = (f"Moodle did not store the grade {push.shown()} (it holds "
                                      f"{'nothing' if grade is None or grade.grade is None else f'{grade.grade:g}'}); "
                                      "check the assignment's maximum grade and that grading is not locked")
            continue
        state.confirmed(push.userid, push.signature, attempt=grade.attemptnumber, moodle_modified=grade.timemodified)
        report.pushed.append(push)


@contextmanager
def _exclusive(out_dir: Path) -> Iterator[None]:
    """One sync per results folder at a time (a cron run may overlap a slow one)."""
    with open(out_dir / _LOCK, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AutograderError(f"another `autograder moodle sync` is running on {out_dir}: "
                                  "wait for it to finish") from None
        yield
