"""The translatable text of a notebook (autograder/i18n/units.py): every message found is
one replacement, code still compiles, the identity gives every source notebook back, and
identifiers, math and inline code stay while words change."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.authoring.markers import BEGIN, END
from autograder.i18n.units import notebook_messages, translate_code, translate_markdown, translate_notebook
from tests.helpers import ROOT

SOURCES = sorted((ROOT / "source").glob("week*/week*.ipynb"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_translating_with_the_identity_gives_every_source_notebook_back(path: Path):
    nb = nbformat.read(path, as_version=4)
    assert [c.source for c in translate_notebook(nb, lambda text: text).cells] == [c.source for c in nb.cells]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_message_found_is_one_replacement_and_code_still_compiles(path: Path):
    nb = nbformat.read(path, as_version=4)
    found = [m.text for m in notebook_messages(nb)]
    asked: list[str] = []

    def lookup(text: str) -> str:
        asked.append(text)
        return "«" + text.replace("\n", "\n«") + "»\\ \"'"  # quotes, a backslash, a new line per line

    translated = translate_notebook(nb, lookup)
    assert sorted(asked) == sorted(found) and found
    for before, after in zip(nb.cells, translated.cells):
        if after.cell_type == "code" and not after.source.lstrip().startswith(("%", "!")):
            compile(after.source, path.name, "exec")  # still Python
            for marker in (BEGIN, END):  # solution markers untouched, one per line as before
                assert before.source.count(marker) == after.source.count(marker)


def test_identifiers_math_and_inline_code_stay_while_words_change():
    md = "## Task 1 (40 points): the update\n\nSet `w_` so that\n\n$$z = w^T x$$\n\n```python\nx = 1\n```"
    out = translate_markdown(md, lambda t: "訳:" + t)
    assert out.startswith("訳:## Task 1 (40 points): the update\n\n訳:Set `w_` so that\n\n$$z = w^T x$$\n\n```python")
    code = 'def f(x):\n    """Return x.\n\n    More text.\n    """\n    # add one\n    assert x, "x is empty"\n    return x + 1  # noqa: E501\n'
    out = translate_code(code, lambda t: t.upper())
    assert '"""RETURN X.\n\n    MORE TEXT.\n    """' in out and "# ADD ONE" in out and '"X IS EMPTY"' in out
    assert "def f(x):" in out and "return x + 1  # noqa: E501" in out  # code and tool comments stay
    assert translate_code("%matplotlib inline\nx = 1  # one", str.upper) == "%matplotlib inline\nx = 1  # one"
