"""The language feedback is written in, while one submission is graded.

Hidden tests write their failure messages as ``_("... {shape}").format(shape=...)``; the
grading loop makes the submission's language active (``speaking``) before its tests run,
so ``_`` returns the message in the student's language. Outside grading (``pytest source``,
the audit's reference run when no language is set) ``_`` returns the source text, so a
test module reads the same with or without translations.

A context variable, not a global: the service grades in threads, and one submission's
language must never leak into another's feedback.
"""

from __future__ import annotations

import gettext
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_active: ContextVar[gettext.NullTranslations | None] = ContextVar("autograder_translations", default=None)


def _(message: str) -> str:
    """``message`` in the active language, or as written when no translation is active or
    the catalog has no translation for it (the source language is the fallback)."""
    translations = _active.get()
    return message if translations is None else translations.gettext(message)


def untranslated(message: str) -> str:
    """The source text itself: the translation of the source language."""
    return message


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it now (translated where shown)."""
    return message


@contextmanager
def speaking(translations: gettext.NullTranslations | None) -> Iterator[None]:
    """Make ``translations`` the active ones for the block (``None``: the source text)."""
    token = _active.set(translations)
    try:
        yield
    finally:
        _active.reset(token)
