"""Benchmark: this project (--jobs 1, --jobs 2) against nbgrader autograde and otter run.

Run by hand, never in CI:  .venv/bin/python benchmarks/run.py [--n 100] [--competitor-n N]
[--scale 1000] [--skip nbgrader,otter] [--week weekNN | --all-weeks]. Prints, per week
(week 1 by default) and per grader: median seconds per submission,
total wall time, peak memory (PSS of the whole process tree) and the ratio to ours; the
floor (the student's code and the tests' computation alone); with ``--scale`` a run of that
many submissions with --jobs 2 and its memory sampled as the batch grows. Measuring starts
once the 1-minute load average is below ``--quiet-load`` (the cores are shared), and each
row says how many cores other people's processes kept busy meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# ours.py and floor.py import this tree's ``autograder``: a worktree of another commit that shares
# the virtualenv would otherwise measure the package its editable install points at
OWN_TREE = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}

import competitors  # noqa: E402
from memory import run_sampled  # noqa: E402
from submissions import build, kind_of, mix  # noqa: E402

WORK = HERE / ".work"
PYTHON = str(HERE.parent / ".venv" / "bin" / "python")


def ours(folder: Path, jobs: int, week: str) -> dict:
    out = WORK / f"ours-{week}-{folder.name}-j{jobs}.json"
    code, wall, samples = run_sampled([PYTHON, str(HERE / "ours.py"), str(folder), str(out), "--jobs", str(jobs),
                                       "--week", week], env=OWN_TREE)
    assert code == 0, f"ours.py --jobs {jobs} failed"
    data = json.loads(out.read_text())
    gaps = [b - a for a, b in zip(data["arrivals"], data["arrivals"][1:])]
    first, last = data["cpu"]  # the tree's CPU seconds by role at the first result and at the last
    per_role = {role: (last[role] - first[role]) / (len(data["arrivals"]) - 1) for role in first}
    return {"median_s": statistics.median(gaps), "mean_s": statistics.mean(gaps),
            "cpu_s": sum(per_role.values()), "cpu_roles": per_role,
            "wall_s": wall,
            "peak_mb": max(m for _, m in samples),
            "samples": samples, "arrivals": data["arrivals"], "n": len(data["arrivals"])}


def floor(paths: list[Path], week: str) -> tuple[dict[str, float], dict[str, float]]:
    """The floor of each fixture in the batch's mix, wall and CPU seconds per submission."""
    kinds = {kind_of(p): p for p in paths}
    # the student's code on one thread, as in the sandbox's workers (the hidden tests' own work
    # is put on one thread by the plugin, in the floor as when grading)
    one_thread = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    reply = subprocess.run([PYTHON, str(HERE / "floor.py"), week, *map(str, kinds.values())], capture_output=True,
                           text=True, check=True, env={**OWN_TREE, **one_thread})
    timed = json.loads(reply.stdout)
    return ({kind_of(Path(k)): v["wall_s"] for k, v in timed.items()},
            {kind_of(Path(k)): v["cpu_s"] for k, v in timed.items()})


def nbgrader(paths: list[Path], week: str) -> dict:
    course = WORK / "nbgrader"
    competitors.nbgrader_course(course, week, paths)
    prepare, argv = competitors.nbgrader_argv(course, week)
    env = competitors.tool_env("nbgrader")
    for step in prepare:
        done = subprocess.run(step, cwd=course, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(step[1:])} exited {done.returncode}: {done.stderr[-2000:]}")
    code, wall, samples = run_sampled(argv, cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gaps = competitors.nbgrader_times(course, week)
    return {"median_s": statistics.median(gaps), "wall_s": wall, "peak_mb": max(m for _, m in samples),
            "n": len(paths), "exit": code}


def otter(paths: list[Path], week: str) -> dict:
    zip_path = WORK / "otter" / week / "autograder.zip"
    competitors.otter_autograder(zip_path, week)
    env = competitors.tool_env("otter")
    times, peaks, started = [], [], time.monotonic()
    for path in paths:
        out = WORK / "otter" / week / path.stem
        out.mkdir(parents=True, exist_ok=True)
        code, wall, samples = run_sampled(competitors.otter_argv(zip_path, path, out), env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if code != 0:
            raise RuntimeError(f"otter run failed on {path.name} (exit {code})")
        times.append(wall)
        peaks.append(max((m for _, m in samples), default=0.0))
    return {"median_s": statistics.median(times), "wall_s": time.monotonic() - started, "peak_mb": max(peaks),
            "n": len(paths), "exit": 0}


def wait_for_quiet(below: float, patience_s: float) -> float:
    """Wait (polling every 30 s, at most ``patience_s``) until the 1-minute load is below ``below``.

    The machine's cores are shared: figures taken under load measure the neighbours too.
    Returns the 1-minute load average when measuring starts (it may still be above
    ``below`` if patience ran out; the caller prints it either way).
    """
    deadline = time.monotonic() + patience_s
    while (load := os.getloadavg()[0]) >= below and time.monotonic() < deadline:
        print(f"load average {load:.2f} >= {below}: waiting", file=sys.stderr, flush=True)
        time.sleep(30)
    return load


def busy_seconds() -> tuple[float, float, float]:
    """(now, CPU seconds busy on the whole machine, CPU seconds of this process and its waited-for children)."""
    machine = psutil.cpu_times()
    own = os.times()
    return (time.monotonic(), machine.user + machine.nice + machine.system + machine.irq + machine.softirq,
            own.user + own.system + own.children_user + own.children_system)


def neighbours_cores(since: tuple[float, float, float]) -> float:
    """Cores kept busy by other people's processes since ``since``: the machine's busy time less ours, per second.

    The load average counts this benchmark's own processes too; this does not.
    """
    now, machine, own = busy_seconds()
    return max(0.0, (machine - since[1]) - (own - since[2])) / (now - since[0])


def row(name: str, r: dict, base: dict) -> str:
    ratio = r["median_s"] / base["median_s"]
    return (f"{name:<22} {r['n']:>6} {r['median_s'] * 1000:>10.0f} {r['wall_s']:>9.1f} {r['peak_mb']:>9.0f} "
            f"{ratio:>9.1f}x {r['others']:>9.2f} {r['load']:>6.2f}")


def measure_week(week: str, args: argparse.Namespace, skip: set[str]) -> None:
    """Grade ``args.n`` submissions of ``week`` with each grader, print the week's table."""
    paths = build(WORK / week / f"n{args.n}", args.n, week)
    theirs = paths[: args.competitor_n or args.n]
    load_at_start = wait_for_quiet(args.quiet_load, args.patience)
    results = {}
    runs = [("ours --jobs 1", lambda: ours(paths[0].parent, 1, week)),
            ("ours --jobs 2", lambda: ours(paths[0].parent, 2, week)),
            ("nbgrader autograde", lambda: nbgrader(theirs, week)), ("otter run", lambda: otter(theirs, week))]
    for name, run in runs:
        if name.split()[0] in skip:
            continue
        try:
            since = busy_seconds()
            results[name] = run() | {"others": neighbours_cores(since), "load": os.getloadavg()[0]}
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"{name}: could not run: {exc}", file=sys.stderr)
    base = results["ours --jobs 1"]
    per_kind, cpu_per_kind = floor(paths, week)
    # over the submissions ours' figures cover: the gaps between results (and the CPU from the
    # first result to the last) are the 2nd to the last submission's, not the 1st's (a week's
    # first fixture may cost 3 s, which the floor alone would then count); a batch of one is its own
    counted = paths[1:] or paths
    the_floor = statistics.mean(per_kind[kind_of(p)] for p in counted)
    cpu_floor = statistics.mean(cpu_per_kind[kind_of(p)] for p in counted)
    print(f"\n{week}, {args.n} submissions ({len(mix(week))}-notebook mix), {time.strftime('%Y-%m-%d %H:%M')}, "
          f"1-min load average {load_at_start:.2f} at start, {os.getloadavg()[0]:.2f} now")
    print("others: cores kept busy by other people's processes during that run (of 2); "
          "load: 1-min load average after it")
    print(f"{'grader':<22} {'subs':>6} {'median ms':>10} {'wall s':>9} {'peak MB':>9} {'vs ours':>10} {'others':>9} "
          f"{'load':>6}")
    for name, r in results.items():
        print(row(name, r, base))
    # means, not medians: a week's fixtures may cost 0.2 s or 4 s (week 6), and the median
    # of a batch would be one kind's figure
    print(f"floor (student code + tests, in-process): {the_floor * 1000:.0f} ms per submission; "
          f"ours --jobs 1 mean gap {base['mean_s'] * 1000:.0f} ms, overhead beyond the floor: "
          f"{(base['mean_s'] - the_floor) * 1000:.0f} ms (mean gap - mean floor)")
    print(f"CPU time (load-proof): floor {cpu_floor * 1000:.0f} ms per submission, ours --jobs 1 "
          f"{base['cpu_s'] * 1000:.0f} ms (mean, the whole process tree), overhead "
          f"{(base['cpu_s'] - cpu_floor) * 1000:.0f} ms ("
          + ", ".join(f"{role} {seconds * 1000:.0f}" for role, seconds in base["cpu_roles"].items()) + ")")
    print("floor per fixture (ms): " + ", ".join(f"{k} {v * 1000:.0f}" for k, v in
                                                  sorted(per_kind.items(), key=lambda kv: -kv[1])))
    if args.scale:
        big = build(WORK / week / f"n{args.scale}", args.scale, week)
        since = busy_seconds()
        r = ours(big[0].parent, 2, week)
        print(f"\nscale: {args.scale} submissions, --jobs 2: wall {r['wall_s']:.1f} s, median gap "
              f"{r['median_s'] * 1000:.0f} ms, peak {r['peak_mb']:.0f} MB, other processes busy "
              f"{neighbours_cores(since):.2f} cores")
        arrivals = r["arrivals"]
        for t, mb in r["samples"][:: max(1, len(r["samples"]) // 12)]:
            done = sum(1 for a in arrivals if a <= t)
            print(f"  t={t:6.1f} s  graded {done:>5}  tree PSS {mb:7.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--competitor-n", type=int, default=None, help="submissions for nbgrader/otter (default --n)")
    parser.add_argument("--scale", type=int, default=0, help="also grade this many with --jobs 2 (e.g. 1000)")
    parser.add_argument("--skip", default="", help="comma-separated: nbgrader, otter")
    parser.add_argument("--quiet-load", type=float, default=0.7, help="wait until the 1-min load average is below this")
    parser.add_argument("--patience", type=float, default=900, help="seconds to wait for --quiet-load at most")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--week", default="week01", help="the week whose fixtures are graded (default week01)")
    which.add_argument("--all-weeks", action="store_true", help="every week with fixtures, one table each")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    weeks = sorted(p.parent.name for p in (HERE.parent / "tests" / "fixtures").glob("week*/expectations.json")) \
        if args.all_weeks else [args.week]
    for tool in {"nbgrader", "otter"} - skip:  # install before measuring, not during
        competitors.venv(tool)
    for week in weeks:
        measure_week(week, args, skip)


if __name__ == "__main__":
    main()
