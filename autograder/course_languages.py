"""Which languages a course and each of its weeks are taught in, and the rest of what
``course.toml`` and ``week.toml`` say (the course's grading environment, a week's own files:
their tables are read here, their paths checked by ``autograder.course``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from autograder.exceptions import CourseError
from autograder.i18n.runtime import N_, _
from autograder.settings_files import Table, load, refuse, toml_value

LANGUAGE_PATTERN = re.compile(r"^[a-z]{2,3}(_[A-Z]{2})?$")
SETTINGS_FILE = "course.toml"
WEEK_SETTINGS_FILE = "week.toml"
Code = Annotated[str, Field(pattern=LANGUAGE_PATTERN.pattern)]
Distribution = Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")]
EXACT_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*([._+-]?[A-Za-z0-9.]+)*$")  # one version: no range, no ==
Module = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
OFFERED = Field(default=None, description=N_('a list of language codes such as ["en", "ja"], each once'))


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


class CourseLanguagesTable(Table):
    """``[languages]`` of ``course.toml``: offered defaults to the source alone, the
    instructor's language to the source."""

    source: Code = Field(default="en", description=N_('a language code such as "en", "ja" or "pt_BR"'))
    offered: list[Code] | None = OFFERED
    instructor: Code | None = Field(default=None, description=N_(
        'the language of the report and the worksheet, a code such as "en" that offered lists'))

    @model_validator(mode="after")
    def _offered_holds_source_and_instructor(self) -> Self:
        offered = self.offered or [self.source]
        instructor = self.instructor or self.source
        if self.source not in offered or instructor not in offered or len(set(offered)) != len(offered):
            refuse(_("{offered} must list each language once, the source ({source}) and the instructor's "
                     "({instructor}) among them").format(offered=toml_value(offered), source=toml_value(self.source),
                                                         instructor=toml_value(instructor)),
                   at=("languages", "offered"))
        return self

    def languages(self) -> Languages:
        """The course's languages, the defaults filled in."""
        source = self.source
        return Languages(source=source, offered=tuple(self.offered or [source]), instructor=self.instructor or source)


class GradingTable(Table):
    """``[grading]`` of ``course.toml``: the course's grading environment
    (``autograder.libraries``): its libraries, each at an exact version, and what the
    zygote preloads."""

    libraries: dict[Distribution, str] = Field(default_factory=dict, description=N_(
        'a table: [grading.libraries] on a line of its own, then one library a line at its exact version, '
        'such as pandas = "2.3.3"'))
    preload: list[Module] = Field(default_factory=list, description=N_(
        'a list of module names, such as ["numpy", "matplotlib.pyplot", "pandas"], imported once before '
        'any worker'))

    @field_validator("libraries")
    @classmethod
    def _exact(cls, libraries: dict[str, str]) -> dict[str, str]:
        for name, pinned in libraries.items():
            if not EXACT_VERSION.match(pinned):
                refuse(_("{name} = {pinned} is not one exact version: write one, such as {name} = \"2.3.3\" (a "
                         "regrade must run on the versions the first grading ran on)").format(
                    name=name, pinned=toml_value(pinned)))
        return libraries


class CourseToml(Table):
    """``course.toml``: the course's settings."""

    languages: CourseLanguagesTable | None = Field(default=None, description=N_(
        'a table: [languages] on a line of its own, then source = "en", offered = ["en", "ja"] and '
        'instructor = "en" under it'))
    grading: GradingTable | None = Field(default=None, description=N_(
        'a table: [grading] on a line of its own, then preload = ["numpy"] under it, and '
        '[grading.libraries] with numpy = "2.4.6" under it'))


class WeekLanguagesTable(Table):
    """``[languages]`` of ``week.toml``: each key defaults to the course's (``context["course"]``)."""

    source: Code | None = Field(default=None, description=N_(
        'a language code such as "en", "ja" or "pt_BR" (the language this week\'s notebook and tests are '
        'written in)'))
    offered: list[Code] | None = OFFERED
    instructor: Any = None

    @field_validator("instructor")
    @classmethod
    def _course_wide(cls, value: object) -> None:
        refuse(_("the instructor's language is course-wide; set it in {file} and remove it here").format(
            file=SETTINGS_FILE))

    @model_validator(mode="after")
    def _narrows_the_course(self, info: ValidationInfo) -> Self:
        course: Languages = (info.context or {})["course"]
        source = self.source or course.source
        offered = self.offered if self.offered is not None else list(course.offered)
        at = ("languages", "offered")
        if len(set(offered)) != len(offered):
            refuse(_("{offered} lists a language twice: list each once").format(offered=toml_value(offered)), at=at)
        if source not in offered:
            refuse(_("{offered} must include the week's source language {source}: add it (offered = {fixed})").format(
                offered=toml_value(offered), source=toml_value(source), fixed=toml_value([source, *offered])), at=at)
        foreign = [c for c in offered if c != source and c not in course.offered]
        if foreign:
            refuse(_("{offered} names {foreign}, which the course does not offer ({file}: {course}): remove it "
                     "here, or add it to offered in {file}").format(
                offered=toml_value(offered), foreign=", ".join(map(toml_value, foreign)), file=SETTINGS_FILE,
                course=toml_value(list(course.offered))), at=at)
        return self

    def languages(self, course: Languages) -> Languages:
        """The week's languages: ``course``'s where the table says nothing."""
        source = self.source or course.source
        offered = self.offered if self.offered is not None else list(course.offered)
        return Languages(source=source, offered=tuple(offered), instructor=course.instructor)


class WeekFilesTable(Table):
    """``[files]`` of ``week.toml``: the week's own files, paths inside ``source/weekNN/``
    (``autograder.course.Week.files`` refuses any that leads out of it)."""

    helpers: list[str] = Field(default_factory=list, description=N_(
        'a list of Python files in the week\'s folder, such as ["utilities.py", "code/helpers.py"]: '
        'importable by student code and the hidden tests, read-only in every worker'))
    handout: list[str] = Field(default_factory=list, description=N_(
        'a list of files in the week\'s folder, such as ["data/x.csv", "utilities.py"], copied next to '
        'the student notebook'))


class WeekToml(Table):
    """``source/weekNN/week.toml``: the week's languages and its own files."""

    languages: WeekLanguagesTable | None = Field(default=None, description=N_(
        'a table: [languages] on a line of its own, then source = "en" and offered = ["en"] under it'))
    files: WeekFilesTable | None = Field(default=None, description=N_(
        'a table: [files] on a line of its own, then helpers = ["utilities.py"] and handout = '
        '["data/x.csv"] under it'))


def read_languages(root: Path) -> Languages:
    """The ``[languages]`` table of ``root/course.toml``; CourseError naming the key and the fix."""
    document = load(root / SETTINGS_FILE, CourseToml, CourseError)
    table = document.languages if document is not None else None
    return Languages() if table is None else table.languages()


def read_week_languages(source_dir: Path, course: Languages) -> Languages:
    """The languages of the week in ``source_dir``: ``course``'s, narrowed by the week's
    ``week.toml`` when it has one (see the module docstring); CourseError naming the file,
    the key and the fix."""
    document = load(source_dir / WEEK_SETTINGS_FILE, WeekToml, CourseError, context={"course": course})
    table = document.languages if document is not None else None
    return course if table is None else table.languages(course)


def read_grading(root: Path) -> GradingTable:
    """The ``[grading]`` table of ``root/course.toml`` (empty when there is none)."""
    document = load(root / SETTINGS_FILE, CourseToml, CourseError)
    table = document.grading if document is not None else None
    return table or GradingTable()


def read_week_files(source_dir: Path, course: Languages) -> WeekFilesTable:
    """The ``[files]`` table of the week's ``week.toml`` (empty when there is none); its
    paths as written, not yet checked."""
    document = load(source_dir / WEEK_SETTINGS_FILE, WeekToml, CourseError, context={"course": course})
    table = document.files if document is not None else None
    return table or WeekFilesTable()
