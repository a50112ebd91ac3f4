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

import psutil

from autograder.course import Course
from autograder.grading.parallel import grade_parallel
from autograder.submission import Submission


def tree_cpu_seconds(root: psutil.Process) -> dict[str, float]:
    """CPU seconds used so far by ``root`` and its descendants, living or reaped (a worker
    that ended is counted in the zygote's children times), by role: ``parent`` (this
    process: the pool), ``graders`` (the grader processes: the hidden tests, pytest, the
    judging), ``sandbox`` (bubblewrap, the zygotes and their workers: the student's code and
    each submission's fork and namespaces). Unlike wall time, hardly changed by other
    people's load on shared cores."""
    roles = {"parent": 0.0, "graders": 0.0, "sandbox": 0.0}
    for process in [root, *root.children(recursive=True)]:
        try:
            t = process.cpu_times()
            command = " ".join(process.cmdline())
        except psutil.Error:
            continue  # ended between listing and reading: its parent counts it once reaped
        role = "parent" if process.pid == root.pid else "graders" if "multiprocessing" in command else "sandbox"
        roles[role] += t.user + t.system + t.children_user + t.children_system
    return roles


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
    cpu: list[float] = []

    def on_result(result) -> None:
        arrivals.append(time.monotonic() - started)
        durations.append(result.duration_s)
        if len(arrivals) in (1, len(paths)):  # the tree's CPU at the first and the last result only:
            cpu.append(tree_cpu_seconds(psutil.Process()))  # reading every process's /proc costs ms

    results = grade_parallel(week, submissions, jobs=args.jobs, on_result=on_result)
    args.out.write_text(json.dumps({
        "wall_s": time.monotonic() - started, "arrivals": arrivals, "durations": durations,
        "cpu": cpu,  # at the first result and at the last
        "scores": [r.score for r in results], "statuses": [r.status.value for r in results],
    }))


if __name__ == "__main__":
    main()
