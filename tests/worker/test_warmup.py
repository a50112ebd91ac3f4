"""The zygote's warm-up does the libraries' first-use work once, and leaves nothing a notebook
could see: a shell warmed up and a shell just made look the same from a cell."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

OBSERVE = textwrap.dedent("""
    import json, linecache, os, sys, warnings
    os.environ["MPLBACKEND"] = "Agg"
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from autograder.worker.core import make_shell
    from autograder.worker.warmup import warm_up

    shell = make_shell()
    rng, rc, filters = np.random.get_state()[1].tobytes(), dict(matplotlib.rcParams), list(warnings.filters)
    cells = {key for key in linecache.cache if key.startswith("<")}
    if sys.argv[1] == "warm":
        warm_up(shell)
    from matplotlib.backends.registry import backend_registry
    from narwhals.plugins import _discover_entrypoints
    print(json.dumps({
        "namespace": sorted(shell.user_ns), "In": list(shell.user_ns["In"]), "Out": len(shell.user_ns["Out"]),
        "execution_count": shell.execution_count, "last_value": hasattr(sys, "last_value"),
        "succeeded": shell.last_execution_succeeded, "result": shell.last_execution_result is None,
        "rng": np.random.get_state()[1].tobytes() == rng, "rc": dict(matplotlib.rcParams) == rc,
        "filters": list(warnings.filters) == filters, "backend": matplotlib.get_backend(), "figures": plt.get_fignums(),
        "cells": sorted({key for key in linecache.cache if key.startswith("<")} - cells),
        "first_use": {"matplotlib backends": backend_registry._loaded_entry_points,
                      "narwhals plugins": _discover_entrypoints.cache_info().currsize,
                      "line magics loaded": "matplotlib" in shell.magics_manager.magics["line"]},
    }))
""")


def observe(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", OBSERVE, mode], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("\n") == 1, done.stdout  # the cells' own output went nowhere
    return json.loads(done.stdout)


def test_a_warmed_up_shell_looks_like_a_new_one_from_a_cell_and_has_done_the_first_use_work():
    cold, warm = observe("cold"), observe("warm")
    first_use = warm.pop("first_use"), cold.pop("first_use")
    assert warm == cold
    assert warm["rng"] and warm["rc"] and warm["filters"] and warm["backend"] == "Agg" and warm["figures"] == []
    assert not warm["last_value"] and warm["succeeded"] and warm["cells"] == []
    assert first_use[0] == {"matplotlib backends": True, "narwhals plugins": 1, "line magics loaded": True}
    assert first_use[1] != first_use[0]  # a new shell has done none of it
