"""Which languages a course and each of its weeks are taught in.

The course says it once, in ``[languages]`` of ``course.toml`` at the course root. A week
may narrow that in ``source/weekNN/week.toml`` so that it can be drafted and handed out in
one language while the others are translated, without touching the course-wide setting:

```toml
[languages]
source = "en"       # the language this week's notebook and tests are written in (default: the course's)
offered = ["en"]    # what students get this week (default: the course's offered languages)
```

A week's ``offered`` must list its source; every other language in it must be one the
course offers. Its source may be a language the course does not offer (an imported week
written in Russian, say, offered in Russian and English). The instructor's language is
course-wide (the report and the worksheet cover every week alike).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.exceptions import CourseError

LANGUAGE_PATTERN = re.compile(r"^[a-z]{2,3}(_[A-Z]{2})?$")
SETTINGS_FILE = "course.toml"
WEEK_SETTINGS_FILE = "week.toml"
_CODES = '"en", "ja" or "pt_BR"'


@dataclass(frozen=True)
class Languages:
    """The languages of a course or of one week.

    ``source`` is the language the reference notebooks and hidden tests are written in;
    ``offered`` the languages students get notebooks and feedback in (``autograder
    generate`` writes one folder each); ``instructor`` the language of the report and the
    Moodle worksheet. A course without ``course.toml`` is a one-language course in English.
    """

    source: str = "en"
    offered: tuple[str, ...] = ("en",)
    instructor: str = "en"

    def pick(self, language: object) -> str:
        """``language`` if offered, else the source language: a notebook's metadata is the
        student's to edit, and an unknown value must not break feedback."""
        return language if isinstance(language, str) and language in self.offered else self.source


def _read_table(path: Path) -> dict[str, Any]:
    """The whole TOML document at ``path``; CourseError naming the file."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise CourseError(f"{path}: not valid TOML ({error}); fix the file") from error


def read_languages(root: Path) -> Languages:
    """The ``[languages]`` table of ``root/course.toml``; CourseError naming the fix."""
    path = root / SETTINGS_FILE
    if not path.is_file():
        return Languages()
    table = _read_table(path).get("languages", {})
    source = table.get("source", "en")
    offered = table.get("offered", [source])
    instructor = table.get("instructor", source)
    codes = [source, instructor, *offered] if isinstance(offered, list) else None
    if codes is None or not all(isinstance(c, str) and LANGUAGE_PATTERN.match(c) for c in codes):
        raise CourseError(f"{path}: [languages] takes language codes such as {_CODES}: "
                          "source = \"en\", offered = [\"en\", \"ja\"], instructor = \"en\"")
    if source not in offered or instructor not in offered or len(set(offered)) != len(offered):
        raise CourseError(f"{path}: [languages] offered = {offered} must list each language once, "
                          f"the source ({source!r}) and the instructor's ({instructor!r}) among them")
    return Languages(source=source, offered=tuple(offered), instructor=instructor)


def read_week_languages(source_dir: Path, course: Languages) -> Languages:
    """The languages of the week in ``source_dir``: ``course``'s, narrowed by the week's
    ``week.toml`` when it has one (see the module docstring); CourseError naming the file,
    the key and the fix."""
    path = source_dir / WEEK_SETTINGS_FILE
    if not path.is_file():
        return course
    document = _read_table(path)
    for key in document:
        if key != "languages":
            raise CourseError(f"{path}: unknown setting {key!r}: week.toml holds only a [languages] table "
                              "(source and offered); remove it or fix its name")
    table = document.get("languages", {})
    if not isinstance(table, dict):
        raise CourseError(f"{path}: 'languages' must be a table: write [languages] on a line of its own, "
                          "then source = \"en\" and offered = [\"en\"] under it")
    for key in table:
        if key == "instructor":
            raise CourseError(f"{path}: [languages] instructor: the instructor's language is course-wide; "
                              f"set it in {SETTINGS_FILE} and remove it here")
        if key not in ("source", "offered"):
            raise CourseError(f"{path}: [languages] unknown key {key!r}: a week sets only source and offered; "
                              "remove it or fix its name")
    source = table.get("source", course.source)
    if not isinstance(source, str) or not LANGUAGE_PATTERN.match(source):
        raise CourseError(f"{path}: [languages] source = {source!r} is not a language code: write one such as "
                          f"{_CODES} (the language this week's notebook and tests are written in)")
    offered = table.get("offered", list(course.offered))
    if not isinstance(offered, list) or not all(isinstance(c, str) and LANGUAGE_PATTERN.match(c) for c in offered):
        raise CourseError(f"{path}: [languages] offered = {offered!r} must be a list of language codes such as "
                          f"{_CODES}: offered = [\"{source}\"]")
    if len(set(offered)) != len(offered):
        raise CourseError(f"{path}: [languages] offered = {offered} lists a language twice: list each once")
    if source not in offered:
        raise CourseError(f"{path}: [languages] offered = {offered} must include the week's source language "
                          f"{source!r}: add it (offered = {[source, *offered]})")
    foreign = [c for c in offered if c != source and c not in course.offered]
    if foreign:
        raise CourseError(f"{path}: [languages] offered = {offered} names {', '.join(map(repr, foreign))}, which "
                          f"the course does not offer ({SETTINGS_FILE}: {list(course.offered)}): remove it here, "
                          f"or add it to offered in {SETTINGS_FILE}")
    return Languages(source=source, offered=tuple(offered), instructor=course.instructor)
