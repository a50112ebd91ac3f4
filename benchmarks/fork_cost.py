"""What a fresh fork costs a notebook: its cells run in forks of a zygote against the same
cells run warm in-process (run by hand, not in CI).

    .venv/bin/python benchmarks/fork_cost.py tests/fixtures/week01/correct_fresh_notebook.ipynb [--forks 12]

The process preloads and warms up as the sandbox's zygote does (``zygote.preload``: the
imports, the warm-up, the frozen collector, the filled ``malloc`` free lists, the huge
pages), then forks ``--forks`` children: one set that exits at once, one that runs the
notebook's cells once through a ``WorkerCore`` and exits. Each child's CPU time (user and
system) and page faults come from ``wait4``; the same cells run in this process, warm,
give the in-process figure. No sandbox: no namespaces, filter or limits, and none of the
child's set-up before it serves (a sandboxed worker has taken ~1,030 faults by then, a bare
fork and exit here ~430; see benchmarks/README.md).

Page faults are the load-proof figure here: CPU times on a shared machine move by 10-20 %
between runs, a child's fault count by a few faults.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as in the sandbox's workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--forks", type=int, default=12)
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's autograder (see run.OWN_TREE)
    from autograder.course import Course
    from autograder.notebook import code_cells
    from autograder.worker.core import WorkerCore
    from autograder.worker.zygote import preload

    shell = preload(list(Course.locate().grading.preload))
    cells = code_cells(args.notebook.read_bytes())

    def run_cells() -> None:
        core = WorkerCore(shell)
        with contextlib.redirect_stdout(io.StringIO()):  # what the cells print goes nowhere, as in a worker
            for number, source in enumerate(cells, start=1):
                core.run_cell(source, number)

    def forked(body: bool) -> tuple[float, float, int]:
        pid = os.fork()
        if pid == 0:
            try:
                if body:
                    run_cells()
            finally:
                os._exit(0)
        _, _, usage = os.wait4(pid, 0)
        return usage.ru_utime * 1000, usage.ru_stime * 1000, usage.ru_minflt

    def warm() -> float:
        shell.reset(new_session=False)
        started = time.process_time()
        run_cells()
        return (time.process_time() - started) * 1000

    sys.stdout.flush()
    for label, sample in (("fork, exit", lambda: forked(False)), ("fork, cells, exit", lambda: forked(True))):
        runs = [sample() for _ in range(args.forks)][2:]  # the first forks meet a colder machine
        user, system, faults = (statistics.median(run[i] for run in runs) for i in range(3))
        print(f"{label:<20} child CPU user {user:6.1f} ms, system {system:6.1f} ms, {faults:6.0f} page faults "
              f"(median of {len(runs)})")
    cells_warm = statistics.median([warm() for _ in range(args.forks)][2:])
    print(f"{'cells in-process':<20} CPU {cells_warm:6.1f} ms (warm, median)")


if __name__ == "__main__":
    main()
