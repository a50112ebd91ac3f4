"""The unprivileged worker does not depend on who may enter the folders above the course.

A course cloned into a folder only its owner can enter (``mktemp -d``, most home folders)
must still get every layer: the launcher binds what the worker needs from root's side, and
the worker runs as ``nobody`` with the package and the week's data read-only at fixed paths.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import autograder
from autograder.execution.sandbox import PACKAGE_MOUNT, Limits
from autograder.execution.zygote import SandboxedZygote

NOBODY = 65534

pytestmark = [pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bwrap") is None,
                                 reason="needs root and bubblewrap (the unprivileged-uid layer)"),
              pytest.mark.sandbox]


@pytest.fixture
def private_course(tmp_path: Path) -> Path:
    """A copy of the package and a week's data under a 0700 folder that nobody cannot enter."""
    private = tmp_path / "private"
    course = private / "deeper" / "course"
    shutil.copytree(Path(autograder.__file__).resolve().parent, course / "autograder",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (course / "data").mkdir()
    (course / "data" / "points.csv").write_text("1,2\n3,4\n")
    private.chmod(0o700)
    return course


def test_a_course_under_a_private_folder_runs_as_nobody_with_its_data(private_course: Path):
    with SandboxedZygote(Limits(), data=private_course / "data", package=private_course / "autograder") as zygote:
        assert zygote.info["uid"] == NOBODY and zygote.info["fresh_namespaces"]
        assert not any("unprivileged uid" in m for m in zygote.plan.missing)
        worker = zygote.spawn()
        code = ("import os, autograder\n"
                "where = os.path.dirname(autograder.__file__)\n"
                "rows = open('data/points.csv').read()\n"
                "try:\n    open('data/new.csv', 'w')\n    data_writable = True\n"
                "except OSError:\n    data_writable = False\n"
                "uid = os.getuid()")
        assert worker.request({"op": "cell", "src": code}, 30).get("error") is None
        got = {name: worker.request({"op": "get", "name": name}, 10)["value"]
               for name in ("where", "rows", "data_writable", "uid")}
        assert got == {"where": f"{PACKAGE_MOUNT}/autograder", "rows": "1,2\n3,4\n", "data_writable": False,
                       "uid": NOBODY}
        zygote.finish(kill=True)
