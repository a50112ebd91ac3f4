"""Grade a folder of one week's notebooks with this project; write timings as JSON.

Run as a subprocess by ``run.py`` (so its memory is measured alone):
``python benchmarks/ours.py FOLDER OUT.json --jobs N --week WEEK``: ``grade_parallel`` with N grader
processes, what the CLI does for every ``--jobs`` (1 included: a grader process is what
bounds the grader's own work).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from autograder.course import Course
from autograder.grading.parallel import grade_parallel
from autograder.submission import Submission


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--week", default="week01")
    args = parser.parse_args()
    started = time.monotonic()
    week = Course.locate(Path(__file__).resolve().parent.parent).week(args.week)
    paths = sorted(args.folder.glob("*.ipynb"))
    submissions = (Submission(origin=str(p), key=p.stem, content=p.read_bytes()) for p in paths)
    arrivals: list[float] = []
    durations: list[float] = []

    def on_result(result) -> None:
        arrivals.append(time.monotonic() - started)
        durations.append(result.duration_s)

    results = grade_parallel(week, submissions, jobs=args.jobs, on_result=on_result)
    args.out.write_text(json.dumps({
        "wall_s": time.monotonic() - started, "arrivals": arrivals, "durations": durations,
        "scores": [r.score for r in results], "statuses": [r.status.value for r in results],
    }))


if __name__ == "__main__":
    main()
