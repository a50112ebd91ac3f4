"""The hidden tests' feedback is translatable (issue 16).

Every assertion message a student reads goes through ``autograder.i18n._`` with a plain
string literal as its msgid, so Babel's extractor (keyword ``_``) finds it, and its
placeholders are named, so a translator can reorder them. A module that binds ``_`` itself
(``for _ in ...``, ``a, _ = ...``) would make a later ``_()`` in that function raise
UnboundLocalError, so that is refused too. A new week's tests are held to the same rules.
"""

from __future__ import annotations

import ast
import gettext
import importlib.util
import io
import string
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo

from autograder.course import Course
from autograder.i18n import speaking

# Messages for the course's authors (a broken invariant of the tests' own data), never
# shown to a student for something the student did: left untranslated.
INSTRUCTOR_ONLY = "internal:"


def hidden_test_modules(course: Course) -> list[Path]:
    return sorted(p for name in course.week_names() for p in course.week(name).tests_dir.glob("*.py"))


def msgid(node: ast.AST) -> str | None:
    """The literal of ``_("literal")``, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_"
            and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def message_problem(message: ast.AST) -> str | None:
    """Why an assertion message would not reach a translator intact, or None."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str) and message.value.startswith(INSTRUCTOR_ONLY):
        return None
    text, names = msgid(message), set()
    if text is None and isinstance(message, ast.Call) and isinstance(message.func, ast.Attribute) \
            and message.func.attr == "format" and not message.args:
        text, names = msgid(message.func.value), {k.arg for k in message.keywords}
        if text is not None and None in names:
            return "format(**...) hides the placeholders' names"
    if text is None:
        return 'not _("...") or _("...").format(name=...) with a string literal'
    try:
        fields = {field for _literal, field, _spec, _conversion in string.Formatter().parse(text) if field is not None}
    except ValueError as error:
        return f"not a valid format string ({error})"
    if any(not field.isidentifier() for field in fields):
        return "placeholders must be named ({shape}, not {} or {0}): translators reorder them"
    if fields != names:
        return f"placeholders {sorted(fields)} but format() gives {sorted(names)}"
    return None


def problems(source: str) -> list[str]:
    """Everything in a hidden test module that keeps its feedback from being translated."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        bound = (isinstance(node, ast.Name) and node.id == "_" and not isinstance(node.ctx, ast.Load)) \
            or (isinstance(node, ast.arg) and node.arg == "_") \
            or (isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == "_")
        if bound:
            found.append(f"line {node.lineno}: binds _, which shadows the translation function; use another name")
        if isinstance(node, ast.Assert) and node.msg is not None:
            why = message_problem(node.msg)
            if why:
                found.append(f"line {node.lineno}: the assertion message is {why}" if why.startswith("not")
                             else f"line {node.lineno}: {why}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" and msgid(node) is None:
            found.append(f"line {node.lineno}: _() takes one string literal (Babel extracts nothing else)")
    uses = any(msgid(node) is not None for node in ast.walk(tree))
    imported = any(isinstance(n, ast.ImportFrom) and n.module == "autograder.i18n" and any(a.name == "_" and a.asname is None for a in n.names)
                   for n in tree.body)
    if uses and not imported:
        found.append("uses _ without `from autograder.i18n import _`")
    return found


def test_every_hidden_test_message_is_translatable(course: Course) -> None:
    modules = hidden_test_modules(course)
    assert {p.parent.parent.name for p in modules if p.name.startswith("test_")} == set(course.week_names())
    found = {str(p.relative_to(course.root)): problems(p.read_text()) for p in modules}
    assert {path: lines for path, lines in found.items() if lines} == {}


UNTRANSLATABLE = [
    ('assert x, "plain"', "not _("),
    ('assert x, f"shape {x.shape}"', "not _("),
    ('assert x, _(f"shape {x.shape}")', "not _("),
    ('assert x, _("shape " + str(x))', "not _("),
    ('assert x, _("shape {}").format(x.shape)', "not _("),
    ('assert x, _("shape {0}").format(x)', "not _("),
    ('assert x, _("shape {shape}")', "placeholders ['shape'] but format() gives []"),
    ('assert x, _("shape {shape}").format(size=x.size)', "placeholders ['shape'] but format() gives ['size']"),
    ('assert x, _("a {0} b").format(**{"0": 1})', "hides the placeholders' names"),
    ('for _ in range(3):\n    pass', "binds _"),
    ('a, _ = 1, 2', "binds _"),
    ('assert x, _(message)', "_() takes one string literal"),
]


@pytest.mark.parametrize(("code", "says"), UNTRANSLATABLE)
def test_an_untranslatable_message_is_caught(code: str, says: str) -> None:
    found = problems(f"from autograder.i18n import _\n\n{code}\n")
    assert any(says in line for line in found), found


def test_a_named_placeholder_must_be_an_identifier() -> None:
    found = problems('from autograder.i18n import _\n\nassert x, _("a {0} b").format(x=1)\n')
    assert any("placeholders must be named" in line for line in found), found


def test_a_wrapped_module_without_the_import_and_an_instructor_message_are_judged_right() -> None:
    assert problems('assert x, _("text")\n') == ["uses _ without `from autograder.i18n import _`"]
    assert problems('assert x, "internal: the fixture drew nothing"\n') == []


def load(path: Path) -> ModuleType:
    """A hidden test module imported on its own (its helpers called directly, no pytest run)."""
    spec = importlib.util.spec_from_file_location(f"hidden_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def translations(locale: str, messages: dict[str, str]) -> gettext.GNUTranslations:
    """A compiled catalog, as Babel writes it for the grader to load."""
    catalog = Catalog(locale=locale)
    for source, translated in messages.items():
        catalog.add(source, translated, flags=["python-brace-format"])
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def test_feedback_reads_in_the_active_language_with_placeholders_reordered(course: Course) -> None:
    """A real hidden-test helper's failure message, with and without a language active."""
    sigmoid_cost = load(course.week("week03").tests_dir / "test_week03_sigmoid_cost.py")
    source = "{function} returned a {type_name}; a numpy array is expected"
    ja = translations("ja", {source: "{type_name} が返されました（{function}）：numpy配列が必要です"})

    def failure() -> str:
        with pytest.raises(AssertionError) as caught:
            sigmoid_cost.values([0.5], (1,), "sigmoid")
        return str(caught.value).splitlines()[0]

    assert failure() == "sigmoid returned a list; a numpy array is expected"
    with speaking(ja):
        assert failure() == "list が返されました（sigmoid）：numpy配列が必要です"
        # a message the catalog does not translate falls back to the source text
        with pytest.raises(AssertionError, match="^sigmoid should return an array of the same shape as its input"):
            sigmoid_cost.values(np.zeros((2, 3)), (4,), "sigmoid")
    assert failure().startswith("sigmoid returned a list")
