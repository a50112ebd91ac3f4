"""The shapes of Moodle's web-service replies, checked before anything in them is used.

A reply is untrusted input like a student's zip: a proxy rewriting it, a plugin returning
something else, or a hostile server can send ``"id": "x"`` or ``"assignments": null``.
Each reply is validated here (pydantic, lax as PHP's JSON is: ``"7"`` is the number 7) and a
reply of the wrong shape becomes a ``MoodleServiceError`` naming the function and the field,
never a traceback.  Lists of per-student entries are checked entry by entry, so one bad
entry is set aside with the reason and the others go on.

The fields are those ``mod/assign/externallib.php`` and ``user/externallib.php`` declare in
their ``*_returns()`` descriptions; anything else in a reply is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, field_validator

from autograder.exceptions import MoodleServiceError

_MAX_SHOWN = 60  # characters of an offending value quoted in a message


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WarningEntry(_Reply):
    """external_warnings(): how the mod_assign getters refuse one assignment."""

    item: str | None = None
    itemid: int | None = None
    warningcode: str | int | None = None
    message: str = ""


class ConfigEntry(_Reply):
    plugin: str = ""
    subtype: str = ""
    name: str = ""
    value: str | int | float | None = None


class AssignmentEntry(_Reply):
    """mod_assign_get_assignments: one assignment of a course."""

    id: int
    cmid: int
    course: int | None = None
    name: str
    grade: float
    teamsubmission: int = 0
    markingworkflow: int = 0
    configs: list[ConfigEntry] = []


class CourseEntry(_Reply):
    id: int
    assignments: list[Any] = []  # each checked as an AssignmentEntry on its own


class AssignmentsReply(_Reply):
    courses: list[CourseEntry]
    warnings: list[WarningEntry] = []


class FileEntry(_Reply):
    filename: str
    filepath: str = "/"
    filesize: int | None = None
    fileurl: str


class FileArea(_Reply):
    area: str = ""
    files: list[FileEntry] = []


class PluginEntry(_Reply):
    type: str = ""
    fileareas: list[FileArea] = []


class SubmissionEntry(_Reply):
    """mod_assign_get_submissions: one user's latest attempt."""

    id: int
    userid: int
    attemptnumber: int
    timemodified: int
    status: str
    gradingstatus: str = ""  # the marking workflow state when the assignment uses one
    plugins: list[PluginEntry] = []


class SubmissionsBlock(_Reply):
    assignmentid: int
    submissions: list[Any] = []  # each checked as a SubmissionEntry on its own


class SubmissionsReply(_Reply):
    assignments: list[SubmissionsBlock]
    warnings: list[WarningEntry] = []


class GradeEntry(_Reply):
    """mod_assign_get_grades: one user's grade on the latest attempt (``grade`` a string)."""

    userid: int
    attemptnumber: int
    timemodified: int
    grader: int | None = None
    grade: float | None = None  # "5.00000"; -1 or none: no grade

    @field_validator("grade", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value


class GradesBlock(_Reply):
    assignmentid: int
    grades: list[Any] = []  # each checked as a GradeEntry on its own


class GradesReply(_Reply):
    assignments: list[GradesBlock]
    warnings: list[WarningEntry] = []


class ParticipantEntry(_Reply):
    """mod_assign_list_participants: one row of the top-level list."""

    id: int
    fullname: str | None = None


class UserEntry(_Reply):
    """core_user_get_users_by_field: one user the token's user may see."""

    id: int
    fullname: str


class UploadedEntry(_Reply):
    """webservice/upload.php: one stored draft file, or why it was not stored."""

    itemid: int | None = None
    errortype: str | None = None
    error: str | None = None


R = TypeVar("R")


@dataclass(frozen=True)
class BadEntry:
    """One entry of a list reply that could not be read: whose, if that much could, and why."""

    userid: int | None
    message: str


def parse(kind: type[R], data: Any, *, function: str, url: str, where: str = "") -> R:
    """``data`` as ``kind``, or a MoodleServiceError naming ``function`` and the field."""
    try:
        return TypeAdapter(kind).validate_python(data)
    except ValidationError as err:
        raise MoodleServiceError(
            f"Moodle at {url} answered {function} with a reply Moodle never sends ({describe(err, where)}): "
            "nothing of it was used; check that the address is the Moodle site itself, with nothing rewriting "
            "its replies, and report it with Moodle's version if it is") from None


def parse_each(kind: type[R], items: Sequence[Any], *, function: str, where: str) -> tuple[list[R], list[BadEntry]]:
    """Each of ``items`` as ``kind``; the ones that fail are set aside with their reason."""
    good: list[R] = []
    bad: list[BadEntry] = []
    adapter = TypeAdapter(kind)
    for index, item in enumerate(items):
        try:
            good.append(adapter.validate_python(item))
        except ValidationError as err:
            bad.append(BadEntry(userid=_userid(item), message=(
                f"Moodle's reply to {function} could not be read ({describe(err, f'{where}[{index}]')}): "
                "set aside")))
    return good, bad


def describe(err: ValidationError, where: str = "") -> str:
    """The first problem of ``err`` as ``field: what is wrong (got value)``."""
    first = err.errors()[0]
    path = where
    for part in first["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    shown = repr(first.get("input"))
    if len(shown) > _MAX_SHOWN:
        shown = shown[:_MAX_SHOWN] + "…"
    more = f"; {len(err.errors()) - 1} more problem(s)" if len(err.errors()) > 1 else ""
    return f"{path or 'the reply'}: {first['msg']} (got {shown}){more}"


def _userid(item: Any) -> int | None:
    """The entry's user id when that much of it is readable."""
    try:
        return TypeAdapter(int).validate_python(item.get("userid")) if isinstance(item, dict) else None
    except ValidationError:
        return None
