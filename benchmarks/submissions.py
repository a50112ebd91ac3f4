"""The benchmark's batch: N notebooks of one week, mixed right and wrong, from the test fixtures.

Each copy gets a markdown cell naming it, so no two files are byte-identical (a grader
that cached by hash would not get a free ride) while the code graded stays the fixture's.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# week 1, right, wrong in task 1, wrong in task 2, untouched: the mix of a real class
WEEK01_MIX = ["correct_loop_eta_y_x", "correct_raschka_y_minus_yhat", "correct_fresh_notebook", "wrong_no_bias",
              "wrong_ties_to_minus_one", "wrong_counts_every_sample", "wrong_unfitted_ppn", "untouched_stub",
              "cheat_allclose", "correct_loop_eta_y_x"]


def mix(week: str) -> list[str]:
    """The fixtures a batch of ``week`` cycles through: week 1's class mix (kept so its
    figures compare with earlier runs); for the other weeks every fixture the week keeps
    (right variants, plausible wrong answers, bypasses, attacks: what ``grade`` of the
    week's fixtures meets), in ``expectations.json``'s order."""
    if week == "week01":
        return WEEK01_MIX
    names = json.loads((FIXTURES / week / "expectations.json").read_text())
    return [Path(name).stem for name in names]


def kind_of(path: Path) -> str:
    """The fixture a batch notebook was copied from (``s00012_wrong_no_bias`` -> ``wrong_no_bias``)."""
    return path.stem.split("_", 1)[1]


def build(folder: Path, n: int, week: str = "week01") -> list[Path]:
    """Write ``n`` notebooks of ``week`` into ``folder`` (kept if already there); their paths, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds = mix(week)
    paths = []
    for index in range(n):
        kind = kinds[index % len(kinds)]
        path = folder / f"s{index:05d}_{kind}.ipynb"
        if not path.exists():
            notebook = nbformat.read(FIXTURES / week / f"{kind}.ipynb", as_version=4)
            cell = nbformat.v4.new_markdown_cell(f"submission {index}")
            cell.pop("id", None)
            notebook.cells.insert(0, cell)
            nbformat.write(notebook, path)
        paths.append(path)
    return paths
