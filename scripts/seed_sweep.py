#!/usr/bin/env python3
"""Seed sweep: run a week's hidden tests that draw fresh data over many submission seeds.

Grading draws a fresh seed per submission, so a hidden test whose data generation can
produce a draw on which the reference fails would fail a correct student by chance. This
runs every test that uses the ``seed`` (or ``rng``) fixture once per seed, in-process, on
the reference notebook or on a trusted fixture notebook (``--submission``), and reports:

- on the reference: every (test, seed) that fails (there must be none);
- on a fixture (``--verdicts``): every test whose verdict is not the same on every seed
  (a wrong answer must lose the same tests whatever the draw);
- with ``--fixtures``: that check for every graded fixture of the week in
  ``tests/fixtures/WEEK/expectations.json``, each in its own process.

The seed of run ``N`` is the one grading derives from a submission seed ``N``
(``autograder.testing.plugin.derived_seed``), so ``pytest source/weekNN --seed N -k TEST``
reproduces a failure. Run by hand, e.g. ``.venv/bin/python scripts/seed_sweep.py week04
--seeds 2000``; ``tests/test_seed_sweep.py`` runs a cheap version of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from autograder.testing.plugin import derived_seed

ROOT = Path(__file__).resolve().parent.parent


class SweepPlugin:
    """Parametrises ``seed`` over the submission seeds and records each run's outcome."""

    def __init__(self, bases: range) -> None:
        self.bases = bases
        self.outcomes: dict[str, dict[int, str]] = defaultdict(dict)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "seed" not in metafunc.fixturenames:
            return
        name = metafunc.definition.originalname
        file_name = Path(str(metafunc.definition.path)).name
        # a direct parametrisation overrides the ``seed`` fixture, for ``rng`` and the data fixtures too
        metafunc.parametrize("seed", [derived_seed(b, file_name, name) for b in self.bases],
                             ids=[str(b) for b in self.bases])

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        kept = [item for item in items if "seed" in getattr(item, "fixturenames", ())]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            test, _, base = report.nodeid.rpartition("[")  # path/test_x.py::test_y[12]
            self.outcomes[test.rpartition("/")[2]][int(base.rstrip("]"))] = report.outcome


def sweep(week: str, bases: range, submission: Path | None = None) -> dict[str, dict[int, str]]:
    """{"test_file.py::test_name": {submission seed: "passed" | "failed"}} for the week's fresh-data tests."""
    plugin = SweepPlugin(bases)
    args = [str(ROOT / "source" / week / "tests"), "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            "--no-header", "-rN", "--tb=no", "-o", "console_output_style=classic"]
    if submission is not None:
        args += ["--submission", str(submission)]
    code = pytest.main(args, plugins=[plugin])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise SystemExit(f"pytest could not run {week}'s tests (exit {code})")
    return plugin.outcomes


def sweep_fixtures(week: str, seeds: int, start: int) -> int:
    """Check every graded fixture of ``week`` has one verdict per test on every seed; the
    number of fixtures that do not."""
    folder = ROOT / "tests" / "fixtures" / week
    expectations = json.loads((folder / "expectations.json").read_text())
    mixed = 0
    for name, expected in expectations.items():
        if "status" in expected:  # not graded (untouched stub, another week's notebook)
            continue
        run = subprocess.run([sys.executable, __file__, week, "--seeds", str(seeds), "--start", str(start),
                              "--submission", str(folder / name), "--verdicts"],
                             check=False, capture_output=True, text=True, timeout=900)
        summary = [line for line in run.stdout.splitlines() if ": passes (" in line or ": fails (" in line
                   or ": mixed (" in line]
        failing = [line.split(": ")[0] for line in summary if ": passes (" not in line]
        print(f"{name}: {'MIXED' if run.returncode else 'same on every seed'}; failing fresh-data tests: {failing or 'none'}")
        for line in summary:
            if ": mixed (" in line:
                print(f"    {line}")
        mixed += run.returncode != 0
    return mixed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("week", help="e.g. week04")
    parser.add_argument("--seeds", type=int, default=1000, help="how many submission seeds (default 1000)")
    parser.add_argument("--start", type=int, default=0, help="the first submission seed")
    parser.add_argument("--submission", type=Path, help="a trusted fixture notebook instead of the reference")
    parser.add_argument("--verdicts", action="store_true",
                        help="check each test has one verdict on every seed (for wrong-answer fixtures)")
    parser.add_argument("--fixtures", action="store_true",
                        help="run --verdicts on every graded fixture of the week, each in its own process")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    args = parser.parse_args()
    if args.fixtures:
        return 1 if sweep_fixtures(args.week, args.seeds, args.start) else 0
    outcomes = sweep(args.week, range(args.start, args.start + args.seeds), args.submission)
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=1, sort_keys=True))
    bad = 0
    print()
    for test, runs in sorted(outcomes.items()):
        failed = sorted(base for base, outcome in runs.items() if outcome != "passed")
        if args.verdicts:
            verdict = "mixed" if 0 < len(failed) < len(runs) else ("fails" if failed else "passes")
            bad += verdict == "mixed"
            detail = f" on seeds {failed[:10]}" if verdict == "mixed" else ""
            print(f"{test}: {verdict} ({len(failed)}/{len(runs)} seeds fail){detail}")
        else:
            bad += bool(failed)
            print(f"{test}: {len(runs) - len(failed)}/{len(runs)} seeds pass" + (f"; fails on {failed[:10]}" if failed else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
