"""A stand-in Moodle web-service server for the sync's tests, served over loopback HTTP.

No Moodle runs on these machines, so this reproduces what the sync relies on, and only
that, as docs/LMS.md describes it (read from Moodle 4.5's source). Each behaviour names
the Moodle file it comes from. What it does not model (advanced grading, team submissions,
the gradebook's locks) the sync does not use. ``Site.rewrite`` turns a function's reply
into whatever a test needs a hostile or broken server to send.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ML101-Week 1 The perceptron-42.zip"
TEACHER = 2
TOKEN = "0123456789abcdef0123456789abcdef"
REQUIRED = object()  # VALUE_REQUIRED
OPTIONAL = object()  # VALUE_OPTIONAL: may be absent, no default

# Parameter descriptions, as mod/assign/externallib.php mod_assign_external::*_parameters()
# declares them (types: int, float, bool, text, alpha, raw; [x] a multiple, {..} a single
# structure of name -> (type, default)).
_EDITOR = {"text": ("raw", REQUIRED), "format": ("int", REQUIRED)}
_PLUGINDATA = {"assignfeedbackcomments_editor": (_EDITOR, OPTIONAL), "files_filemanager": ("int", OPTIONAL)}
FUNCTIONS: dict[str, dict[str, Any]] = {
    "mod_assign_get_assignments": {"courseids": (["int"], []), "capabilities": (["text"], []),
                                   "includenotenrolledcourses": ("bool", False)},
    "mod_assign_get_submissions": {"assignmentids": (["int"], REQUIRED), "status": ("alpha", ""),
                                   "since": ("int", 0), "before": ("int", 0)},
    "mod_assign_get_grades": {"assignmentids": (["int"], REQUIRED), "since": ("int", 0)},
    "mod_assign_list_participants": {"assignid": ("int", REQUIRED), "groupid": ("int", REQUIRED),
                                     "filter": ("raw", REQUIRED), "skip": ("int", 0), "limit": ("int", 0),
                                     "onlyids": ("bool", False), "includeenrolments": ("bool", True),
                                     "tablesort": ("bool", False)},
    "mod_assign_save_grades": {"assignmentid": ("int", REQUIRED), "applytoall": ("bool", REQUIRED), "grades": ([{
        "userid": ("int", REQUIRED), "grade": ("float", REQUIRED), "attemptnumber": ("int", REQUIRED),
        "addattempt": ("bool", REQUIRED), "workflowstate": ("alpha", REQUIRED),
        "plugindata": (_PLUGINDATA, OPTIONAL), "advancedgradingdata": ({}, OPTIONAL)}], REQUIRED)},
    # user/externallib.php core_user_external::get_users_by_field_parameters
    "core_user_get_users_by_field": {"field": ("alpha", REQUIRED), "values": (["raw"], REQUIRED)},
}


class InvalidParameter(Exception):
    """lib/external/classes/external_api.php validate_parameters raises invalid_parameter_exception."""


@dataclass
class Hand:
    """One user's latest submission (mod/assign: assign_submission with latest = 1)."""

    id: int
    attemptnumber: int
    timemodified: int
    status: str
    files: dict[str, bytes]


@dataclass
class Grade:
    """assign_grades for the latest attempt; grade -1 means "no grade"."""

    id: int
    attemptnumber: int
    timemodified: int
    grader: int
    grade: float
    comment: tuple[str, int] | None = None  # assignfeedback_comments (text, format)
    files: dict[str, bytes] = field(default_factory=dict)  # assignfeedback_file feedback_files


@dataclass
class Site:
    """The state behind the stand-in: one course, one assignment, a teacher's token."""

    url: str = ""
    course_id: int = 12
    assignment_id: int = 7
    cmid: int = 57
    contextid: int = 99
    max_grade: float = 10.0
    tokens: dict[str, int] = field(default_factory=lambda: {TOKEN: TEACHER})
    valid_until: dict[str, int] = field(default_factory=dict)  # external_tokens.validuntil; absent: 0, never
    debugging: bool = False  # $CFG->debug: generate_error adds debuginfo only with it on
    service: set[str] = field(default_factory=lambda: set(FUNCTIONS))
    capabilities: set[str] = field(default_factory=lambda: {"mod/assign:view", "mod/assign:viewgrades",
                                                            "mod/assign:grade"})
    users: dict[int, str] = field(default_factory=dict)  # id -> full name
    teachers: dict[int, str] = field(default_factory=lambda: {TEACHER: "Autograder Bot", 3: "Ana Lima"})
    marking_workflow: bool = False  # assign.markingworkflow
    flags: dict[int, str] = field(default_factory=dict)  # assign_user_flags.workflowstate by user
    rewrite: dict[str, Callable[[Any], Any]] = field(default_factory=dict)  # function -> what its reply becomes
    enrolled: set[int] = field(default_factory=set)
    hands: dict[int, Hand] = field(default_factory=dict)
    grades: dict[int, Grade] = field(default_factory=dict)
    drafts: dict[int, dict[str, bytes]] = field(default_factory=dict)
    clock: int = 1_790_000_000  # Moodle's time(); every change moves it on by a second
    calls: list[str] = field(default_factory=list)
    drop: str | None = None  # "before" / "after": the next save_grades drops the connection
    gone: set[tuple[int, str]] = field(default_factory=set)  # (userid, file) pluginfile.php will not serve
    next_id: int = 1000

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def hand_in(self, userid: int, files: dict[str, bytes]) -> None:
        """A student (re)submits: the latest attempt's files change and timemodified moves."""
        old = self.hands.get(userid)
        self.hands[userid] = Hand(id=old.id if old else self.new_id(), attemptnumber=old.attemptnumber if old else 0,
                                  timemodified=self.tick(), status="submitted", files=files)

    def grade_by_hand(self, userid: int, grade: float, grader: int = 3, *, same_second: bool = False) -> None:
        """A teacher saves the grading form (assign::apply_grade_to_user: grader = the teacher,
        timemodified = time()); ``same_second``: within the second of the last save."""
        hand = self.hands[userid]
        old = self.grades.get(userid)
        when = old.timemodified if same_second and old else self.tick()
        self.grades[userid] = Grade(id=old.id if old else self.new_id(), attemptnumber=hand.attemptnumber,
                                    timemodified=when, grader=grader, grade=grade,
                                    comment=old.comment if old else None, files=old.files if old else {})

    def release(self, userid: int) -> None:
        """The teacher sets the marking workflow state to Released (assign::process_set_batch_marking_workflow_state)."""
        self.flags[userid] = "released"

    def student_sees_grade(self, userid: int) -> bool:
        """With marking workflow on, a student sees the grade only once it is released
        (mod/assign/locallib.php, assign::get_assign_feedback_status_renderable)."""
        return not self.marking_workflow or self.flags.get(userid) == "released"

    def fileurl(self, hand: Hand, name: str) -> str:
        # moodle_url::make_webservice_pluginfile_url (lib/weblib.php), names rawurlencoded
        return (f"{self.url}/webservice/pluginfile.php/{self.contextid}/assignsubmission_file/submission_files/"
                f"{hand.id}/{quote(name)}")


def example_site() -> Site:
    """The example class (examples/): one user per participant folder of the export."""
    site = Site()
    with zipfile.ZipFile(EXAMPLE) as archive:
        for name in sorted(archive.namelist()):
            folder, _, inside = name.partition("/")
            full_name, number, _, plugin = folder.split("_", 3)
            userid = int(number)
            site.users[userid] = full_name
            site.enrolled.add(userid)
            files = dict(site.hands[userid].files) if userid in site.hands else {}
            if plugin == "file":
                files[inside] = archive.read(name)
            site.hand_in(userid, files)  # onlinetext only: a submission without files
    return site


class _Handler(BaseHTTPRequestHandler):
    site: Site
    lock: threading.Lock
    user: int = 0  # the token's user, for the call being served

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        with self.lock:
            parts = urlsplit(self.path)
            if parts.path.startswith("/webservice/pluginfile.php/"):
                self._pluginfile(parts.path, dict(parse_qsl(parts.query)))
            elif parts.path == "/webservice/rest/server.php":
                self._rest(dict(parse_qsl(parts.query)))  # GET and POST are merged
            else:
                self._send(404, b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        with self.lock:
            parts = urlsplit(self.path)
            if parts.path == "/webservice/rest/server.php":
                # webservice/rest/locallib.php parse_request: $_GET and $_POST merged; JSON bodies unread
                fields = dict(parse_qsl(parts.query))
                if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
                    fields.update(parse_qsl(body.decode(), keep_blank_values=True))
                self._rest(fields)
            elif parts.path == "/webservice/upload.php":
                self._upload(body)
            else:
                self._send(404, b"")

    # --- webservice/rest/server.php ----------------------------------------------------

    def _rest(self, fields: dict[str, str]) -> None:
        site = self.site
        function = fields.pop("wsfunction", "")
        token = fields.pop("wstoken", "")
        if fields.pop("moodlewsrestformat", "xml") != "json":
            return self._send(200, b"<?xml version='1.0'?><EXCEPTION/>", "application/xml")  # XML is the default
        site.calls.append(function)
        # webservice/lib.php webservice_base_server::authenticate_by_token
        if token not in site.tokens:
            return self._error("moodle_exception", "invalidtoken", "Invalid token - token not found")
        if site.valid_until.get(token, 0) and site.valid_until[token] < site.clock:
            # the same function: an expired token is deleted, then refused with a
            # webservice_access_exception (webservice/lib.php: errorcode accessexception, the
            # string webservice/accessexception, the reason only as debuginfo)
            del site.tokens[token]
            return self._error("webservice_access_exception", "accessexception", "Access control exception",
                               debuginfo="Invalid token - token expired - check validuntil time for the token")
        if function not in FUNCTIONS:  # load_function_info: external_api::external_function_info
            return self._error("dml_missing_record_exception", "invalidrecord",
                               "Can't find data record in database table external_functions.")
        if function not in site.service:
            return self._error("webservice_access_exception", "accessexception", "Access control exception")
        try:
            params = _validate(FUNCTIONS[function], _nest(fields), function)
        except InvalidParameter as err:
            return self._error("invalid_parameter_exception", "invalidparameter",
                               "Invalid parameter value detected", debuginfo=str(err))
        self.user = site.tokens[token]
        result = getattr(self, "_" + function)(params)
        if result is _DROPPED:  # the connection drops with no reply
            self.close_connection = True
            return None
        if result is _DROPPED_SENT:
            return None
        if function in site.rewrite:
            result = site.rewrite[function](result)
        return self._send(200, json.dumps(result).encode())

    def _mod_assign_get_assignments(self, params: dict[str, Any]) -> Any:
        # mod/assign/externallib.php get_assignments: the token user's enrolled courses
        site = self.site
        configs = [{"plugin": p, "subtype": "assignfeedback", "name": "enabled", "value": "1"}
                   for p in ("comments", "file")]
        assignment = {"id": site.assignment_id, "cmid": site.cmid, "course": site.course_id,
                      "name": "Week 1 The perceptron", "duedate": 0, "cutoffdate": 0, "grade": site.max_grade,
                      "teamsubmission": 0, "blindmarking": 0, "markingworkflow": int(site.marking_workflow), "attemptreopenmethod": "none",
                      "maxattempts": -1, "configs": configs}
        courses = [{"id": site.course_id, "fullname": "Machine learning 101", "shortname": "ML101",
                    "timemodified": 0, "assignments": [assignment] if "mod/assign:view" in site.capabilities else []}]
        return {"courses": courses, "warnings": []}

    def _mod_assign_list_participants(self, params: dict[str, Any]) -> Any:
        # list_participants: require_capability mod/assign:view, then assign::require_view_grades
        site = self.site
        if params["assignid"] != site.assignment_id:
            return self._fail("dml_missing_record_exception", "invalidrecord",
                              "Can't find data record in database table course_modules.")
        if not {"mod/assign:viewgrades", "mod/assign:grade"} & site.capabilities:
            return self._fail("required_capability_exception", "nopermission",
                              "Sorry, but you do not currently have permissions to do that.")
        return [{"id": u, "fullname": site.users[u], "submitted": u in site.hands, "requiregrading": True,
                 "grantedextension": False, "recordid": 100 + u} for u in sorted(site.enrolled)]

    def _mod_assign_get_submissions(self, params: dict[str, Any]) -> Any:
        # get_submissions: latest attempt only, timemodified >= since, warning 1 without
        # :viewgrades/:grade, warning 3 when none; fileurl via external util::get_area_files
        site = self.site
        if not {"mod/assign:viewgrades", "mod/assign:grade"} & site.capabilities:
            return {"assignments": [], "warnings": [{"item": "module", "itemid": site.assignment_id,
                                                     "warningcode": "1", "message": "No access rights in module context"}]}
        found = []
        for userid, hand in sorted(site.hands.items()):
            if params["status"] and hand.status != params["status"] or hand.timemodified < params["since"]:
                continue
            files = [{"filename": n.rsplit("/", 1)[-1], "filepath": "/" + (n.rsplit("/", 1)[0] + "/" if "/" in n else ""),
                      "filesize": len(c), "fileurl": site.fileurl(hand, n), "timemodified": hand.timemodified,
                      "mimetype": "application/x-ipynb+json", "isexternalfile": False} for n, c in hand.files.items()]
            found.append({"id": hand.id, "userid": userid, "attemptnumber": hand.attemptnumber,
                          "timecreated": hand.timemodified, "timemodified": hand.timemodified,
                          "timestarted": None, "status": hand.status, "groupid": 0,
                          "gradingstatus": self._grading_status(userid),
                          "plugins": [{"type": "file", "name": "File submissions", "fileareas": [
                              {"area": "submission_files", "files": files}]}]})
        if not found:
            return {"assignments": [], "warnings": [{"item": "module", "itemid": site.assignment_id,
                                                     "warningcode": "3", "message": "No submissions found"}]}
        return {"assignments": [{"assignmentid": site.assignment_id, "submissions": found}], "warnings": []}

    def _grading_status(self, userid: int) -> str:
        # mod/assign/locallib.php assign::get_grading_status: the workflow state (notmarked
        # when none is set) with marking workflow on, else graded / notgraded
        site = self.site
        if site.marking_workflow:
            return site.flags.get(userid) or "notmarked"
        grade = site.grades.get(userid)
        return "graded" if grade is not None and grade.grade != -1 else "notgraded"

    def _core_user_get_users_by_field(self, params: dict[str, Any]) -> Any:
        # user/externallib.php get_users_by_field: only the users the caller may see
        # (user/lib.php user_get_user_details_courses: here, everyone in the course)
        site = self.site
        people = {**{u: n for u, n in site.users.items() if u in site.enrolled}, **site.teachers}
        if params["field"] != "id":
            return []
        return [{"id": int(v), "fullname": people[int(v)]} for v in params["values"] if int(v) in people]

    def _mod_assign_get_grades(self, params: dict[str, Any]) -> Any:
        # get_grades: latest attempt's assign_grades rows, grade as a string
        site = self.site
        rows = [{"id": g.id, "userid": u, "attemptnumber": g.attemptnumber, "timecreated": g.timemodified,
                 "timemodified": g.timemodified, "grader": g.grader, "grade": f"{g.grade:.5f}"}
                for u, g in sorted(site.grades.items())]
        if not rows:
            return {"assignments": [], "warnings": [{"item": "module", "itemid": site.assignment_id,
                                                     "warningcode": "3", "message": "No grades found"}]}
        return {"assignments": [{"assignmentid": site.assignment_id, "grades": rows}], "warnings": []}

    def _mod_assign_save_grades(self, params: dict[str, Any]) -> Any:
        site = self.site
        if site.drop == "before":
            site.drop = None
            return _DROPPED
        # assign::save_grade: require_capability mod/assign:grade
        if "mod/assign:grade" not in site.capabilities:
            return self._fail("required_capability_exception", "nopermissions",
                              "Sorry, but you do not currently have permissions to do that (Grade assignment).")
        teacher = self.user
        for entry in params["grades"]:
            userid = entry["userid"]
            hand = site.hands.get(userid)
            old = site.grades.get(userid)
            grade = Grade(id=old.id if old else site.new_id(), attemptnumber=hand.attemptnumber if hand else 0,
                          timemodified=site.tick(), grader=teacher, grade=old.grade if old else -1.0,
                          comment=old.comment if old else None, files=old.files if old else {})
            data = entry.get("plugindata", {})
            # feedback plugins save first (assign_feedback_comments::save, assign_feedback_file::save:
            # file_save_draft_area_files replaces the whole feedback_files area)
            if "assignfeedbackcomments_editor" in data:
                editor = data["assignfeedbackcomments_editor"]
                grade.comment = (editor["text"], editor["format"])
            if "files_filemanager" in data:
                grade.files = dict(site.drafts.pop(data["files_filemanager"], {}))
            # assign::apply_grade_to_user: a grade above the maximum or negative (but -1) is not stored
            value = entry["grade"]
            if value == -1 or 0 <= value <= site.max_grade:
                grade.grade = value
            # assign::apply_grade_to_user: isset($formdata->workflowstate) -> stored as sent,
            # '' included, marking workflow on or off (mod_assign_save_grades always sets it)
            site.flags[userid] = entry["workflowstate"]
            site.grades[userid] = grade
        if site.drop == "after":
            site.drop = None
            return _DROPPED
        return None  # the return description is null

    def _fail(self, exception: str, code: str, message: str) -> Any:
        self._error(exception, code, message)
        return _DROPPED_SENT

    def _error(self, exception: str, code: str, message: str, debuginfo: str | None = None) -> None:
        # webservice/rest/locallib.php generate_error: HTTP 200, JSON exception object;
        # debuginfo only "if (debugging() and isset($ex->debuginfo))"
        body = {"exception": exception, "errorcode": code, "message": message}
        if debuginfo and self.site.debugging:
            body["debuginfo"] = debuginfo
        self._send(200, json.dumps(body).encode())

    # --- webservice/pluginfile.php, webservice/upload.php ------------------------------

    def _pluginfile(self, path: str, query: dict[str, str]) -> None:
        # webservice/pluginfile.php: the token as ?token=; no access or no file -> 404 JSON
        site = self.site
        match = re.fullmatch(r"/webservice/pluginfile\.php/(\d+)/assignsubmission_file/submission_files/(\d+)/(.+)",
                             path)
        hand = None
        if match and query.get("token") in site.tokens and int(match.group(1)) == site.contextid:
            hand = next((h for h in site.hands.values() if h.id == int(match.group(2))), None)
        name = unquote(match.group(3)) if match else ""
        owner = next((u for u, h in site.hands.items() if h is hand), None)
        if hand is None or name not in hand.files or (owner, name) in site.gone:
            body = {"error": "Sorry, the requested file could not be found", "errorcode": "filenotfound"}
            return self._send(404, json.dumps(body).encode())
        return self._send(200, hand.files[name], "application/octet-stream")

    def _upload(self, body: bytes) -> None:
        # webservice/upload.php: multipart token, filepath, itemid (0: a new draft); replies
        # a JSON array of the stored files with the draft itemid
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
            f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
        fields: dict[str, str] = {}
        files: dict[str, bytes] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            filename = part.get_filename()
            payload = part.get_payload(decode=True) or b""
            if filename:
                files[filename] = payload
            elif name:
                fields[str(name)] = payload.decode()
        site = self.site
        if fields.get("token") not in site.tokens:
            return self._error("moodle_exception", "invalidtoken", "Invalid token - token not found")
        itemid = int(fields.get("itemid", "0")) or site.new_id()
        site.drafts.setdefault(itemid, {}).update(files)
        reply = [{"component": "user", "contextid": 5, "userid": str(site.tokens[fields["token"]]),
                  "filearea": "draft", "filename": n, "filepath": fields.get("filepath", "/"), "itemid": itemid,
                  "license": "allrightsreserved", "author": "Teacher", "source": "", "filesize": len(c)}
                 for n, c in files.items()]
        return self._send(200, json.dumps(reply).encode())

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


_DROPPED = object()  # close without a reply
_DROPPED_SENT = object()  # the reply (an error) is already written


def _nest(fields: dict[str, str]) -> dict[str, Any]:
    """PHP's form-array parsing: ``a[0][b]=1`` -> {"a": {"0": {"b": "1"}}}."""
    nested: dict[str, Any] = {}
    for key, value in fields.items():
        path = [key.split("[", 1)[0], *re.findall(r"\[([^\]]*)\]", key)]
        node = nested
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = value
    return nested


def _validate(spec: Any, value: Any, where: str) -> Any:
    """external_api::validate_parameters: required keys, no unexpected keys, clean types."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise InvalidParameter(f"{where}: Only arrays accepted.")
        extra = sorted(set(value) - set(spec))
        if extra:
            raise InvalidParameter(f"{where}: Unexpected keys ({', '.join(extra)}) detected in parameter array.")
        out = {}
        for name, (inner, default) in spec.items():
            if name in value:
                out[name] = _validate(inner, value[name], f"{where}[{name}]")
            elif default is REQUIRED:
                raise InvalidParameter(f"{where}: Missing required key in single structure: {name}")
            elif default is not OPTIONAL:
                out[name] = default
        return out
    if isinstance(spec, list):
        if not isinstance(value, dict):  # a multiple structure arrives as name[0], name[1], ...
            raise InvalidParameter(f"{where}: Only arrays accepted.")
        return [_validate(spec[0], item, f"{where}[{i}]") for i, item in enumerate(value.values())]  # keys ignored
    if isinstance(value, dict):
        raise InvalidParameter(f"{where}: Invalid external api parameter: the value is an array")
    kinds = {"int": r"-?\d+", "float": r"-?\d+(\.\d+)?([eE][-+]?\d+)?", "bool": r"[01]", "alpha": r"[A-Za-z]*"}
    if spec in kinds and not re.fullmatch(kinds[spec], value):
        raise InvalidParameter(f'{where}: Invalid external api parameter: the value is "{value}", '
                               f'the server was expecting "{spec}" type')
    return {"int": int, "float": float, "bool": lambda v: v == "1"}.get(spec, str)(value)


@dataclass
class Server:
    """One loopback server; ``use`` swaps the site it serves (the address stays)."""

    url: str
    handler: type[_Handler]
    token: str = TOKEN

    def use(self, site: Site) -> Site:
        site.url = self.url
        self.handler.site = site
        return site

    def example(self) -> Site:
        """Serve a fresh site holding the example class (examples/), nobody graded yet."""
        return self.use(example_site())


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """The stand-in Moodle on 127.0.0.1, for a whole test module."""
    handler = type("Handler", (_Handler,), {"site": Site(), "lock": threading.Lock()})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(url=f"http://127.0.0.1:{httpd.server_address[1]}", handler=handler)
    finally:
        httpd.shutdown()
        httpd.server_close()
