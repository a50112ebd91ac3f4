"""A week's gettext catalog: what is extracted from its source, and what a translation lacks.

A week's translatable text is its source notebook's (``autograder.i18n.units``), its hidden
tests' descriptions (a test docstring's first line, shown as the check's name in feedback)
and every ``_("...")`` message in ``tests/``. The template is written to
``source/weekNN/locale/weekNN.pot`` and each language's catalog to
``source/weekNN/locale/<lang>/LC_MESSAGES/weekNN.po``: the layout Babel's own commands
(``pybabel update -D weekNN -i ... -d ...``) and PO editors expect.

A catalog is *complete* for a source when every message extracted from the source now has a
translation that is not marked fuzzy. A message the author changed no longer matches its
old entry, so a stale catalog is an incomplete one, and ``problems`` names the strings.
"""

from __future__ import annotations

import ast
import difflib
import gettext
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_python
from babel.messages.pofile import read_po, write_po

from autograder.authoring.notebook_io import read_source
from autograder.course import Week
from autograder.formats.atomic import write_bytes
from autograder.i18n.units import notebook_messages

# Dates in the header would make every extraction differ from the committed file.
_EPOCH = datetime(2026, 1, 1)


@dataclass(frozen=True)
class Problem:
    """One message a language's catalog lacks."""

    message: str
    why: str  # "untranslated", "fuzzy" (changed since translated) or "missing" (not in the catalog)
    was: str | None = None  # for a changed source string: the old text it was translated from

    def __str__(self) -> str:
        """The message, shortened, and why it blocks generation."""
        text = _short(self.message)
        if self.was is not None:
            return f"changed since it was translated (was {_short(self.was)!r}): {text!r}"
        return {"untranslated": "not translated yet", "fuzzy": "marked fuzzy (check and unmark it)",
                "missing": "not in the catalog (run `autograder i18n update`)"}[self.why] + f": {text!r}"


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def locale_dir(week: Week) -> Path:
    """``source/weekNN/locale``: the week's template and catalogs."""
    return week.source_dir / "locale"


def template_path(week: Week) -> Path:
    """The week's ``.pot`` template."""
    return locale_dir(week) / f"{week.name}.pot"


def catalog_path(week: Week, language: str) -> Path:
    """The week's ``.po`` catalog for ``language``."""
    return locale_dir(week) / language / "LC_MESSAGES" / f"{week.name}.po"


def extract(week: Week) -> Catalog:
    """The week's template: every translatable message of its source, in source order,
    each with where it was found."""
    catalog = new_template(f"{week.name} ({week.title})")
    notebook = read_source(week.source_notebook)
    _add(catalog, week.title, (f"{week.name}.ipynb", 1), "title")  # the feedback page's heading
    for task in week.tasks:
        _add(catalog, task.title, (f"{week.name}.ipynb", 1), "title")
    for message in notebook_messages(notebook):
        _add(catalog, message.text, (f"{week.name}.ipynb", message.cell + 1), message.kind)
    for path in week.test_files + tuple(sorted(week.tests_dir.glob("conftest.py"))):
        relative = f"tests/{path.name}"
        text = path.read_text(encoding="utf-8")
        for line, description in test_descriptions(text):
            _add(catalog, description, (relative, line), "check")
        with path.open("rb") as handle:
            for line, _funcname, found, _comments in extract_python(handle, {"_": None}, [], {}):
                text_found: object = found  # a str for _("..."), a tuple for plural forms (not used)
                if isinstance(text_found, str):
                    _add(catalog, text_found, (relative, line), "feedback")
    return catalog


def new_template(project: str) -> Catalog:
    """An empty template whose header does not change from one extraction to the next."""
    return Catalog(project=project, creation_date=_EPOCH, revision_date=_EPOCH, fuzzy=False, charset="utf-8")


def _add(catalog: Catalog, text: str, location: tuple[str, int], kind: str) -> None:
    add_message(catalog, text, location, comments=[kind], brace_format=kind == "feedback")


def add_message(catalog: Catalog, text: str, location: tuple[str, int], *, comments: list[str],
                brace_format: bool) -> None:
    """Add ``text`` to a template, or one more location to it when it is there already;
    ``brace_format`` marks a ``str.format`` message with placeholders for PO editors' checks."""
    existing = catalog.get(text)
    if existing is not None:
        existing.locations.append(location)
        return
    flags = ["python-brace-format"] if brace_format and "{" in text else []
    catalog.add(text, locations=[location], auto_comments=comments, flags=flags)


def catalog_problems(template: Catalog, path: Path) -> list[Problem]:
    """``problems`` of the catalog at ``path`` (everything, when there is no file yet)."""
    return problems(template, read_catalog(path) if path.is_file() else None)


def test_descriptions(source: str) -> list[tuple[int, str]]:
    """(line, description) of every ``test_*`` function with a docstring: the docstring's
    first line as the grader shows it (``autograder.testing.hidden``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            doc = ast.get_docstring(node)
            if doc:
                out.append((node.lineno, description_of(doc)))
    return out


def description_of(doc: str) -> str:
    """The line of a docstring feedback shows: its first line, without the final full stop."""
    return doc.strip().splitlines()[0].strip().rstrip(".")


def read_catalog(path: Path) -> Catalog:
    """A ``.po`` file as a Babel catalog."""
    with path.open("rb") as handle:
        return read_po(handle)


# What ``extract`` says a week's message is (its comment): of these only a failure message
# ("feedback") is a str.format template.
_NOT_FORMAT = frozenset({"title", "markdown", "comment", "docstring", "string", "check"})


def _drop_false_brace_format(catalog: Catalog) -> None:
    """Babel flags every message in which ``string.Formatter`` finds a field as
    ``python-brace-format`` (LaTeX such as ``$x^{(1)}$`` included) whenever it builds one,
    on reading a catalog too, and PO editors then demand the "placeholders" back. A week's
    notebook text, titles and check names are never formatted: their flag is dropped."""
    for message in [*catalog, *catalog.obsolete.values()]:
        kinds = set(message.auto_comments)
        if kinds & _NOT_FORMAT and "feedback" not in kinds:
            message.flags.discard("python-brace-format")


def write_catalog(catalog: Catalog, path: Path) -> bool:
    """Write a ``.po``/``.pot`` file reproducibly (sorted as extracted, wrapped at 79), and
    only when its contents change (so ``i18n update`` can say which catalogs it changed,
    and an untouched file keeps its time stamp); whether it wrote. The previous text
    (``#| msgid``) is kept only while an entry is fuzzy: once translated again it is
    history a translator no longer needs."""
    for message in catalog:
        if not message.fuzzy:
            message.previous_id = []
    _drop_false_brace_format(catalog)
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=79, sort_output=False, include_previous=True)
    contents = buffer.getvalue()
    if path.is_file() and path.read_bytes() == contents:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, contents)
    return True


def update(template: Catalog, path: Path, language: str) -> Catalog:
    """``language``'s catalog brought up to ``template``: translations kept, changed
    messages marked fuzzy with the previous text, removed ones kept as obsolete."""
    if path.is_file():
        catalog = read_catalog(path)
    else:
        catalog = Catalog(locale=language, creation_date=_EPOCH, revision_date=_EPOCH, fuzzy=False,
                          project=template.project, charset="utf-8")
    catalog.update(template, update_header_comment=False)
    catalog.revision_date = _EPOCH
    catalog.creation_date = _EPOCH
    catalog.fuzzy = False
    return catalog


def problems(template: Catalog, catalog: Catalog | None) -> list[Problem]:
    """What ``catalog`` lacks to translate every message of ``template`` (see the module
    docstring); an absent catalog lacks everything."""
    out = []
    wanted = {m.id for m in template if m.id}
    unused = [str(m.id) for m in (catalog or []) if m.id and m.string and m.id not in wanted]
    unused += [str(m.id) for m in (catalog.obsolete.values() if catalog is not None else []) if m.string]
    for message in template:
        if not message.id:
            continue
        entry = catalog.get(message.id) if catalog is not None else None
        if entry is None:
            out.append(Problem(str(message.id), "missing", was=closest(str(message.id), unused)))
        elif entry.fuzzy:
            previous = entry.previous_id[0] if entry.previous_id else None
            out.append(Problem(str(message.id), "fuzzy", was=previous))
        elif not entry.string:
            out.append(Problem(str(message.id), "untranslated"))
    return out


class CatalogTranslations(gettext.NullTranslations):
    """gettext translations read straight from Babel catalogs (no compiled ``.mo`` files to
    keep in step): the first catalog holding a translation wins; fuzzy entries are not used."""

    def __init__(self, catalogs: Iterable[Catalog]) -> None:
        super().__init__()
        self._table: dict[str, str] = {}
        for catalog in reversed(list(catalogs)):
            for message in catalog:
                if message.id and message.string and not message.fuzzy and isinstance(message.id, str):
                    self._table[message.id] = str(message.string)

    def gettext(self, message: str) -> str:
        """``message`` translated, or as it is."""
        return self._table.get(message, message)

    def __contains__(self, message: str) -> bool:
        return message in self._table


def closest(text: str, candidates: Iterable[str]) -> str | None:
    """The old message a changed one most likely came from (for telling the author)."""
    found = difflib.get_close_matches(text, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None
