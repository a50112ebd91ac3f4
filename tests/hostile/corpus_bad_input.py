"""Hostile corpus: notebook files and text that stopped a whole batch, or cost it seconds.

Each once ended the batch for everyone (a lone surrogate reached a UTF-8 write, a
recursive walk hit Python's limit, a list stood where a mapping was expected) or made the
grader walk far more than it reads (an nbformat-3 notebook's 178,897 cells, 300,000
outputs). Now each is that submission's own outcome: graded like its honest part when
its code can run, ``error`` with a message when the file cannot be read. Moodle hand-ins
(zips, names, compression) and the marking sheet are fuzzed in tests/test_fuzz_inputs.py.

``BUILDERS`` makes the notebooks that cannot be written as cells (raw JSON, other
formats, other encodings); ``build=`` names one. ``correct`` builders start from the
same correct week-1 fixture as the corpus's ``correct`` base.
"""

from __future__ import annotations

import json
from pathlib import Path

CORRECT = Path(__file__).resolve().parent.parent / "fixtures" / "week01" / "correct_loop_eta_y_x.ipynb"


def _correct() -> dict:
    return json.loads(CORRECT.read_bytes())


def _dump(nb: object) -> bytes:
    return json.dumps(nb).encode()  # ensure_ascii: a lone surrogate is spelt "\ud800", as a file holds it


def surrogate_in_code() -> bytes:
    nb = _correct()
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "note = 'half a pair: \ud800'"})
    return _dump(nb)


def surrogate_in_answer() -> bytes:
    nb = _correct()
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = "my answer \ud800\udfff\udc00"
    return _dump(nb)


def metadata_list() -> bytes:
    nb = _correct()
    for cell in nb["cells"]:
        cell["metadata"] = {"autograder": ["task", 3]}
    nb["metadata"] = {"autograder": ["week", 1]}
    return _dump(nb)


def metadata_900_deep() -> bytes:
    """Under JSON's nesting limit, over what a recursive validator survives."""
    nb = _correct()
    deep: dict = {}
    node = deep
    for _ in range(900):
        node["a"] = node = {}
    nb["cells"][0]["metadata"] = deep
    return _dump(nb)


def metadata_100000_deep() -> bytes:
    nb = _dump(_correct())
    return nb.replace(b'"metadata": {', b'"metadata": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b", ", 1)


def _v3(code: list[str], extra: int = 0) -> bytes:
    cells = [{"cell_type": "heading", "level": 1, "metadata": {}, "source": "Week 1"}]
    cells += [{"cell_type": "code", "input": source, "language": "python", "metadata": {}, "outputs": [],
               "prompt_number": None, "collapsed": False} for source in code]
    cells += [{"cell_type": "code", "input": f"x{i} = {i}", "language": "python", "metadata": {}, "outputs": []}
              for i in range(extra)]
    return _dump({"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""},
                  "worksheets": [{"cells": cells, "metadata": {}}]})


def v3_correct() -> bytes:
    return _v3([c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                for c in _correct()["cells"] if c["cell_type"] == "code"])


def v3_178897_cells() -> bytes:
    """19.7 MB of nbformat 3: skipped the 10,000-cell check and cost 34 s on main."""
    return _v3([], extra=178_897)


def outputs_300000() -> bytes:
    """17 MB of small outputs: nbformat's validation walked them for 26 s."""
    nb = _correct()
    output = {"output_type": "stream", "name": "stdout", "text": "x"}
    nb["cells"] += [{"cell_type": "code", "id": f"o{i}", "metadata": {}, "execution_count": None,
                     "outputs": [output] * 30, "source": ""} for i in range(9_000)]
    return _dump(nb)


def number_5000_digits() -> bytes:
    return _dump(_correct()).replace(b'"metadata": {', b'"metadata": {"n": ' + b"7" * 5000 + b", ", 1)


def nbformat_5() -> bytes:
    nb = _correct()
    nb["nbformat"] = 5
    return _dump(nb)


def source_not_text() -> bytes:
    nb = _correct()
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "source": {"code": "x = 1"}})
    return _dump(nb)


def cells_that_are_not_cells() -> bytes:
    nb = _correct()
    nb["cells"] += [None, 7, "a cell", [], {"cell_type": 3}, {"source": "no type"}, {"cell_type": "code"}]
    return _dump(nb)


def utf16() -> bytes:
    return CORRECT.read_text("utf-8").encode("utf-16")


def byte_order_mark() -> bytes:
    return b"\xef\xbb\xbf" + CORRECT.read_bytes()


BUILDERS = {f.__name__: f for f in (
    surrogate_in_code, surrogate_in_answer, metadata_list, metadata_900_deep, metadata_100000_deep, v3_correct,
    v3_178897_cells, outputs_300000, number_5000_digits, nbformat_5, source_not_text, cells_that_are_not_cells,
    utf16, byte_order_mark)}

CASES = [
    # -- text no writer can encode: lone surrogates from the student's own code -----------------
    dict(name="surrogate_exception_message", attack="a cell raises an exception whose message is a lone surrogate",
         base="correct", cells=["raise ValueError(chr(0xD800) * 3)"]),
    dict(name="surrogate_exception_type", attack="a cell raises an exception class named with a lone surrogate",
         base="correct", cells=["raise type(chr(0xDC00) + 'Error', (Exception,), {})(chr(0xDFFF))"]),
    dict(name="surrogate_in_hidden_test_call", attack="the code the hidden tests call raises lone surrogates",
         base="leak", cells=["loot = chr(0xD800) * 400"]),
    dict(name="surrogate_printed", attack="print and display lone surrogates and NUL",
         base="correct", cells=["import sys\nprint(chr(0xD800) + '\\0')\nsys.stderr.write(chr(0xDBFF) * 1000)\n"
                                "from IPython.display import display, HTML\ndisplay(HTML(chr(0xD800)))"]),
    dict(name="nul_in_code", attack="a code cell holding a NUL byte (Python refuses to compile it)",
         base="correct", cells=["x = 1\0"]),
    dict(name="surrogate_in_code", attack="a code cell whose source holds an escaped lone surrogate",
         base="correct", build="surrogate_in_code"),
    dict(name="surrogate_in_answer", attack="markdown answers holding lone surrogates (the marking sheet)",
         base="correct", build="surrogate_in_answer"),
    # -- metadata that is not the shape the grader reads ------------------------------------------
    dict(name="metadata_autograder_list", attack='cell metadata {"autograder": ["task", 3]}',
         base="correct", build="metadata_list"),
    dict(name="metadata_900_deep", attack="cell metadata nested 900 levels (a recursive validator's limit)",
         base="correct", build="metadata_900_deep"),
    dict(name="metadata_100000_deep", attack="notebook metadata nested 100,000 levels deep",
         base="leak", status="error", build="metadata_100000_deep"),
    dict(name="number_5000_digits", attack="a number of 5,000 digits (Python's int() refuses it)",
         base="leak", status="error", build="number_5000_digits"),
    # -- other formats and shapes ------------------------------------------------------------------
    dict(name="nbformat3_correct", attack="the correct code as an nbformat 3 notebook (worksheets, input)",
         base="correct", build="v3_correct"),
    dict(name="nbformat3_178897_cells", attack="19.7 MB of nbformat 3: 178,897 cells under worksheets",
         base="leak", status="error", build="v3_178897_cells"),
    dict(name="outputs_300000", attack="300,000 small outputs (17 MB) for a validator to walk",
         base="correct", build="outputs_300000"),
    dict(name="nbformat_5", attack="a notebook format that does not exist", base="leak", status="error",
         build="nbformat_5"),
    dict(name="source_not_text", attack="a code cell whose source is an object", base="leak", status="error",
         build="source_not_text"),
    dict(name="cells_not_cells", attack="null, numbers, strings and typeless objects among the cells",
         base="correct", build="cells_that_are_not_cells"),
    dict(name="utf16_notebook", attack="the notebook saved as UTF-16", base="leak", status="error", build="utf16"),
    dict(name="byte_order_mark", attack="the notebook saved with a UTF-8 byte order mark", base="correct",
         build="byte_order_mark"),
]
