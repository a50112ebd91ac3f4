"""No single hand-in stops a batch or costs another student's result.

Each case is one hostile or broken hand-in in a Moodle export beside an honest one. The
job (``run_batch``, what ``autograder grade`` runs) must end normally with one result per
participant, the honest one graded as it would be alone, every output written (gradebook,
JSON, worksheet, feedback zip, marking sheet, report), and the bad one reported with a
clear message. The known cases first, then hypothesis fuzzing the notebook, its cells and
metadata, and the hand-in's files.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.batch import GradingOptions, run_batch
from autograder.course import Course
from autograder.results import Status

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parent.parent
HONEST = (ROOT / "tests" / "fixtures" / "week01" / "correct_loop_eta_y_x.ipynb").read_bytes()
HONEST_FOLDER = "Honest Student_100_assignsubmission_file"


def notebook_json(cells: list[dict], metadata: dict | None = None) -> bytes:
    return json.dumps({"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def code(source: str, metadata: dict | None = None) -> dict:
    return {"cell_type": "code", "source": source, "metadata": metadata or {}, "outputs": [], "execution_count": None}


def markdown(source: str, metadata: dict | None = None) -> dict:
    return {"cell_type": "markdown", "source": source, "metadata": metadata or {}}


def honest_with(cell: dict, *, first: bool = False) -> bytes:
    """The honest notebook plus one extra cell, last (or first)."""
    nb = json.loads(HONEST)
    nb["cells"].insert(0 if first else len(nb["cells"]), cell)
    return json.dumps(nb).encode()


def nested(depth: int) -> bytes:
    return b'{"cells": [], "metadata": {"x": ' + b"[" * depth + b"]" * depth + b'}, "nbformat": 4, "nbformat_minor": 5}'


def lzma_zip_with_a_corrupt_member() -> bytes:
    """A student's zip whose one LZMA member has garbage in the middle of its stream."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_LZMA) as archive:
        archive.writestr("week01.ipynb", HONEST)
    data = bytearray(buffer.getvalue())
    stream = 30 + len("week01.ipynb") + 9  # local header, name, LZMA properties
    for offset in range(stream + 20, stream + 60):
        data[offset] ^= 0xFF
    return bytes(data)


def manual_task_answer(text: str) -> bytes:
    """The honest notebook with ``text`` as its answer to task 3 (graded by hand)."""
    nb = json.loads(HONEST)
    [cell] = [c for c in nb["cells"] if c.get("metadata", {}).get("autograder", {}).get("answer") == 3]
    cell["source"] = text
    return json.dumps(nb).encode()


def nbformat3_many_cells(count: int) -> bytes:
    """An old-format notebook whose cells sit under ``worksheets`` (34 s of upgrading once)."""
    cell = {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": [], "metadata": {}}
    return json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                       "worksheets": [{"cells": [cell] * count, "metadata": {}}]}).encode()


CASES: dict[str, dict[str, bytes]] = {
    "surrogate_in_an_exception": {"week01.ipynb": honest_with(code("raise ValueError('\\ud800 caught')"))},
    "surrogate_in_a_markdown_answer": {"week01.ipynb": manual_task_answer("my answer \ud800")},
    "notebook_nested_100000_deep": {"week01.ipynb": nested(100_000)},
    "two_notebooks_one_nested_deep": {"week01.ipynb": nested(100_000), "other.ipynb": nested(100_000)},
    "metadata_of_the_wrong_shape": {"week01.ipynb": honest_with(code("x = 1", {"autograder": ["task", 3]}), first=True)},
    "notebook_metadata_of_the_wrong_shape": {"week01.ipynb": notebook_json([code("x = 1")], {"autograder": ["week", 1]})},
    "corrupt_lzma_zip": {"week01.zip": lzma_zip_with_a_corrupt_member()},
    "nbformat3_178897_cells": {"week01.ipynb": nbformat3_many_cells(178_897)},
}


def export(tmp_path: Path, bad: dict[str, bytes]) -> Path:
    path = tmp_path / "ML101-Week 1-42.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{HONEST_FOLDER}/week01.ipynb", HONEST)
        for name, data in bad.items():
            archive.writestr(f"Bad Student_200_assignsubmission_file/{name}", data)
    return path


@pytest.fixture(scope="module")
def week(course: Course):
    return course.week("week01")


def run(week, tmp_path: Path, bad: dict[str, bytes], jobs: int = 1):
    out = tmp_path / "out"
    outcome = run_batch(week, [export(tmp_path, bad)], GradingOptions(out_dir=out, jobs=jobs))
    by_name = {r.participant.full_name: r for r in outcome.results}
    assert set(by_name) == {"Honest Student", "Bad Student"}
    assert by_name["Honest Student"].status == Status.GRADED and by_name["Honest Student"].score == 60.0
    for name in ("report.html", "grades.csv", "feedback.zip", "gradebook.sqlite"):
        assert (out / name).exists(), name
    return by_name["Bad Student"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_hand_in_is_one_result_and_the_batch_goes_on(week, tmp_path: Path, case: str):
    bad = run(week, tmp_path, CASES[case])
    text = json.dumps([bad.messages, [t.output for t in bad.tests]])
    assert "\ud800" not in text and "Traceback" not in text
    if bad.status == Status.ERROR:
        assert bad.messages and all(len(m) < 600 for m in bad.messages)


def test_a_surrogate_crosses_between_grader_processes(week, tmp_path: Path):
    bad = run(week, tmp_path, CASES["surrogate_in_an_exception"], jobs=2)
    # the honest notebook ran whole before its last cell raised: graded as the honest one is
    assert bad.status is Status.GRADED and bad.score == 60.0, (bad.status, bad.messages)


# -- fuzzing ---------------------------------------------------------------------------------
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                  st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=10)
metadata = st.one_of(json_values, st.fixed_dictionaries({"autograder": json_values}),
                     st.fixed_dictionaries({"autograder": st.dictionaries(
                         st.sampled_from(["task", "points", "answer", "week", "check", "manual", "title"]),
                         json_values, max_size=3)}))
cells = st.one_of(
    st.builds(lambda s, m: code(s, m), st.text(max_size=40), metadata),
    st.builds(lambda s, m: markdown(s, m), st.text(max_size=40), metadata),
    st.fixed_dictionaries({"cell_type": st.text(max_size=8), "source": json_values, "metadata": json_values}),
    json_values,
)
notebooks = st.one_of(
    st.builds(lambda cs, m: notebook_json(cs, m if isinstance(m, dict) else {"x": m}), st.lists(cells, max_size=4), metadata),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.binary(max_size=200),
    st.builds(lambda c: honest_with(c), cells),
)
hand_ins = st.dictionaries(st.sampled_from(["week01.ipynb", "other.ipynb", "week01.zip", "notes.txt", "a/b.ipynb"]),
                           notebooks, min_size=1, max_size=3)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(hand_ins)
def test_fuzzed_hand_ins_never_stop_the_batch(week, tmp_path_factory, files):
    run(week, tmp_path_factory.mktemp("fuzz"), files)
