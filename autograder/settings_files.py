"""One typed layer for the course's TOML settings files.

``course.toml``, ``source/weekNN/week.toml``, ``service.toml`` (its week rules and its
``[[sync]]`` entries) and ``source/weekNN/audit.toml`` are each described by a pydantic
model kept beside the code that uses it (``course_languages``, ``service.policy``,
``service.moodle_sync``, ``audit.audit_toml``). ``load`` reads a file and validates it;
every mistake becomes the caller's error class, with a message that names the file, the
key as TOML writes it (``[languages] offered``, ``[[sync]] entry 2: token_file``) and what
to write instead. What a key takes is said once, in its ``Field(description=...)``: that
text is the fix a message offers, so the message cannot drift from the model.

A model checks types strictly (TOML has its own: ``3`` is not ``"3"``, ``true`` is not 1)
and refuses unknown keys, so a typo is named instead of silently ignored. A check that
needs more than one key raises ``refuse(message)`` from a validator; ``at`` names the key
it blames when that is not where the validator runs.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from datetime import date, time
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

from autograder.exceptions import AutograderError
from autograder.i18n.runtime import _

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


class Table(BaseModel):
    """A table of a settings file: TOML's own types, no unknown keys, read-only once read."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    named_by: ClassVar[tuple[str, ...]] = ()  # keys that tell one entry of an array of tables from another


def refuse(message: str, *, at: Loc | None = None) -> NoReturn:
    """Raise from a validator: ``message`` says what is wrong and what to write instead;
    ``at`` is the key path it is about, when that is not the validator's own place."""
    raise PydanticCustomError("setting", "{message}", {"message": message, "at": at})


def load(path: Path, model: type[M], error: type[AutograderError],
         context: Mapping[str, Any] | None = None) -> M | None:
    """The file at ``path`` as ``model`` (None when there is no such file); ``error`` naming
    the file, the key and the fix when it is not valid TOML or not what ``model`` takes.
    ``context`` is passed to the model's validators (what they check against)."""
    if not path.is_file():
        return None
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(_("{path}: not valid TOML ({problem}); fix the file").format(path=path, problem=exc)) from None
    try:
        return model.model_validate(document, context=context)
    except ValidationError as exc:
        problems = [_problem(model, detail, document) for detail in exc.errors(include_url=False)]
        raise error(f"{path}: " + "; ".join(dict.fromkeys(problems))) from None


def toml_value(value: object, *, most: int = 80) -> str:
    """``value`` as it would be written in TOML (``"en"``, ``["en", "ja"]``, ``true``,
    ``2026-09-14T23:59:00``), cut to ``most`` characters: a message quotes it, not a page."""
    text = _toml(value)
    return text if len(text) <= most else text[:most - 1] + "\u2026"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, date | time):
        return value.isoformat()
    return str(value)


def _problem(model: type[BaseModel], detail: ErrorDetails, document: object) -> str:
    """One validation error in words: where (the key path) and what to write instead."""
    ctx = detail.get("ctx") or {}
    kind = detail["type"]
    loc: Loc = tuple(ctx.get("at") or detail["loc"]) if kind == "setting" else tuple(detail["loc"])
    where, field, known = _place(model, loc, document, tables=kind == "setting")
    if kind == "setting":
        what = str(ctx["message"])
    elif kind == "missing":
        what = _("missing: write {fix}").format(fix=_fix(field))
    elif kind == "extra_forbidden":
        what = _("unknown key; the keys here are {known}: remove it or fix its name").format(
            known=", ".join(known) or _("none"))
    else:
        what = _("= {value} is not allowed here: write {fix}").format(value=toml_value(detail["input"]),
                                                                       fix=_fix(field))
    if not where:
        return what
    return f"{where} {what}" if what.startswith("=") else f"{where}: {what}"


def _fix(field: FieldInfo | None) -> str:
    """What a key takes: its field's description."""
    return _(field.description) if field is not None and field.description else _("a value of the right type")


def _place(model: type[BaseModel], loc: Loc, document: object, *,
           tables: bool) -> tuple[str, FieldInfo | None, list[str]]:
    """``loc`` as TOML writes it, the field it ends at, and the keys known where it ends.

    A field holding a model is a table (``[name]``), a list of models an array of tables
    (``[[name]] entry N``, from 1, with the keys its model is ``named_by`` as the entry in
    ``document`` has them), a dict of models a set of tables named by their keys
    (``[key]``); an index into a list of values is ``(item N)``. A table ``loc`` ends at is
    ``[name]`` when the problem is within it (``tables``), else the key holding it."""
    words: list[str] = []
    current: type[BaseModel] | None = model
    field: FieldInfo | None = None
    known = _keys(model)
    index = 0
    while index < len(loc):
        item = loc[index]
        if isinstance(item, int):
            words.append(_("(item {n})").format(n=item + 1))
            index += 1
            continue
        if current is None and field is not None:  # past a value: pydantic's name for a union member
            index += 1
            continue
        field = current.model_fields.get(item) if current is not None else None
        inner, shape = _inner(field.annotation) if field is not None else (None, "")
        if shape == "list" and index + 1 < len(loc) and isinstance(loc[index + 1], int):
            number = int(loc[index + 1])
            entries = document.get(item) if isinstance(document, dict) else None
            entry = entries[number] if isinstance(entries, list) and number < len(entries) else None
            named = ", ".join(f"{key} {toml_value(entry[key])}" for key in getattr(inner, "named_by", ())
                              if isinstance(entry, dict) and key in entry)
            words.append(_("[[{table}]] entry {n}").format(table=item, n=number + 1)
                         + (f" ({named}):" if named else ":"))
            index += 2
        elif shape == "dict" and index + 1 < len(loc):
            words.append(f"[{loc[index + 1]}]")
            index += 2
        elif shape == "model" and (index + 1 < len(loc) or tables):
            words.append(f"[{item}]")
            index += 1
        else:
            words.append(item)
            index += 1
            inner = None
        if inner is not None:
            current, known = inner, _keys(inner)
        elif index < len(loc) and not isinstance(loc[index], int):
            current = None
    return " ".join(words).removesuffix(":"), field, known


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a table takes: its fields that say what they take (a field without a
    description only refuses, such as a token written where a token file belongs)."""
    return sorted(name for name, field in model.model_fields.items() if field.description)


def _inner(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model inside ``annotation`` and how it is held: "model", "list", "dict" or ""."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, "model"
    origin = get_origin(annotation)
    for arg in get_args(annotation):
        inner, shape = _inner(arg)
        if inner is not None:
            if origin in (list, tuple):
                return inner, "list"
            if origin is dict:
                return inner, "dict"
            return inner, shape
    return None, ""
