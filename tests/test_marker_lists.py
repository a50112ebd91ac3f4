"""The ``SANDBOX`` and ``SLOW`` lists of tests/conftest.py name tests by id, so a test renamed
or removed silently leaves its key behind and its new name unmarked (``make quick`` then runs
a sandboxed or slow test). Collecting the whole suite in another pytest finds such a key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import marker_keys

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# run by a fresh interpreter: collect tests/ and write, for each test, its id and fixtures, and
# the modules skipped while collecting (a missing optional library): their tests are unknown
COLLECT = """
import json, sys
import pytest

class Dump:
    skipped = []

    def pytest_collectreport(self, report):
        if report.skipped:
            self.skipped.append(report.nodeid)

    def pytest_collection_finish(self, session):
        items = [[item.nodeid, list(getattr(item, "fixturenames", ()))] for item in session.items]
        with open(sys.argv[1], "w", encoding="utf-8") as out:
            json.dump({"items": items, "skipped": self.skipped}, out)

sys.exit(pytest.main(["tests", "--collect-only", "-q", "-p", "no:randomly"], plugins=[Dump()]))
"""


def stale(keys: set[str], collected: dict[str, Any]) -> list[str]:
    """The keys that name no module, test or fixture of what was collected (keys inside a
    module skipped while collecting are not judged)."""
    named: set[str] = set()
    for nodeid, fixtures in collected["items"]:
        named |= marker_keys(nodeid, fixtures)
    skipped = {nodeid.split("::")[0] for nodeid in collected["skipped"]}
    return sorted(key for key in keys - named if key.split("::")[0] not in skipped)


def test_every_key_of_the_marker_lists_names_a_module_test_or_fixture(request: pytest.FixtureRequest,
                                                                       tmp_path: Path) -> None:
    conftest = next(plugin for plugin in request.config.pluginmanager.get_plugins()
                    if getattr(plugin, "__file__", None) == str(TESTS / "conftest.py"))
    dump = tmp_path / "collected.json"
    run = subprocess.run([sys.executable, "-c", COLLECT, str(dump)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    collected = json.loads(dump.read_text(encoding="utf-8"))
    for name in ("SANDBOX", "SLOW"):
        gone = stale(set(getattr(conftest, name)), collected)
        assert gone == [], (f"{name} in tests/conftest.py names no module, test or fixture (renamed or "
                            f"removed? put the new name in its place): " + ", ".join(gone))
