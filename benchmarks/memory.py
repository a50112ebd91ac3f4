"""Peak memory of a process tree, sampled while it runs (PSS: shared pages counted once)."""

from __future__ import annotations

import subprocess
import threading
import time

import psutil


def tree_memory_mb(root: psutil.Process) -> float:
    """PSS of ``root`` and all its descendants, in MB (RSS where PSS cannot be read)."""
    total = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            info = process.memory_full_info()
            total += getattr(info, "pss", info.rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / 2**20


def run_sampled(argv: list[str], *, every_s: float = 0.25, **kwargs) -> tuple[int, float, list[tuple[float, float]]]:
    """Run ``argv``; its exit code, wall seconds, and (seconds since start, tree MB) samples."""
    started = time.monotonic()
    child = subprocess.Popen(argv, **kwargs)
    samples: list[tuple[float, float]] = []
    root = psutil.Process(child.pid)

    def poll() -> None:
        while child.poll() is None:
            try:
                samples.append((time.monotonic() - started, tree_memory_mb(root)))
            except psutil.NoSuchProcess:
                return
            time.sleep(every_s)

    sampler = threading.Thread(target=poll, daemon=True)
    sampler.start()
    code = child.wait()
    wall = time.monotonic() - started
    sampler.join()
    return code, wall, samples
