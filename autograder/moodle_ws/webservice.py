"""A small client for Moodle's REST web services: the calls ``autograder moodle sync`` needs.

Every fact used here was read from Moodle's source (docs/LMS.md names the files):
calls go to ``webservice/rest/server.php`` as form fields with PHP's array syntax
(``assignmentids[0]=3``); a refusal comes back as HTTP 200 with a JSON exception object
whose ``errorcode`` says what went wrong; files download through
``webservice/pluginfile.php`` with ``?token=`` and upload to the token user's draft area
through ``webservice/upload.php``. Each refusal becomes a ``MoodleServiceError`` whose
message names what to fix (the token, the capability and the course, the assignment id),
so an instructor running a cron job can act on it without reading Moodle's logs. Every
reply is checked for its shape first (``replies``): a malformed one is refused naming the
function and the field, and one bad per-student entry is set aside, not the whole class.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

from autograder.exceptions import MoodleServiceError
from autograder.moodle_ws.replies import (
    AssignmentEntry,
    AssignmentsReply,
    BadEntry,
    GradeEntry,
    GradesReply,
    ParticipantEntry,
    SubmissionEntry,
    SubmissionsReply,
    UploadedEntry,
    UserEntry,
    WarningEntry,
    parse,
    parse_each,
)

TIMEOUT_S = 60.0  # one call; save_grades for a large batch is the slowest
MANAGE_TOKENS = "Site administration > Server > Web services > Manage tokens"
# webservice/lib.php webservice_base_server::authenticate_by_token: a token past its
# ``validuntil`` is deleted, then refused with this webservice_access_exception debuginfo
# (shown only when the site has debugging on); every later call finds no token at all.
EXPIRED_DEBUGINFO = "Invalid token - token expired"
# What each function checks (mod/assign/externallib.php), for "lacks <capability>" messages.
_CAPABILITIES = {
    "mod_assign_get_assignments": "mod/assign:view",
    "mod_assign_get_submissions": "mod/assign:viewgrades (or mod/assign:grade)",
    "mod_assign_get_grades": "mod/assign:viewgrades (or mod/assign:grade)",
    "mod_assign_list_participants": "mod/assign:view and mod/assign:viewgrades (or mod/assign:grade)",
    "mod_assign_save_grades": "mod/assign:grade",
}
USER_NAMES = "core_user_get_users_by_field"  # optional: names the teachers who changed a grade by hand
COMMENTS_FORMAT_HTML = 1  # assignfeedbackcomments_editor[format]: 0 Moodle, 1 HTML, 2 plain, 4 Markdown
NO_GRADE = -1.0  # mod_assign_save_grade(s): -1 stores "no grade"


@dataclass(frozen=True)
class Assignment:
    """An Assignment activity as mod_assign_get_assignments describes it."""

    id: int
    cmid: int
    course_id: int
    name: str
    max_grade: float  # Moodle's ``grade``: > 0 points, < 0 a scale's id, 0 no grade
    team_submission: bool
    marking_workflow: bool
    feedback_plugins: frozenset[str]  # enabled here: "comments", "file", ...


@dataclass(frozen=True)
class RemoteFile:
    """One file of a submission's ``submission_files`` area."""

    filename: str
    filepath: str
    filesize: int
    fileurl: str


@dataclass(frozen=True)
class RemoteSubmission:
    """A participant's latest attempt, as mod_assign_get_submissions lists it."""

    id: int
    userid: int
    attemptnumber: int
    timemodified: int
    status: str
    files: tuple[RemoteFile, ...]
    gradingstatus: str = ""  # the marking workflow state (assign::get_grading_status) when it is on


@dataclass(frozen=True)
class RemoteGrade:
    """A participant's grade on the latest attempt (mod_assign_get_grades)."""

    userid: int
    attemptnumber: int
    timemodified: int
    grader: int  # who saved it last (assign::apply_grade_to_user sets the caller); 0 unknown
    grade: float | None  # None: no grade (Moodle stores -1, or nothing)


@dataclass(frozen=True)
class GradeUpdate:
    """One entry of mod_assign_save_grades' ``grades`` list."""

    userid: int
    grade: float  # NO_GRADE for none
    attemptnumber: int
    comment_html: str | None = None  # None: the comment is not sent
    draft_itemid: int | None = None  # a draft area holding the feedback files; replaces the old ones
    workflowstate: str = ""  # stored as sent, '' included (assign::apply_grade_to_user): send the current one


def flatten(params: Mapping[str, Any]) -> dict[str, str]:
    """Form fields in PHP's array syntax, as Moodle's REST server reads them
    (webservice/rest/locallib.php parse_request): lists become ``name[0]``, dicts
    ``name[key]``, booleans ``1``/``0`` (BOOL accepts nothing else); None is left out."""
    fields: dict[str, str] = {}

    def add(name: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                add(f"{name}[{key}]", item)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                add(f"{name}[{index}]", item)
        elif isinstance(value, bool):
            fields[name] = "1" if value else "0"
        else:
            fields[name] = str(value)

    for key, value in params.items():
        add(key, value)
    return fields


class MoodleClient:
    """Calls to one Moodle site with one token; use as a context manager.

    ``token_source`` says where the token came from (a file, MOODLE_TOKEN), so a refusal
    can say where to write a new one; ``transport`` is httpx's, for tests that need one;
    the default is the network.
    """

    def __init__(self, url: str, token: str, *, token_source: str = "MOODLE_TOKEN or the token file",
                 timeout: float = TIMEOUT_S, transport: httpx.BaseTransport | None = None) -> None:
        self.url = check_site_url(url)
        self.token_source = token_source
        if not token.strip():
            raise MoodleServiceError(f"the Moodle token is empty: create one in {MANAGE_TOKENS} and write it to "
                                     f"{token_source}")
        self._token = token.strip()
        self._http = httpx.Client(timeout=timeout, transport=transport, follow_redirects=False)
        self._where: dict[str, str] = {}  # function -> "in course N", for messages

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- the REST call --------------------------------------------------------------

    def call(self, function: str, params: Mapping[str, Any] | None = None, *, where: str = "") -> Any:
        """The decoded reply of ``function``; a refusal raises MoodleServiceError naming the fix."""
        fields = {"wstoken": self._token, "wsfunction": function, "moodlewsrestformat": "json",
                  **flatten(params or {})}
        data = self._send(function, fields)
        if _refused(data) and data["errorcode"] == "accessexception" and not _says_expired(data):
            # Without debugging an expired token looks like a function the token may not call.
            # authenticate_by_token deletes an expired token as it refuses it, so the same
            # token is unknown on the next call; access is checked before the function runs,
            # so asking again is safe, even for mod_assign_save_grades.
            again = self._send(function, fields)
            if _refused(again) and again["errorcode"] == "invalidtoken":
                raise self._expired()
            data = again
        if _refused(data):
            raise self._refusal(function, data, where)
        return data

    def _send(self, function: str, fields: Mapping[str, str]) -> Any:
        try:
            reply = self._http.post(f"{self.url}/webservice/rest/server.php", data=fields)
        except httpx.HTTPError as err:
            raise MoodleServiceError.unreachable(self.url, _describe(err)) from err
        if reply.status_code == 403 and not reply.content.strip():
            raise MoodleServiceError(f"Moodle at {self.url} has the REST protocol turned off: enable it in Site "
                                     "administration > Server > Web services > Manage protocols")
        if reply.status_code >= 500:
            raise MoodleServiceError.unreachable(self.url, f"HTTP {reply.status_code} from {function}")
        return _json(reply, self.url, function)

    def _expired(self) -> MoodleServiceError:
        """Moodle never says when a token expires, only that it has: say when it was refused."""
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return MoodleServiceError(
            f"the Moodle token expired: Moodle at {self.url} refused it as expired on {now} and deleted it; create "
            f"a new one in {MANAGE_TOKENS} (leave 'Valid until' off, or set it after the course ends) and write it "
            f"to {self.token_source}", errorcode="invalidtoken")

    def _refusal(self, function: str, data: Mapping[str, Any], where: str) -> MoodleServiceError:
        """The exception object (webservice/rest/locallib.php generate_error) as a message
        saying what to fix. Matched on ``errorcode``: the class name differs between 4.1
        and 4.5."""
        code, said = str(data.get("errorcode")), str(data.get("message", "")).strip()
        debug = f"; {data['debuginfo']}" if data.get("debuginfo") else ""
        place = f" {where}" if where else ""
        if code == "invalidtoken":
            message = (f"Moodle at {self.url} does not know this token ({said}): it is mistyped, was deleted, or "
                       f"expired (Moodle deletes a token once it has expired); create a new one in {MANAGE_TOKENS} "
                       f"and write it to {self.token_source}")
        elif code == "accessexception" and _says_expired(data):
            return self._expired()
        elif code == "accessexception":
            message = (f"Moodle at {self.url} does not let this token call {function} ({said}{debug}): add {function} "
                       "to the token's external service (Site administration > Server > Web services > External "
                       "services > Functions) and give the token's user webservice/rest:use")
        elif code in ("nopermissions", "nopermission", "requireloginerror"):
            needed = _CAPABILITIES.get(function, "the capability the function checks")
            message = (f"the token's user lacks {needed}{place} ({function}: {said}): give their role that "
                       "capability in the course, or use a token of one of the course's teachers")
        elif code == "invalidrecord":
            message = (f"Moodle found no such record for {function}{place} ({said}{debug}): check --assignment "
                       "(the assignment's id, which is not the number in the activity page's address)")
        elif code == "invalidparameter":
            message = (f"Moodle refused the parameters of {function} ({said}{debug}): this Moodle expects "
                       "something the autograder does not send; report it with Moodle's version")
        else:
            message = f"Moodle refused {function}{place}: {code}: {said}{debug}"
        return MoodleServiceError(message, errorcode=code)

    # --- the functions the sync uses -------------------------------------------------

    def assignment(self, assignment_id: int) -> Assignment:
        """The assignment with this id among the token user's courses, or an error saying
        whether the id is a course module id instead (the number in the page address)."""
        function = "mod_assign_get_assignments"
        reply = parse(AssignmentsReply, self.call(function), function=function, url=self.url)
        found: list[tuple[int, AssignmentEntry]] = []
        unreadable = []
        for number, course in enumerate(reply.courses):
            items, bad = parse_each(AssignmentEntry, course.assignments, function=function,
                                    where=f"courses[{number}].assignments")
            found += [(course.id, item) for item in items]
            unreadable += [b.message for b in bad]
        for course_id, item in found:
            if item.id == assignment_id:
                enabled = frozenset(c.plugin for c in item.configs
                                    if c.subtype == "assignfeedback" and c.name == "enabled" and str(c.value) == "1")
                return Assignment(
                    id=assignment_id, cmid=item.cmid, course_id=item.course or course_id, name=item.name,
                    max_grade=item.grade, team_submission=bool(item.teamsubmission),
                    marking_workflow=bool(item.markingworkflow), feedback_plugins=enabled)
        by_cmid = [a for _, a in found if a.cmid == assignment_id]
        if by_cmid:
            raise MoodleServiceError(
                f"{assignment_id} is the course module id of {by_cmid[0].name!r} (the number in its page "
                f"address); its assignment id is {by_cmid[0].id}: pass --assignment {by_cmid[0].id}")
        hidden = [w.message for w in reply.warnings] + unreadable
        raise MoodleServiceError(
            f"assignment {assignment_id} not found on {self.url} among the courses the token's user is enrolled in "
            f"({len(found)} assignment(s) seen){': ' + '; '.join(hidden) if hidden else ''}: check --assignment, "
            "and that the token belongs to a teacher of the course")

    def participants(self, assignment: Assignment) -> tuple[dict[int, str | None], list[BadEntry]]:
        """Users who may hand in now (enrolled and active) -> full name (None under blind marking);
        rows that cannot be read are set aside (those users count as not participating)."""
        function = "mod_assign_list_participants"
        rows = parse(list[Any], self.call(function, {"assignid": assignment.id, "groupid": 0, "filter": ""},
                                          where=_course(assignment)), function=function, url=self.url)
        good, bad = parse_each(ParticipantEntry, rows, function=function, where="")
        return {row.id: row.fullname or None for row in good}, bad

    def submissions(self, assignment: Assignment, *, since: int = 0,
                    status: str = "submitted") -> tuple[list[RemoteSubmission], list[BadEntry]]:
        """Latest attempts with ``status`` ('' for any) modified at or after ``since``, and the
        entries that could not be read (set aside, with whose they are when that is readable)."""
        function = "mod_assign_get_submissions"
        reply = parse(SubmissionsReply, self.call(function, {"assignmentids": [assignment.id], "status": status,
                                                             "since": since}, where=_course(assignment)),
                      function=function, url=self.url)
        self._raise_no_access(reply.warnings, function, assignment)
        found: list[RemoteSubmission] = []
        unreadable: list[BadEntry] = []
        for number, block in enumerate(reply.assignments):
            if block.assignmentid != assignment.id:
                continue
            items, bad = parse_each(SubmissionEntry, block.submissions, function=function,
                                    where=f"assignments[{number}].submissions")
            unreadable += bad
            found += [RemoteSubmission(
                id=item.id, userid=item.userid, attemptnumber=item.attemptnumber, timemodified=item.timemodified,
                status=item.status, gradingstatus=item.gradingstatus, files=tuple(_files(item)))
                for item in items]
        return found, unreadable

    def grades(self, assignment: Assignment) -> tuple[dict[int, RemoteGrade], dict[int, str]]:
        """Each user's grade on their latest attempt, by user id; and the users whose entry could
        not be read, with why (their grade must be left alone: it is unknown). An entry whose
        user cannot be told refuses the reply: it could be anyone's grade."""
        function = "mod_assign_get_grades"
        reply = parse(GradesReply, self.call(function, {"assignmentids": [assignment.id]}, where=_course(assignment)),
                      function=function, url=self.url)
        self._raise_no_access(reply.warnings, function, assignment)
        found: dict[int, RemoteGrade] = {}
        unreadable: dict[int, str] = {}
        for number, block in enumerate(reply.assignments):
            if block.assignmentid != assignment.id:
                continue
            items, bad = parse_each(GradeEntry, block.grades, function=function, where=f"assignments[{number}].grades")
            for entry in bad:
                if entry.userid is None:
                    raise MoodleServiceError(f"{entry.message}: it names no readable user, so any student's grade "
                                             "could be the one changed by hand; nothing was pushed")
                unreadable[entry.userid] = entry.message
            for item in items:
                found[item.userid] = RemoteGrade(
                    userid=item.userid, attemptnumber=item.attemptnumber, timemodified=item.timemodified,
                    grader=item.grader or 0, grade=item.grade if item.grade is not None and item.grade >= 0 else None)
        return found, unreadable

    def user_names(self, userids: Sequence[int]) -> dict[int, str]:
        """Full names of these users, those the token's user may see (core_user_get_users_by_field
        returns only those: user_get_user_details_courses). Empty when the function is not in the
        token's service: names are a courtesy, never a reason to stop."""
        if not userids:
            return {}
        try:
            data = self.call(USER_NAMES, {"field": "id", "values": sorted(set(userids))})
        except MoodleServiceError as err:
            if err.errorcode == "accessexception":
                return {}
            raise
        rows = parse(list[Any], data, function=USER_NAMES, url=self.url)
        good, _ = parse_each(UserEntry, rows, function=USER_NAMES, where="")
        return {row.id: row.fullname for row in good}

    def save_grades(self, assignment: Assignment, updates: Sequence[GradeUpdate]) -> None:
        """One mod_assign_save_grades call for all ``updates``.

        The call replies null whatever happened to each grade: a grade above the maximum is
        silently dropped (assign::save_grade), so read the grades back to confirm."""
        grades = []
        for update in updates:
            plugindata: dict[str, Any] = {}
            if update.comment_html is not None:
                plugindata["assignfeedbackcomments_editor"] = {"text": update.comment_html,
                                                               "format": COMMENTS_FORMAT_HTML}
            if update.draft_itemid is not None:
                plugindata["files_filemanager"] = update.draft_itemid
            grade = {"userid": update.userid, "grade": update.grade, "attemptnumber": update.attemptnumber,
                     "addattempt": False, "workflowstate": update.workflowstate}
            grades.append({**grade, "plugindata": plugindata} if plugindata else grade)
        self.call("mod_assign_save_grades", {"assignmentid": assignment.id, "applytoall": False, "grades": grades},
                  where=_course(assignment))

    def download(self, file: RemoteFile, *, max_bytes: int) -> bytes:
        """A submission file through webservice/pluginfile.php, with the token as ``?token=``."""
        if urlsplit(file.fileurl).netloc != urlsplit(self.url).netloc:
            raise MoodleServiceError(f"{file.filename}: its address {file.fileurl} is not on {self.url}; not fetched")
        try:
            with self._http.stream("GET", file.fileurl, params={"token": self._token}) as reply:
                if reply.status_code == 404:
                    raise MoodleServiceError(f"{file.filename}: Moodle says the file is gone or not readable by the "
                                             "token's user (404); ask the student to hand it in again")
                if reply.status_code >= 500:
                    raise MoodleServiceError.unreachable(self.url, f"HTTP {reply.status_code} for {file.filename}")
                if reply.status_code != 200:
                    raise MoodleServiceError(f"{file.filename}: download refused (HTTP {reply.status_code})")
                content = b"".join(_capped(reply.iter_bytes(), max_bytes, file.filename))
        except httpx.HTTPError as err:
            raise MoodleServiceError.unreachable(self.url, _describe(err)) from err
        return content

    def upload_draft(self, filename: str, content: bytes, *, mimetype: str = "text/html") -> int:
        """Put one file in a new draft area of the token's user; its itemid is what
        ``files_filemanager`` takes (webservice/upload.php)."""
        try:
            reply = self._http.post(f"{self.url}/webservice/upload.php",
                                    data={"token": self._token, "filepath": "/", "itemid": "0"},
                                    files={"file_1": (filename, content, mimetype)})
        except httpx.HTTPError as err:
            raise MoodleServiceError.unreachable(self.url, _describe(err)) from err
        if reply.status_code >= 500:
            raise MoodleServiceError.unreachable(self.url, f"HTTP {reply.status_code} uploading {filename}")
        data = _json(reply, self.url, "webservice/upload.php")
        if isinstance(data, dict) and "errorcode" in data:
            raise self._refusal("webservice/upload.php", data, "")
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            raise MoodleServiceError(f"webservice/upload.php on {self.url} answered {str(data)[:200]!r}, not a file "
                                     "list: allow 'Upload files' in the token's external service")
        stored = parse(UploadedEntry, data[0], function="webservice/upload.php", url=self.url, where="[0]")
        if stored.errortype or stored.itemid is None:
            raise MoodleServiceError(f"Moodle refused the feedback file {filename}: {stored.error or stored.errortype}")
        return stored.itemid

    def _raise_no_access(self, warnings: Sequence[WarningEntry], function: str, assignment: Assignment) -> None:
        """Warning 1 ("No access rights in module context") is how these functions refuse."""
        for warning in warnings:
            if str(warning.warningcode) == "1" and warning.itemid == assignment.id:
                raise MoodleServiceError(
                    f"the token's user lacks {_CAPABILITIES[function]} {_course(assignment)} ({function}: "
                    f"{warning.message}): give their role that capability, or use a token of one of "
                    "the course's teachers", errorcode="nopermissions")


def check_site_url(url: str) -> str:
    """The site's address without a trailing slash; https required, but for loopback, since
    the token travels with every call."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MoodleServiceError(f"{url!r} is not a Moodle address: pass the site's address, e.g. "
                                 "--url https://moodle.example.edu")
    if parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1"):
        raise MoodleServiceError(f"{url} is plain http: the token would cross the network readable; use https://")
    if parts.query or parts.fragment or parts.path.endswith(".php"):
        raise MoodleServiceError(f"{url} is a page, not the site: pass only the site's address (its wwwroot), "
                                 f"e.g. {parts.scheme}://{parts.netloc}")
    return url.strip().rstrip("/")


def _refused(data: Any) -> bool:
    return isinstance(data, dict) and "exception" in data and "errorcode" in data


def _says_expired(data: Mapping[str, Any]) -> bool:
    return EXPIRED_DEBUGINFO.lower() in str(data.get("debuginfo", "")).lower()


def _course(assignment: Assignment) -> str:
    return f"in course {assignment.course_id}"


def _files(submission: SubmissionEntry) -> Iterator[RemoteFile]:
    """The ``file`` plugin's submission_files (mod/assign/submission/file/locallib.php)."""
    for plugin in submission.plugins:
        if plugin.type != "file":
            continue
        for area in plugin.fileareas:
            if area.area != "submission_files":
                continue
            for item in area.files:
                yield RemoteFile(filename=item.filename, filepath=item.filepath, filesize=item.filesize or 0,
                                 fileurl=item.fileurl)


def _capped(chunks: Iterator[bytes], max_bytes: int, name: str) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise MoodleServiceError(f"{name} is larger than {max_bytes} bytes: not downloaded")
        yield chunk


def _json(reply: httpx.Response, url: str, what: str) -> Any:
    try:
        return json.loads(reply.content)
    except ValueError:
        raise MoodleServiceError(
            f"{what} on {url} answered HTTP {reply.status_code} with something that is not JSON: is --url the "
            "Moodle site's own address, and are web services enabled (Site administration > Advanced features)?"
        ) from None


def _describe(err: httpx.HTTPError) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
