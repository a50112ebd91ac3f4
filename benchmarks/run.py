"""Benchmark: this project (--jobs 1, --jobs 2) against nbgrader autograde and otter run.

Run by hand, never in CI:  .venv/bin/python benchmarks/run.py [--n 100] [--competitor-n N]
[--scale 1000] [--skip nbgrader,otter]. Prints, per grader: median seconds per submission,
total wall time, peak memory (PSS of the whole process tree) and the ratio to ours; the
floor (the student's code and the tests' computation alone); with ``--scale`` a run of that
many submissions with --jobs 2 and its memory sampled as the batch grows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import competitors  # noqa: E402
from memory import run_sampled  # noqa: E402
from submissions import MIX, build  # noqa: E402

WORK = HERE / ".work"
PYTHON = str(HERE.parent / ".venv" / "bin" / "python")


def ours(folder: Path, jobs: int) -> dict:
    out = WORK / f"ours-{folder.name}-j{jobs}.json"
    code, wall, samples = run_sampled([PYTHON, str(HERE / "ours.py"), str(folder), str(out), "--jobs", str(jobs)])
    assert code == 0, f"ours.py --jobs {jobs} failed"
    data = json.loads(out.read_text())
    gaps = [b - a for a, b in zip(data["arrivals"], data["arrivals"][1:])]
    return {"median_s": statistics.median(gaps), "wall_s": wall, "peak_mb": max(m for _, m in samples),
            "samples": samples, "arrivals": data["arrivals"], "n": len(data["arrivals"])}


def floor(paths: list[Path]) -> float:
    """Mean floor over the batch's mix, seconds per submission."""
    kinds = {p.stem.split("_", 1)[1]: p for p in paths}
    reply = subprocess.run([PYTHON, str(HERE / "floor.py"), *map(str, kinds.values())], capture_output=True,
                           text=True, check=True)
    per_kind = {Path(k).stem.split("_", 1)[1]: v for k, v in json.loads(reply.stdout).items()}
    return statistics.mean(per_kind[p.stem.split("_", 1)[1]] for p in paths)


def nbgrader(paths: list[Path]) -> dict:
    course = WORK / "nbgrader"
    competitors.nbgrader_course(course, paths)
    prepare, argv = competitors.nbgrader_argv(course)
    for step in prepare:
        subprocess.run(step, cwd=course, capture_output=True, check=True)
    code, wall, samples = run_sampled(argv, cwd=course, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gaps = competitors.nbgrader_times(course)
    return {"median_s": statistics.median(gaps), "wall_s": wall, "peak_mb": max(m for _, m in samples),
            "n": len(paths), "exit": code}


def otter(paths: list[Path]) -> dict:
    zip_path = WORK / "otter" / "autograder.zip"
    competitors.otter_autograder(zip_path)
    times, peaks, started = [], [], time.monotonic()
    for path in paths:
        out = WORK / "otter" / path.stem
        out.mkdir(parents=True, exist_ok=True)
        code, wall, samples = run_sampled(competitors.otter_argv(zip_path, path, out), stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
        if code != 0:
            raise RuntimeError(f"otter run failed on {path.name} (exit {code})")
        times.append(wall)
        peaks.append(max((m for _, m in samples), default=0.0))
    return {"median_s": statistics.median(times), "wall_s": time.monotonic() - started, "peak_mb": max(peaks),
            "n": len(paths), "exit": 0}


def row(name: str, r: dict, base: dict) -> str:
    ratio = r["median_s"] / base["median_s"]
    return (f"{name:<22} {r['n']:>6} {r['median_s'] * 1000:>10.0f} {r['wall_s']:>9.1f} {r['peak_mb']:>9.0f} "
            f"{ratio:>9.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--competitor-n", type=int, default=None, help="submissions for nbgrader/otter (default --n)")
    parser.add_argument("--scale", type=int, default=0, help="also grade this many with --jobs 2 (e.g. 1000)")
    parser.add_argument("--skip", default="", help="comma-separated: nbgrader, otter")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    paths = build(WORK / f"n{args.n}", args.n)
    theirs = paths[: args.competitor_n or args.n]
    results = {"ours --jobs 1": ours(paths[0].parent, 1), "ours --jobs 2": ours(paths[0].parent, 2)}
    base = results["ours --jobs 1"]
    for name, run in (("nbgrader autograde", nbgrader), ("otter run", otter)):
        if name.split()[0] in skip:
            continue
        try:
            results[name] = run(theirs)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"{name}: could not run: {exc}", file=sys.stderr)
    the_floor = floor(paths)
    print(f"\nweek 1, {args.n} submissions ({len(MIX)}-notebook mix), {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'grader':<22} {'subs':>6} {'median ms':>10} {'wall s':>9} {'peak MB':>9} {'vs ours':>10}")
    for name, r in results.items():
        print(row(name, r, base))
    print(f"floor (student code + tests, in-process): {the_floor * 1000:.0f} ms per submission; "
          f"ours --jobs 1 overhead beyond it: {(base['median_s'] - the_floor) * 1000:.0f} ms (median gap - mean floor)")
    if args.scale:
        big = build(WORK / f"n{args.scale}", args.scale)
        r = ours(big[0].parent, 2)
        print(f"\nscale: {args.scale} submissions, --jobs 2: wall {r['wall_s']:.1f} s, median gap "
              f"{r['median_s'] * 1000:.0f} ms, peak {r['peak_mb']:.0f} MB")
        arrivals = r["arrivals"]
        for t, mb in r["samples"][:: max(1, len(r["samples"]) // 12)]:
            done = sum(1 for a in arrivals if a <= t)
            print(f"  t={t:6.1f} s  graded {done:>5}  tree PSS {mb:7.0f} MB")


if __name__ == "__main__":
    main()
