"""Grade a folder of week-1 notebooks with this project; write timings as JSON.

Run as a subprocess by ``run.py`` (so its memory is measured alone):
``python benchmarks/ours.py FOLDER OUT.json --jobs N``. ``--jobs 1`` is one ``grade()``
in this process (what the CLI does today); ``--jobs N`` is ``grade_parallel``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from autograder.course import Course
from autograder.execution import Sandboxed
from autograder.grading.grader import grade
from autograder.grading.parallel import grade_parallel
from autograder.submission import Submission


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    started = time.monotonic()
    week = Course.locate(Path(__file__).resolve().parent.parent).week("week01")
    paths = sorted(args.folder.glob("*.ipynb"))
    submissions = (Submission(origin=str(p), key=p.stem, content=p.read_bytes()) for p in paths)
    arrivals: list[float] = []
    durations: list[float] = []

    def on_result(result) -> None:
        arrivals.append(time.monotonic() - started)
        durations.append(result.duration_s)

    if args.jobs == 1:
        results = grade(week, submissions, isolation=Sandboxed(), on_result=on_result)
    else:
        results = grade_parallel(week, submissions, jobs=args.jobs, on_result=on_result)
    args.out.write_text(json.dumps({
        "wall_s": time.monotonic() - started, "arrivals": arrivals, "durations": durations,
        "scores": [r.score for r in results], "statuses": [r.status.value for r in results],
    }))


if __name__ == "__main__":
    main()
