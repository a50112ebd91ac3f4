"""The benchmark's batch: N week-1 notebooks, mixed right and wrong, from the test fixtures.

Each copy gets a markdown cell naming it, so no two files are byte-identical (a grader
that cached by hash would not get a free ride) while the code graded stays the fixture's.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "week01"
# right, wrong in task 1, wrong in task 2, untouched: the mix of a real class
MIX = ["correct_loop_eta_y_x", "correct_raschka_y_minus_yhat", "correct_fresh_notebook", "wrong_no_bias",
       "wrong_ties_to_minus_one", "wrong_counts_every_sample", "wrong_unfitted_ppn", "untouched_stub",
       "cheat_allclose", "correct_loop_eta_y_x"]


def build(folder: Path, n: int) -> list[Path]:
    """Write ``n`` notebooks into ``folder`` (kept if already there); their paths, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(n):
        kind = MIX[index % len(MIX)]
        path = folder / f"s{index:05d}_{kind}.ipynb"
        if not path.exists():
            notebook = nbformat.read(FIXTURES / f"{kind}.ipynb", as_version=4)
            cell = nbformat.v4.new_markdown_cell(f"submission {index}")
            cell.pop("id", None)
            notebook.cells.insert(0, cell)
            nbformat.write(notebook, path)
        paths.append(path)
    return paths
