"""No input stops a batch: fuzzing every way in, and the cases that once did.

The property, stage by stage and then end to end: whatever the notebook JSON, the Moodle
export (zip or folder, names, encodings, compression), the answer cells and metadata
hold, each stage returns one outcome per submission (a result, a status and a message,
a sheet row) and never raises; what it writes can be read back as UTF-8; an honest
submission graded beside the hostile ones gets exactly what it gets alone.

The stages are fuzzed on their own with hypothesis (fast: no sandbox), then whole
batches are graded for real (``run_batch`` and the ``autograder grade`` command, with
``--jobs 2``) with every case that stopped a batch on main, and with batches drawn by
hypothesis.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.batch import GradingOptions, run_batch
from autograder.course import Course
from autograder.exceptions import SubmissionError
from autograder.formats.result_json import from_dict, to_dict
from autograder.gradebook import Gradebook
from autograder.hand_ins import collect
from autograder.manual import read_marks, write_manual_sheet
from autograder.moodle.export import read_export
from autograder.notebook import MAX_CELLS, code_cells, read_notebook
from autograder.results import Participant, Status, SubmissionResult, TaskResult
from autograder.results import TestResult as TestResultRecord  # not collected as a test class
from autograder.submission import Submission

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "tests" / "fixtures" / "week01" / "correct_loop_eta_y_x.ipynb").read_bytes()
GOOD_SCORES = {1: 40.0, 2: 20.0}  # what GOOD earns on its autograded tasks, alone
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- strategies ------------------------------------------------------------------------------
# Text with everything a JSON file can spell: lone surrogates, NUL, controls, any script.
any_text = st.text(st.characters(exclude_categories=()), max_size=40)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(any_text, inner, max_size=4), max_leaves=12)
sources = any_text | st.lists(any_text, max_size=3) | json_values
cell_types = st.sampled_from(["code", "markdown", "raw", "heading", "html"]) | json_values
autograder_meta = st.fixed_dictionaries({}, optional={
    "task": json_values, "answer": st.integers(1, 4) | json_values, "week": st.sampled_from(["week01", "1"]) | json_values,
    "points": json_values, "manual": json_values})
metadata = st.one_of(json_values, st.fixed_dictionaries({"autograder": autograder_meta | json_values}))


@st.composite
def cells(draw: st.DrawFn, *, v3: bool = False) -> object:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)  # not a cell at all
    cell = {"cell_type": draw(cell_types), "metadata": draw(metadata),
            ("input" if v3 else "source"): draw(sources)}
    if draw(st.booleans()):
        cell["outputs"] = draw(json_values)
    if v3 and draw(st.booleans()):
        cell["level"] = draw(json_values)
    return cell


@st.composite
def notebook_json(draw: st.DrawFn) -> object:
    """A notebook-shaped JSON value: v4 or v3 layout, any cell, any metadata, or not a notebook."""
    kind = draw(st.sampled_from(["v4", "v3", "other"]))
    if kind == "other":
        return draw(json_values)
    version = draw(st.just(4 if kind == "v4" else 3) | json_values)
    if kind == "v4":
        body = {"cells": draw(st.lists(cells(), max_size=6) | json_values)}
    else:
        sheets = st.lists(st.fixed_dictionaries({"cells": st.lists(cells(v3=True), max_size=5)}) | json_values,
                          max_size=3)
        body = {"worksheets": draw(sheets | json_values)}
    return {"nbformat": version, "metadata": draw(metadata), **body}


def good_with(answer: str = "", meta: object = None) -> bytes:
    """The correct week-1 notebook, its task-3 answer replaced, its first cell's metadata set."""
    nb = json.loads(GOOD)
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("autograder", {}).get("answer") == 3 and answer:
            cell["source"] = answer
    if meta is not None:
        nb["cells"][0]["metadata"] = meta
    return json.dumps(nb).encode()  # ensure_ascii: a lone surrogate is spelt "\ud800", as a file holds it


@st.composite
def mutated_good(draw: st.DrawFn) -> bytes:
    """The correct notebook with bytes flipped, cut or inserted."""
    data = bytearray(GOOD)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        how = draw(st.sampled_from(["flip", "cut", "insert"]))
        if how == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif how == "cut":
            del data[at:]
            break
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


notebook_bytes = st.one_of(
    notebook_json().map(lambda v: json.dumps(v).encode()),
    mutated_good(),
    any_text.map(lambda t: good_with(answer=t)),
    metadata.map(lambda m: good_with(meta=m)),
    st.binary(max_size=64),
)


def utf8(text: str) -> bytes:
    """Fails the test when ``text`` cannot be written as UTF-8."""
    return text.encode("utf-8")


# -- stage 1: reading a notebook -------------------------------------------------------------
@pytest.mark.slow
@FUZZ
@given(notebook_bytes)
def test_any_notebook_reads_or_gets_a_clear_submission_error(content: bytes) -> None:
    try:
        nb = read_notebook(content)
        cells_ = code_cells(content)
    except SubmissionError as err:
        assert str(err) and utf8(str(err))
        return
    assert len(nb.cells) <= MAX_CELLS
    for cell in nb.cells:
        assert isinstance(cell.cell_type, str) and isinstance(cell.source, str)
        utf8(cell.source), utf8(cell.cell_type)
        mine = cell.metadata.get("autograder", {})
        assert isinstance(mine, dict) and all(not isinstance(v, (dict, list)) for v in mine.values())
    assert all(isinstance(c, str) and c.strip() for c in cells_)


def test_the_correct_notebook_reads_the_same_as_nbformat_reads_it() -> None:
    ours = read_notebook(GOOD)
    theirs = nbformat.reads(GOOD.decode(), as_version=4)
    assert [(c.cell_type, c.source) for c in ours.cells] == [(c.cell_type, c.source) for c in theirs.cells]
    answers = [c.metadata.get("autograder", {}).get("answer") for c in ours.cells]
    assert answers == [c.metadata.get("autograder", {}).get("answer") for c in theirs.cells]


def v3_notebook(code: list[str], *, extra_cells: int = 0) -> bytes:
    cells_ = [{"cell_type": "heading", "level": 2, "metadata": {}, "source": "Task 1"}]
    cells_ += [{"cell_type": "code", "collapsed": False, "input": c.splitlines(keepends=True), "language": "python",
                "metadata": {}, "outputs": [{"output_type": "stream", "stream": "stdout", "text": "x"}],
                "prompt_number": 1} for c in code]
    cells_ += [{"cell_type": "code", "input": f"x{i} = {i}", "language": "python", "metadata": {}, "outputs": []}
               for i in range(extra_cells)]
    return json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""},
                       "worksheets": [{"cells": cells_, "metadata": {}}]}).encode()


@pytest.mark.slow
def test_an_nbformat_3_notebook_is_read_and_a_huge_one_refused_before_any_cell_is_walked() -> None:
    code = [c.source for c in nbformat.reads(GOOD.decode(), as_version=4).cells if c.cell_type == "code"]
    assert code_cells(v3_notebook(code)) == [c for c in code if c.strip()]
    assert read_notebook(v3_notebook(code)).cells[0].source == "## Task 1"
    huge = v3_notebook([], extra_cells=178_896)  # the 19.7 MB notebook of the issue: 34 s on main
    assert len(huge) < 20 << 20
    started = time.process_time()
    with pytest.raises(SubmissionError, match="178897 cells, over the 10000 limit"):
        read_notebook(huge)
    assert time.process_time() - started < 5  # parsing the JSON itself, no walk over the cells


@pytest.mark.slow
def test_outputs_are_never_walked() -> None:
    """300,000 small outputs (17 MB): nbformat's validation took 26 s over them."""
    nb = json.loads(GOOD)
    output = {"output_type": "stream", "name": "stdout", "text": "x"}
    nb["cells"] += [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
                     "outputs": [output] * 30, "source": ""} for i in range(9_000)]
    content = json.dumps(nb).encode()
    started = time.process_time()
    assert code_cells(content) == code_cells(GOOD)
    assert time.process_time() - started < 5


@pytest.mark.parametrize(("content", "says"), [
    pytest.param(b'{"nbformat": 4, "cells": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                 "nests too deeply", id="nested-100000"),
    pytest.param(b'{"nbformat": 4, "cells": [], "n": ' + b"9" * 5000 + b"}", "not a notebook Python can read",
                 id="5000-digit-number"),
    pytest.param(b'{"nbformat": 5, "cells": []}', "format 5 is not supported", id="nbformat-5"),
    pytest.param(b'{"nbformat": 3, "worksheets": {}}', "without a list of worksheets", id="v3-no-list"),
    pytest.param(b'{"nbformat": 4, "cells": {"a": 1}}', "no list of cells", id="cells-not-a-list"),
    pytest.param(b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 42}]}', "cell 1's source is not text",
                 id="source-a-number"),
    pytest.param('{"cells": []}'.encode("utf-16"), "not UTF-8", id="utf-16"),
])
def test_unreadable_notebooks_say_what_is_wrong(content: bytes, says: str) -> None:
    with pytest.raises(SubmissionError, match=says):
        read_notebook(content)


def test_odd_but_readable_notebooks_are_gradable() -> None:
    """List metadata, deep metadata, surrogates, cells that are not cells: the code is still there."""
    deep: dict = {}
    node = deep
    for _ in range(900):  # under JSON's nesting limit, over a recursive validator's
        node["a"] = node = {}
    expected = code_cells(GOOD)
    for meta in ({"autograder": ["task", 3]}, {"autograder": {"answer": {"x": 1}}}, deep, [1, 2], None, "x"):
        assert code_cells(good_with(meta=meta)) == expected, meta
    nb = json.loads(GOOD)
    nb["cells"] += [None, 3, "cell", {"cell_type": 7}, {"no": "type"}]
    assert code_cells(json.dumps(nb).encode()) == expected
    nb = json.loads(GOOD)
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "s = '\ud800'"})
    assert code_cells(json.dumps(nb).encode())[-1] == "s = '\ufffd'"


# -- stage 2: the marking sheet --------------------------------------------------------------
@pytest.fixture(scope="module")
def week01(course: Course):
    return course.week("week01")


@pytest.mark.slow
@settings(FUZZ, max_examples=60)
@given(st.lists(notebook_bytes, min_size=1, max_size=4), st.lists(any_text, min_size=4, max_size=4))
def test_the_marking_sheet_is_written_whatever_the_notebooks_hold(week01, tmp_path_factory, contents, names):
    folder = tmp_path_factory.mktemp("sheet")
    subs = [Submission(origin=f"{i}.ipynb", key=f"k{i}", content=c,
                       participant=Participant(participant_id=str(i), full_name=names[i]))
            for i, c in enumerate(contents)]
    subs.append(Submission(origin="none", key="none", content=None, status=Status.ERROR, message=names[-1]))
    manual = [t for t in week01.tasks if t.manual]
    rows = write_manual_sheet(submissions=subs, tasks=week01.tasks, csv_path=folder / "m.csv",
                              html_path=folder / "m.html", title="week01")
    assert rows == len(subs) * len(manual)
    text = (folder / "m.csv").read_bytes().decode("utf-8")
    sheet = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline="")))
    assert len([row for row in sheet if row["key"]]) == rows  # one row per answer (and a row per group of similar ones)
    (folder / "m.html").read_bytes().decode("utf-8")
    assert read_marks(folder / "m.csv", tasks=week01.tasks) == {}  # nothing marked yet, and it parses


def test_the_marking_sheet_survives_each_case_that_stopped_it(week01, tmp_path: Path) -> None:
    deep = b'{"nbformat": 4, "cells": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    heading = json.loads(GOOD)
    heading["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "## Task " + "9" * 5000})
    subs = [Submission(origin="s", key="surrogate", content=good_with(answer="x\ud800y")),
            Submission(origin="d", key="deep", content=deep),
            Submission(origin="l", key="list-metadata", content=good_with(meta={"autograder": ["task", 3]})),
            Submission(origin="h", key="5000-digit-task", content=json.dumps(heading).encode()),
            Submission(origin="g", key="good", content=GOOD,
                       participant=Participant(participant_id="1", full_name="Bad \udcff name")),
            Submission(origin="t", key="140028-characters", content=good_with(answer="a" * 140_028))]
    write_manual_sheet(submissions=subs, tasks=week01.tasks, csv_path=tmp_path / "m.csv",
                       html_path=tmp_path / "m.html")
    assert read_marks(tmp_path / "m.csv", tasks=week01.tasks) == {}  # merge-manual reads what grade wrote
    rows = list(csv.DictReader(io.StringIO((tmp_path / "m.csv").read_text("utf-8-sig"), newline="")))
    answers = {(r["key"], r["task"]): r["answer"] for r in rows}
    good = read_notebook(GOOD)
    assert answers[("surrogate", "3")] == "x\ufffdy"
    assert answers[("deep", "3")].startswith("(the notebook cannot be read: the notebook's JSON nests too deeply")
    assert answers[("list-metadata", "3")] == answers[("good", "3")] == answers[("5000-digit-task", "3")]
    assert answers[("good", "3")] == next(c.source for c in good.cells if c.metadata.get("autograder", {}).get("answer") == 3)
    assert {r["full_name"] for r in rows if r["key"] == "good"} == {"Bad \ufffd name"}


# -- stage 3: the Moodle export --------------------------------------------------------------
COMPRESSIONS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
GOOD_PEOPLE = {"Good Ann_9000001_assignsubmission_file/week01.ipynb": "participant-9000001",
               "Good Bob_9000002_assignsubmission_file/sub/week01.ipynb": "participant-9000002"}
name_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="/"), max_size=12)
ids = st.integers(0, 899_999).map(str) | st.text("0123456789", min_size=1, max_size=25) | name_text
plugins = st.sampled_from(["file", "onlinetext", "comments"]) | name_text
file_names = st.sampled_from(["week01.ipynb", "a.ipynb", "week01.zip", "x.txt", ".hidden.ipynb", "onlinetext.html"]) \
    | name_text


@st.composite
def member_names(draw: st.DrawFn) -> str:
    """Moodle-like paths (4.1 and 3.x folders, flat, teams, blind) and names that are not."""
    who = draw(st.sampled_from(["Jane Doe", "Participant", "Group A", "山田 太郎", "Group A-Jane"]) | name_text)
    number, plugin = draw(ids), draw(plugins)
    inside = "/".join(draw(st.lists(file_names, min_size=1, max_size=3)))
    layout = draw(st.sampled_from(["folder", "folder3", "flat", "default", "junk"]))
    return {
        "folder": f"{who}_{number}_assignsubmission_{plugin}/{inside}",
        "folder3": f"{who}_{number}_assignsubmission_{plugin}_/{inside}",
        "flat": f"{who}_{number}_assignsubmission_{plugin}_{inside.replace('/', '_')}",
        "default": f"Default group_assignsubmission_{plugin}/{inside}",
        "junk": draw(any_text.filter(bool)),
    }[layout]


def zip_bytes(members: list[tuple[str, bytes, int]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, compression in members:
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return buffer.getvalue()


def damage(archive: bytes, draw: st.DrawFn) -> bytes:
    """Flip bytes inside members' compressed data (never the good people's): headers stay
    readable, contents do not."""
    data = bytearray(archive)
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        infos = [i for i in z.infolist() if i.filename not in GOOD_PEOPLE]
    for info in draw(st.lists(st.sampled_from(infos), max_size=3)) if infos else []:
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        if info.compress_size:
            at = start + draw(st.integers(0, info.compress_size - 1))
            data[at] ^= draw(st.integers(1, 255))
    return bytes(data)


@st.composite
def member_data(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["notebook", "zip", "bytes"]))
    if kind == "notebook":
        return draw(notebook_bytes)
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    inner = draw(st.lists(st.tuples(st.sampled_from(["week01.ipynb", "x/a.ipynb", "../up.ipynb", "b.txt"]) | any_text.filter(bool),
                                    notebook_bytes, st.sampled_from(COMPRESSIONS)), max_size=3))
    try:
        archive = zip_bytes(inner)
    except (ValueError, UnicodeEncodeError):  # a name zipfile cannot write
        archive = zip_bytes([])
    return damage(archive, draw)


@st.composite
def exports(draw: st.DrawFn) -> list[tuple[str, bytes, int]]:
    members = [(name, GOOD, zipfile.ZIP_DEFLATED) for name in GOOD_PEOPLE]
    for _ in range(draw(st.integers(1, 6))):
        name = draw(member_names())
        if name in GOOD_PEOPLE or any(tag in name for tag in ("_9000001_", "_9000002_")):
            continue
        members.append((name, draw(member_data()), draw(st.sampled_from(COMPRESSIONS))))
    return members


def check_submissions(found: list[Submission]) -> None:
    keys = [s.key for s in found]
    assert len(set(keys)) == len(keys)
    for s in found:
        assert s.key and "/" not in s.key and len(s.key.encode()) <= 120, s.key  # .<key>.json.<hex>.partial fits 255 bytes
        assert (s.content is None) == (s.status is not None), s
        if s.status is not None:
            assert s.message
    by_folder = {s.participant.folder: s for s in found if s.participant}
    for name in GOOD_PEOPLE:  # by folder: a "Default group" folder makes every id a group id (teams)
        good = by_folder[name.split("/")[0]]
        assert good.content == GOOD and good.status is None, good


@pytest.mark.slow
@FUZZ
@given(exports(), st.data())
def test_any_moodle_zip_gives_one_outcome_per_hand_in(tmp_path_factory, members, data) -> None:
    path = tmp_path_factory.mktemp("export") / "ML-Week 1-7.zip"
    try:
        archive = zip_bytes(members)
    except (ValueError, UnicodeEncodeError):  # a member name zipfile itself refuses to write
        members = [m for m in members if m[0] in GOOD_PEOPLE]
        archive = zip_bytes(members)
    path.write_bytes(damage(archive, data.draw) if data.draw(st.booleans()) else archive)
    check_submissions(read_export(path, week="week01"))


@pytest.mark.slow
@settings(FUZZ, max_examples=60)
@given(exports(), st.lists(st.binary(min_size=1, max_size=20).filter(lambda b: b"/" not in b and b"\0" not in b
                                                                      and b not in (b".", b"..")), max_size=3))
def test_any_moodle_folder_gives_one_outcome_per_hand_in(tmp_path_factory, members, raw_names) -> None:
    """The unpacked export, with file names that are not UTF-8 beside the rest."""
    root = tmp_path_factory.mktemp("folder")
    for name, data, _ in members:
        if "\0" in name or name.startswith("/") or ".." in name.split("/") or "" in name.split("/"):
            continue
        target = root / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.is_dir():
                target.write_bytes(data)
        except (OSError, UnicodeEncodeError):  # a path the file system refuses
            continue
    for raw in raw_names:
        folder = os.path.join(os.fsencode(root), b"Odd " + raw + b"_77_assignsubmission_file")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, raw + b".ipynb"), "wb") as handle:
            handle.write(GOOD)
    found = collect([root], week="week01")
    check_submissions(found)
    for s in found:  # every name can be written, once scrubbed where results are written
        json.dumps(to_dict(SubmissionResult(s.origin, s.key, Status.ERROR, participant=s.participant,
                                            messages=[s.message or ""]))).encode()


def lzma_hand_in() -> bytes:
    """A student's week01.zip whose LZMA member is corrupt (on main: LZMAError, nobody graded)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_LZMA) as archive:
        archive.writestr("week01.ipynb", GOOD)
    data = bytearray(buffer.getvalue())
    start = data.find(b"week01.ipynb") + len("week01.ipynb") + 20
    for at in range(start, start + 40):
        data[at] ^= 0x5A
    return bytes(data)


DEEP = b'{"nbformat": 4, "cells": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def known_export(path: Path) -> Path:
    """Every Moodle hand-in that stopped a batch on main, beside a good one."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("Good Ann_1_assignsubmission_file/week01.ipynb", GOOD)
        archive.writestr("Lzma Bob_2_assignsubmission_file/week01.zip", lzma_hand_in())
        archive.writestr("Deep Cy_3_assignsubmission_file/a.ipynb", DEEP)  # two notebooks: metadata is read
        archive.writestr("Deep Cy_3_assignsubmission_file/b.ipynb", b'{"nbformat": 4, "metadata": '
                         + b"[" * 100_000 + b"]" * 100_000 + b', "cells": []}')
        archive.writestr("Long Dee_" + "4" * 300 + "_assignsubmission_file/week01.ipynb", GOOD)
        archive.writestr("Inner Eve_5_assignsubmission_file/hw.zip",
                         zip_bytes([("week01.ipynb", GOOD, zipfile.ZIP_DEFLATED)])[:-30])
        # a name that is not UTF-8 under the UTF-8 flag: zipfile refuses the whole inner zip
        inner = zip_bytes([("wéek01.ipynb", GOOD, zipfile.ZIP_STORED)])
        archive.writestr("Names Fay_6_assignsubmission_file/week01.zip", inner.replace("é".encode(), b"\xff\xfe"))
        archive.writestr("Meta Gus_7_assignsubmission_file/x.ipynb", good_with(meta=None).replace(
            b'"metadata": {', b'"metadata": {"autograder": {"week": "' + b"9" * 5000 + b'"}, "x": {', 1))
        archive.writestr("Meta Gus_7_assignsubmission_file/y.ipynb", GOOD)
        archive.writestr("Jane [red]Doe[blink]_8_assignsubmission_file/week01.ipynb", GOOD)  # rich markup in a name
    return path


def test_each_moodle_hand_in_that_stopped_the_export_is_its_own_error(tmp_path: Path) -> None:
    found = {s.key: s for s in read_export(known_export(tmp_path / "e.zip"), week="week01")}
    assert found["participant-1"].content == GOOD
    assert found["participant-2"].status is Status.ERROR
    assert "cannot be read from the archive (LZMAError" in found["participant-2"].message
    assert found["participant-3"].status is Status.ERROR and "several notebooks" in found["participant-3"].message
    assert found["participant-5"].status is Status.ERROR and "hw.zip is corrupt" in found["participant-5"].message
    assert found["participant-6"].status is Status.ERROR and "week01.zip is corrupt" in found["participant-6"].message
    assert found["participant-7"].content == GOOD  # chosen by its metadata; the 5000-digit week is no week
    # 300 digits is no Moodle id: that folder is a stray, reported, its key short enough for a file name
    stray = [s for s in found.values() if s.key.startswith("unrecognised-")]
    assert len(stray) == 1 and stray[0].status is Status.ERROR and len(stray[0].key.encode()) <= 100
    assert found["participant-8"].content == GOOD
    # one result per hand-in, participant 4 being the stray: none lost, none split in two
    assert set(found) == {f"participant-{n}" for n in (1, 2, 3, 5, 6, 7, 8)} | {stray[0].key}


# -- stage 4: writing results ----------------------------------------------------------------
results = st.builds(
    SubmissionResult,
    submission=any_text, key=st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True), status=st.sampled_from(Status),
    tasks=st.builds(lambda: [TaskResult(1, 1.0, 40.0), TaskResult(3, 0.0, 20.0, manual=True, title="why")]),
    tests=st.lists(st.builds(TestResultRecord, name=any_text, task=st.just(1), score=st.just(1.0), max_score=st.just(40.0),
                             output=any_text), max_size=2),
    messages=st.lists(any_text, max_size=3), week=st.just("week01"),
    participant=st.none() | st.builds(Participant, participant_id=st.from_regex(r"[0-9]{1,6}", fullmatch=True),
                                      full_name=any_text, folder=any_text.map(lambda t: f"{t}_1_assignsubmission_file")),
)


@pytest.mark.slow
@settings(FUZZ, max_examples=40)
@given(st.lists(results, min_size=1, max_size=4, unique_by=lambda r: r.key))
def test_any_result_text_is_stored_and_written(week01, tmp_path_factory, generated) -> None:
    """Exception messages, names and origins with lone surrogates: gradebook, JSON, pipe, outputs."""
    from autograder.batch import write_outputs

    folder = tmp_path_factory.mktemp("out")
    with Gradebook.open(folder / "gradebook.sqlite") as book:
        for result in generated:
            book.record(result)
            document = to_dict(result)
            json.dumps(document, ensure_ascii=False).encode()  # what --jobs N sends between processes
            assert to_dict(from_dict(document)) == document
        stored = book.results("week01")
    assert [r.key for r in stored] == sorted(r.key for r in generated)
    write_outputs(week01, stored, folder)
    for path in folder.rglob("*"):
        if path.suffix in (".json", ".csv", ".html"):
            path.read_bytes().decode("utf-8")


# -- the whole path ----------------------------------------------------------------------------
def known_notebooks(folder: Path) -> list[Path]:
    """Every notebook file that stopped a batch on main, one file each, beside a good one."""
    nb = json.loads(GOOD)
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "raise ValueError(chr(0xD800))"})
    files = {
        "good.ipynb": GOOD,
        "surrogate_in_exception.ipynb": json.dumps(nb).encode(),
        "surrogate_in_answer.ipynb": good_with(answer="x\ud800y"),
        "nested_100000.ipynb": DEEP,
        "metadata_list.ipynb": good_with(meta={"autograder": ["task", 3]}),
        "v3_178897_cells.ipynb": v3_notebook([], extra_cells=178_897),
        "number_5000_digits.ipynb": b'{"nbformat": 4, "cells": [], "n": ' + b"9" * 5000 + b"}",
    }
    paths = []
    for name, content in files.items():
        (folder / name).write_bytes(content)
        paths.append(folder / name)
    return paths


EXPECTED = {"good": Status.GRADED, "surrogate_in_exception": Status.GRADED, "surrogate_in_answer": Status.GRADED,
            "nested_100000": Status.ERROR, "metadata_list": Status.GRADED, "v3_178897_cells": Status.ERROR,
            "number_5000_digits": Status.ERROR, "participant-1": Status.GRADED, "participant-2": Status.ERROR,
            "participant-3": Status.ERROR, "participant-5": Status.ERROR, "participant-6": Status.ERROR,
            "participant-7": Status.GRADED, "participant-8": Status.GRADED}
HONEST = {"good", "surrogate_in_exception", "surrogate_in_answer", "metadata_list", "participant-1", "participant-7",
          "participant-8"}


@pytest.mark.sandbox
def test_the_command_grades_every_case_that_stopped_a_batch(tmp_path: Path) -> None:
    """``autograder grade --jobs 2``: exit 0, one result per submission, the honest ones full marks."""
    paths = [*known_notebooks(tmp_path), known_export(tmp_path / "ML-Week 1-7.zip")]
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "week01", *map(str, paths), "--out", str(out),
                           "--json", "--jobs", "2"], cwd=ROOT, capture_output=True, timeout=900)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    results = {r["key"]: r for r in json.loads(done.stdout)}
    assert len(results) == len(collect(paths, week="week01")) == len(EXPECTED) + 1  # + the 300-digit stray
    for key, status in EXPECTED.items():
        assert results[key]["status"] == status, (key, results[key]["messages"])
        if status is Status.ERROR:
            assert results[key]["messages"] and all(results[key]["messages"]), key
    for key in HONEST:
        assert {t["task"]: t["score"] for t in results[key]["tasks"] if not t["manual"]} == GOOD_SCORES, key
    assert "\ufffd" in json.dumps(results["surrogate_in_exception"]["messages"], ensure_ascii=False)
    sheet = (out / "manual-marking.csv").read_text("utf-8-sig")
    assert "x\ufffdy" in sheet
    for name in ("report.html", "grades.csv", "feedback.zip", "manual-marking.html", "good.json"):
        assert (out / name).is_file(), name
    # again, as a table: every result comes from the gradebook, a name "[red]" is printed as text
    again = subprocess.run([sys.executable, "-m", "autograder", "grade", "week01", *map(str, paths), "--out", str(out)],
                           cwd=ROOT, capture_output=True, timeout=900, env={**os.environ, "COLUMNS": "300"})
    assert again.returncode == 0, again.stderr.decode(errors="replace")[-3000:]
    assert "Jane [red]Doe[blink]" in again.stdout.decode() and "taken from the gradebook" in again.stderr.decode()


@pytest.mark.sandbox
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(notebook_bytes, min_size=2, max_size=4), exports())
def test_a_batch_drawn_by_hypothesis_ends_with_one_result_each(week01, tmp_path_factory, notebooks, members) -> None:
    """Real grading (sandbox, hidden tests, gradebook, every output) of fuzzed notebooks and a
    fuzzed Moodle export: every submission gets a result, the honest ones get full marks."""
    folder = tmp_path_factory.mktemp("batch")
    paths = []
    for index, content in enumerate([GOOD, *notebooks]):
        paths.append(folder / f"n{index}.ipynb")
        paths[-1].write_bytes(content)
    try:
        archive = zip_bytes(members)
    except (ValueError, UnicodeEncodeError):
        archive = zip_bytes([m for m in members if m[0] in GOOD_PEOPLE])
    paths.append(folder / "export.zip")
    paths[-1].write_bytes(archive)
    expected = collect(paths, week="week01")
    outcome = run_batch(week01, paths, GradingOptions(out_dir=folder / "out", jobs=1))
    assert [r.key for r in outcome.results] == [s.key for s in expected]
    by_key = {r.key: r for r in outcome.results}
    folders = {s.participant.folder: s.key for s in expected if s.participant}  # not by key: see check_submissions
    for key in ("n0", *(folders[name.split("/")[0]] for name in GOOD_PEOPLE)):
        # graded, not scored exactly: each grading draws a fresh seed, and exact scores are
        # checked with fixed seeds elsewhere (test_course_fixtures, the hostile batch)
        assert by_key[key].status is Status.GRADED
    for r in outcome.results:
        if r.status is Status.ERROR:
            assert r.messages and all(r.messages)
    assert (folder / "out" / "manual-marking.csv").is_file() and (folder / "out" / "report.html").is_file()
