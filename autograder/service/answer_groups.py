"""Groups of similar answers for the marking pages: computed once per change of a task's
answers, in the background, never while a page waits.

``autograder.grouping`` takes seconds for a class's answers (300 answers of a few kB: ~5 s
of CPU), which a page must not spend on its request: the instructor would wait, and so
would everyone else the web process serves meanwhile. So a thread of the web process
computes them, started by the runner when it records a hand-in with a hand-graded task
(``regroup``) or by a page that finds them missing (``groups``), and keeps them in the
data folder, which every replica shares: ``groups/<week>/<course>-task<N>.json`` holds the
fingerprint of the answers they were computed from (``grouping.fingerprint``) and the
groups. A page whose answers have that fingerprint gets the groups; any other gets None
at once (it shows the answers ungrouped, saying so) and the computation is started.

Requests that come while one is computed are coalesced: per task (or per week, for the
runner's) only the newest waits, so a rush of 300 hand-ins costs a few computations, not
300. Two replicas may compute the same answers at once: each writes the whole file
(``formats/atomic``), with the same groups.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.formats.atomic import write_text
from autograder.grouping import fingerprint, group_answers

if TYPE_CHECKING:
    from autograder.service.store import Store

log = logging.getLogger(__name__)
FOLDER = "groups"


def groups(store: Store, context: str, week: str, task: int, texts: Mapping[str, str]) -> list[list[str]] | None:
    """The keys of ``texts`` (attempt key -> answer) in groups of similar answers, ordered as
    ``grouping.group_answers`` orders them; None if they are not computed for these very
    answers yet: their computation is then started, and the page shows the answers ungrouped."""
    if len(texts) < 2:
        return [[key] for key in texts]
    path = groups_path(store, context, week, task)
    wanted = fingerprint(texts)
    found = _read(path, wanted)
    if found is None:
        WORKER.request(path, lambda: _compute(path, wanted, texts))
        return None
    order = {key: index for index, key in enumerate(texts)}
    ordered = [sorted(group, key=order.__getitem__) for group in found]
    return sorted(ordered, key=lambda keys: (-len(keys), order[keys[0]]))


def regroup(store: Store, context: str, week: str, texts_of: Callable[[], Mapping[int, Mapping[str, str]]]) -> None:
    """Compute in the background the groups of every hand-graded task of a week whose answers
    changed: ``texts_of`` gives each task's answers as the marking page reads them (it is
    called in the background too: reading a class's notebooks is work as well)."""
    def run() -> None:
        for task, texts in texts_of().items():
            path, wanted = groups_path(store, context, week, task), fingerprint(texts)
            if len(texts) >= 2:
                _compute(path, wanted, texts)

    WORKER.request((store.root, context, week), run)


def groups_path(store: Store, context: str, week: str, task: int) -> Path:
    """Where a course's groups of a task's answers are kept (the course by a hash of its LTI
    context: the name is the LMS's, any text)."""
    course = hashlib.sha256(context.encode()).hexdigest()[:16]
    return store.root / FOLDER / week / f"{course}-task{task}.json"


def _read(path: Path, wanted: str) -> list[list[str]] | None:
    """The groups kept at ``path`` if they were computed from the answers ``wanted`` names."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # not computed yet, or written by something else: computed again
    if not isinstance(kept, dict) or kept.get("fingerprint") != wanted or not isinstance(kept.get("groups"), list):
        return None
    return [[str(key) for key in group] for group in kept["groups"]]


def _compute(path: Path, wanted: str, texts: Mapping[str, str]) -> None:
    """Group ``texts`` and keep the groups at ``path``, unless they are there already (asked
    for again while they were computed, or computed by another replica)."""
    if _read(path, wanted) is not None:
        return
    computed = group_answers(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"fingerprint": wanted, "groups": computed}, ensure_ascii=False))


class Worker:
    """One thread that runs the waiting jobs one at a time, newest request per key: a job
    asked for again before it started runs once, as last asked. The thread ends when
    nothing waits and is started again by the next request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[Hashable, Callable[[], None]] = {}
        self._thread: threading.Thread | None = None

    def request(self, key: Hashable, job: Callable[[], None]) -> None:
        with self._lock:
            self._waiting.pop(key, None)  # the newer one goes to the end of the line
            self._waiting[key] = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="answer-groups", daemon=True)
                self._thread.start()

    def idle(self, timeout: float) -> bool:
        """Wait until nothing waits or runs (at most ``timeout`` s); whether it is so."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            return self._thread is None

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return
                key = next(iter(self._waiting))
                job = self._waiting.pop(key)
            try:
                job()
            except Exception:
                log.exception("grouping the answers of %s failed; the page shows them ungrouped", key)


WORKER = Worker()  # the web process's: its pages and its runner share it
