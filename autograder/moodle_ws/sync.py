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
push (its ``timemodified`` is newer, or its grader or value differ from what our push
left) is never overwritten; the report says so and names who changed it. The marking
workflow state the teacher set is sent back as it is (Moodle stores whatever is sent,
'' included), so a push never takes a released grade away from a student.
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from autograder.batch import GradingOptions, all_graded, grade_submissions, rewrite_outputs
from autograder.course import Week
from autograder.exceptions import AutograderError, MoodleServiceError
from autograder.formats.atomic import write_bytes, write_text
from autograder.formats.points import format_points
from autograder.formats.worksheet import GRADED_STATUSES
from autograder.gradebook import FILENAME, Gradebook
from autograder.moodle.entries import MAX_FILE_BYTES
from autograder.moodle.export import read_export
from autograder.moodle_ws.replies import BadEntry
from autograder.moodle_ws.sync_state import SyncState, UserState
from autograder.moodle_ws.webservice import (
    NO_GRADE,
    USER_NAMES,
    Assignment,
    GradeUpdate,
    MoodleClient,
    RemoteGrade,
    RemoteSubmission,
)
from autograder.publish import Edition, Publisher, Score, Scores
from autograder.results import Participant, Status
from autograder.submission import Submission

log = logging.getLogger(__name__)

FILES_DIR = "moodle-files"  # the downloaded hand-ins, one folder per user
FEEDBACK_FILENAME = "feedback.html"
PUSH_BATCH = 50  # users per mod_assign_save_grades call
TOKEN_ENV = "MOODLE_TOKEN"
_FETCHED = (".ipynb", ".zip")  # what grading can use; other files are only named
_LOCK = ".moodle-sync.lock"
_UNAVAILABLE = ".unavailable"  # beside a file Moodle would not give: holds why
_ORIGINAL_NAMES = ".original-names.json"  # in a user's folder: stored path -> the name the student gave
MAX_NAME_BYTES = 150  # a stored path part at most (file systems allow 255; Moodle's 100 characters may be 400)


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
    workflowstate: str = ""  # the marking workflow state to send: the one Moodle holds now

    def shown(self) -> str:
        return "no grade yet (hand marking pending)" if self.grade == NO_GRADE else format_points(self.grade)


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
        participants, unreadable = client.participants(assignment)
        report.notes += [f"{entry.message} (that participant is not pushed to)" for entry in unreadable]
        with SyncState(out_dir / FILENAME, site=client.url, assignment=assignment.id, week=week.name) as state:
            try:
                _pull(client, assignment, state, out_dir / FILES_DIR, report, participants)
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


def _pull(client: MoodleClient, assignment: Assignment, state: SyncState, root: Path, report: SyncReport,
          participants: dict[int, str | None]) -> None:
    """List new or changed submissions and download their notebooks (and zips) to ``root``;
    an entry Moodle's reply holds that cannot be read is set aside, the others go on."""
    users = state.users()
    listed, unreadable = client.submissions(assignment, since=state.since())
    for entry in unreadable:
        _set_aside(entry, report, users, participants)
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


def _set_aside(entry: BadEntry, report: SyncReport, users: dict[int, UserState],
               participants: dict[int, str | None]) -> None:
    """Say whose hand-in could not be read, or, when even that is unreadable, say so as a note."""
    if entry.userid is None:
        report.notes.append(entry.message)
        return
    known = users.get(entry.userid)
    name = participants.get(entry.userid) or (known.fullname if known else None) or f"user {entry.userid}"
    report.left[name] = f"{entry.message}; their hand-in is graded once Moodle lists it readably"


def _download(client: MoodleClient, item: RemoteSubmission, root: Path) -> None:
    """Replace the user's folder with the hand-in's notebooks and zips, in one rename.

    Each file is stored under a bounded, printable name (``_stored``): Moodle allows 100
    characters, which in emoji are 400 bytes, more than a file system's 255. The names the
    student gave are kept beside them for display."""
    folder = root / _folder(item.userid)
    partial = root.parent / f"{FILES_DIR}.partial" / _folder(item.userid)  # outside what the reader reads
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    originals: dict[str, str] = {}
    for file in item.files:
        if not file.filename.lower().endswith(_FETCHED):
            continue
        given = _safe_relative(file.filepath, file.filename)
        if given is None:
            continue
        relative = PurePosixPath(*(_stored(part) for part in given.parts))
        if relative != given:
            originals[str(relative)] = str(given)
        target = partial / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            write_bytes(target, client.download(file, max_bytes=MAX_FILE_BYTES))
        except MoodleServiceError as err:
            if err.retryable:
                raise
            write_text(partial / f"{relative}{_UNAVAILABLE}", str(err))
    if originals:
        write_text(partial / _ORIGINAL_NAMES, json.dumps(originals, ensure_ascii=False))
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


def _stored(part: str) -> str:
    """A path part as stored: itself when short and printable, else its printable start cut
    at ``MAX_NAME_BYTES`` (on a character boundary), a hash of the whole, and its extension."""
    if len(part.encode("utf-8")) <= MAX_NAME_BYTES and part.isprintable():
        return part
    suffix = PurePosixPath(part).suffix
    if not (suffix.isprintable() and len(suffix) <= 8):
        suffix = ""
    stem = "".join(c for c in part[: len(part) - len(suffix)] if c.isprintable())
    kept = stem.encode("utf-8")[: MAX_NAME_BYTES - 32].decode("utf-8", errors="ignore")
    return f"{kept}~{hashlib.sha256(part.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}{suffix}"


def _shown_as_given(submission: Submission, folder: Path) -> None:
    """Show the name the student gave rather than the bounded one it was stored under."""
    names = folder / _ORIGINAL_NAMES
    if not names.is_file():
        return
    for stored, given in json.loads(names.read_text(encoding="utf-8")).items():
        if submission.origin.endswith(f"/{stored}"):
            submission.origin = submission.origin[: -len(stored)] + given


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
        if submission is not None:
            _shown_as_given(submission, root / _folder(userid))
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
    """Publish the gradebook's scores (``publish.Scores``) into a ``_MoodlePush``."""
    with Gradebook.open(out_dir / FILENAME) as book:
        edition = Edition.read(book, week, out_dir)
    sink = _MoodlePush(client, assignment, state, users, participants, report)
    Publisher([Scores(sink, allow_pending=allow_pending)]).publish(edition)


class _MoodlePush:
    """How scores reach Moodle (``publish.ScoreSink``): per user, what to push, then pushed in
    batches, each confirmed by reading the grades back."""

    def __init__(self, client: MoodleClient, assignment: Assignment, state: SyncState, users: dict[int, UserState],
                 participants: dict[int, str | None], report: SyncReport) -> None:
        self.client, self.assignment, self.state, self.report = client, assignment, state, report
        self.users, self.participants = users, participants

    def send(self, scores: Sequence[Score]) -> None:
        client, assignment, state, users, report = self.client, self.assignment, self.state, self.users, self.report
        by_key = {score.result.key: score for score in scores}
        remote, unreadable = client.grades(assignment)
        todo: list[Push] = []
        held: dict[str, RemoteGrade] = {}
        for userid, user in sorted(users.items()):
            score = by_key.get(f"moodle-user-{userid}")
            name = user.fullname or f"user {userid}"
            if score is None:
                continue
            result = score.result
            if userid not in self.participants:
                report.left[name] = "no longer a participant of the assignment (unenrolled or suspended): not pushed"
                continue
            if result.status not in GRADED_STATUSES:
                report.left[name] = (f"status {result.status.value}: left for you in Moodle "
                                     f"({'; '.join(result.messages)})")
                continue
            if userid in unreadable:
                report.left[name] = f"{unreadable[userid]}; their grade in Moodle is unknown, so it was left alone"
                continue
            push = _prepare(assignment, userid, name, user, score)
            if _held_by_hand(user, remote.get(userid), state):
                held[name] = remote[userid]
            elif push.signature == user.pushed:
                report.unchanged += 1
            else:
                todo.append(push)
        _say_kept(client, held, users, report)
        if report.dry_run:
            report.pushed = todo
            return
        if todo and assignment.marking_workflow:
            todo = _keep_workflow_states(client, assignment, todo, report)
        for start in range(0, len(todo), PUSH_BATCH):
            _send(client, assignment, state, todo[start:start + PUSH_BATCH], report)


def _prepare(assignment: Assignment, userid: int, name: str, user: UserState, score: Score) -> Push:
    """The grade scaled to Moodle's maximum, the comment, the page, and their signature."""
    result = score.result
    grade = NO_GRADE
    if score.graded:
        scaled = result.score * assignment.max_grade / result.max_score if result.max_score > 0 else 0.0
        grade = round(min(max(scaled, 0.0), assignment.max_grade), 5)  # above the maximum, Moodle drops it silently
    page = score.page() if "file" in assignment.feedback_plugins else None
    body = json.dumps([grade, user.attemptnumber,
                       score.comment if "comments" in assignment.feedback_plugins else None, page],
                      ensure_ascii=False)
    return Push(userid=userid, name=name, grade=grade, attempt=user.attemptnumber, comment=score.comment, page=page,
                signature=hashlib.sha256(body.encode()).hexdigest())


def _held_by_hand(user: UserState, grade: RemoteGrade | None, state: SyncState) -> bool:
    """Whether Moodle's grade must be left alone (False: the sync may write it).

    Ours: no grade yet, a grade of an older attempt, the grade as our last confirmed push
    left it (no later time, and the same grader and value: a teacher saving in the same
    second as our push shows as another grader or another value), or an unanswered push
    of ours that did land (same grade: adopted here)."""
    if grade is None or grade.attemptnumber != user.attemptnumber:
        return False
    if user.pushed_attempt == grade.attemptnumber and user.pushed_modified is not None \
            and grade.timemodified <= user.pushed_modified and _as_we_left_it(user, grade):
        return False
    if user.inflight is not None and _same(grade.grade, user.inflight_grade):
        state.confirmed(user.userid, user.inflight, attempt=grade.attemptnumber, moodle_modified=grade.timemodified,
                        grader=grade.grader, grade=grade.grade)
        user.pushed, user.pushed_modified, user.pushed_attempt = user.inflight, grade.timemodified, grade.attemptnumber
        user.pushed_grader, user.pushed_grade = grade.grader, grade.grade
        return False
    # an empty grade record (Moodle makes one when the grader page opens)
    return not (grade.grade is None and user.pushed_modified is None)


def _as_we_left_it(user: UserState, grade: RemoteGrade) -> bool:
    """Same grader and value as right after our push (a record from before these were kept: time alone)."""
    if user.pushed_grader is None:
        return True
    return grade.grader == user.pushed_grader and _same(grade.grade, user.pushed_grade)


def _say_kept(client: MoodleClient, held: dict[str, RemoteGrade], users: dict[int, UserState],
              report: SyncReport) -> None:
    """Why each grade was left alone, naming the teacher who changed it (when Moodle lets us see names)."""
    names = client.user_names([g.grader for g in held.values() if g.grader]) if held else {}
    for name, grade in held.items():
        user = users[grade.userid]
        if grade.grader in names:
            who = f"{names[grade.grader]} (user {grade.grader})"
        elif grade.grader:
            who = f"user {grade.grader} (add {USER_NAMES} to the token's service to see teachers' names here)"
        else:
            who = "someone"
        when = datetime.fromtimestamp(grade.timemodified, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        shown = "removed" if grade.grade is None else format_points(grade.grade)
        since = "after our last push" if user.pushed_modified is not None else "before the sync ever pushed"
        report.kept[name] = (f"grade {shown} set in Moodle by {who} at {when}, {since}: not overwritten "
                             "(change it in Moodle if needed)")


def _keep_workflow_states(client: MoodleClient, assignment: Assignment, todo: list[Push],
                          report: SyncReport) -> list[Push]:
    """Give each push the marking workflow state Moodle holds for that student now.

    mod_assign_save_grades requires a state and stores whatever is sent ('' included,
    assign::apply_grade_to_user), and students see a grade only once it is "released": a
    push must hand back the state the teacher set. mod_assign_get_submissions gives it as
    ``gradingstatus``. A student whose state cannot be read is not pushed."""
    listed, _ = client.submissions(assignment, status="")
    states = {item.userid: item.gradingstatus for item in listed}
    kept = []
    for push in todo:
        if push.userid not in states:
            report.left[push.name] = ("Moodle did not say their marking workflow state: not pushed, so as not to "
                                      "change it")
            continue
        push.workflowstate = states[push.userid]
        kept.append(push)
    return kept


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
                                   comment_html=comment, draft_itemid=draft, workflowstate=push.workflowstate))
    for push in batch:
        state.sending(push.userid, push.signature, push.grade)
    client.save_grades(assignment, updates)
    stored, unreadable = client.grades(assignment)
    for push in batch:
        if push.userid in unreadable:
            report.left[push.name] = f"{unreadable[push.userid]}; whether the push landed is checked next run"
            continue
        grade = stored.get(push.userid)
        if grade is None or not _same(grade.grade, push.grade):
            held = "nothing" if grade is None or grade.grade is None else format_points(grade.grade)
            report.left[push.name] = (f"Moodle did not store the grade {push.shown()} (it holds {held}); "
                                      "check the assignment's maximum grade and that grading is not locked")
            continue
        state.confirmed(push.userid, push.signature, attempt=grade.attemptnumber, moodle_modified=grade.timemodified,
                        grader=grade.grader, grade=grade.grade)
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
