"""The audit's speed target: one week in under 2 minutes on 2 cores (run by hand).

    .venv/bin/python benchmarks/audit.py [--budget 95] [--jobs 2] [week01 ...]

Waits for a quiet machine like run.py, then audits each week with the default budget and
prints mutants generated, graded, killed, survivors (all explained or not), skipped,
cross-task losses (all, and those audit.toml does not declare), and the wall time of the
whole audit. ``--budget 100000`` grades every mutant instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]  # and this tree's autograder (see run.OWN_TREE)

from run import wait_for_quiet

from autograder.audit.run import DEFAULT_BUDGET_S, run_audit
from autograder.course import Course


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("weeks", nargs="*")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quiet-load", type=float, default=0.7)
    parser.add_argument("--patience", type=float, default=900)
    args = parser.parse_args()
    course = Course.locate(Path(__file__).resolve().parent.parent)
    load = wait_for_quiet(args.quiet_load, args.patience)
    print(f"load at start {load:.2f}, {os.cpu_count()} cores, --jobs {args.jobs}, budget {args.budget:g} s")
    print("week    mutants graded killed survivors unexplained skipped cross-task undeclared seconds")
    for name in args.weeks or course.week_names():
        started = time.monotonic()
        audit = run_audit(course.week(name), jobs=args.jobs, budget_s=args.budget)
        print(f"{name}  {len(audit.generated.mutants):7} {len(audit.outcomes):6} {len(audit.killed):6} "
              f"{len(audit.survivors):9} {len(audit.unexplained):11} {len(audit.skipped):7} "
              f"{len(audit.cross_losses):10} {len(audit.undeclared):10} {time.monotonic() - started:7.0f}", flush=True)


if __name__ == "__main__":
    main()
