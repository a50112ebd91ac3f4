"""Profile the grader side of one week's batch with cProfile (run by hand, not in CI).

    .venv/bin/python benchmarks/profile_grader.py week04 [--n 16] [--top 40]

Grades ``--n`` submissions of the week (``submissions.py``'s mix) with ``grade()`` in this
process, sandboxed as always, under cProfile, after one warm-up submission (imports,
zygote start); prints the functions by cumulative time and the number of requests sent
to the worker (``Student._ask``) per submission: the round trips the benchmark's
overhead beyond the floor is mostly made of. The worker's side is the student's code and
the codec: ``floor.py`` times the first, ``py-spy`` on a worker the rest.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this tree's autograder too (see run.OWN_TREE)

from submissions import build  # noqa: E402

from autograder.course import Course  # noqa: E402
from autograder.execution import Sandboxed  # noqa: E402
from autograder.grading.grader import grade  # noqa: E402
from autograder.submission import Submission  # noqa: E402
from autograder.testing.student import Student  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("week")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--cpu", action="store_true", help="time with the process's CPU clock, not the wall clock")
    args = parser.parse_args()
    week = Course.locate(HERE.parent).week(args.week)
    paths = build(HERE / ".work" / args.week / f"profile{args.n + 1}", args.n + 1, args.week)
    subs = [Submission(origin=str(p), key=p.stem, content=p.read_bytes()) for p in paths]
    profile = cProfile.Profile(time.process_time) if args.cpu else cProfile.Profile()
    first = [True]

    def on_result(_result: object) -> None:
        if first[0]:  # the warm-up is done: measure the rest
            first[0] = False
            profile.enable()

    grade(week, subs, isolation=Sandboxed(), on_result=on_result)
    profile.disable()
    stats = pstats.Stats(profile)
    asks = next((v[1] for k, v in stats.stats.items()  # type: ignore[attr-defined]
                 if k[2] == "_ask" and k[0].endswith("student.py")), 0)
    print(f"{args.week}: {args.n} submissions profiled, {asks / args.n:.0f} requests to the worker per submission "
          f"({Student.__module__}._ask)")
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
