"""A batch handed to a ``GraderPool`` from another process (a Moodle sync inside ``serve``)
is graded there as a pool of its own grades it, and a week that cannot be graded fails
that batch with the week's own error."""

from __future__ import annotations

import multiprocessing
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.exceptions import CourseError
from autograder.grading.pool import GraderPool
from autograder.grading.relay import Relay, RelayedGraders

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def lent(course: Course) -> Iterator[tuple[RelayedGraders, GraderPool]]:
    """A one-grader pool running in a thread, and the pool as the other end of a pipe sees it."""
    pool = GraderPool(1, idle_s=60)
    ours, theirs = multiprocessing.Pipe(duplex=True)
    relay = Relay(ours, course.week)
    pool.add(relay)
    stop = threading.Event()

    def pump(conn: Connection) -> None:
        while not stop.is_set():
            wait([conn, relay.waker], timeout=0.1)
            assert relay.pump() is None

    threads = [threading.Thread(target=pool.run, args=(stop.is_set,), kwargs={"poll_s": 0.1}),
               threading.Thread(target=pump, args=(ours,))]
    for thread in threads:
        thread.start()
    try:
        yield RelayedGraders(theirs), pool
    finally:
        stop.set()
        pool.wake()
        for thread in threads:
            thread.join()
        pool.close()
        relay.close()


def test_a_relayed_batch_gets_the_results_of_a_local_run(course: Course, week01_mix, week01_mix_local,
                                                          as_comparable):
    arrived: list[str] = []
    with lent(course) as (graders, pool):
        results = graders.grade(course.week("week01"), week01_mix, lambda r: arrived.append(r.key))
        again = graders.grade(course.week("week01"), week01_mix[:1])
        assert pool.started == 1  # the second batch went to the same warm grader
    assert as_comparable(results) == week01_mix_local
    assert sorted(arrived) == sorted(r["key"] for r in week01_mix_local)
    assert as_comparable(again) == week01_mix_local[:1]


def test_a_week_that_cannot_be_graded_fails_the_relayed_batch_with_its_error(tmp_path: Path, week01_mix):
    shutil.copytree(ROOT / "source" / "week01", tmp_path / "source" / "week01")
    (tmp_path / "source" / "week01" / "tests" / "test_broken.py").write_text("def broken(:\n")
    course = Course(tmp_path)
    with lent(course) as (graders, _), pytest.raises(CourseError, match="grading week01 stopped"):
        graders.grade(course.week("week01"), week01_mix[:2])


def test_an_error_raised_by_on_result_reaches_the_caller_and_the_graders_stop(course: Course, week01_mix):
    """An ``OSError`` from the caller's own callback (a results folder that cannot be written)
    is the caller's to see: the pool once took it for its grader's pipe closing and waited
    for ever on a grader that was alive and waiting for work."""
    pool = GraderPool(1, idle_s=60)

    def on_result(_result: object) -> None:
        raise PermissionError("results folder not writable")

    done: list[BaseException] = []

    def run() -> None:
        try:
            pool.grade(course.week("week01"), week01_mix[:2], on_result)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            done.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=120)
    pool.close()
    assert not thread.is_alive(), "the pool hung after on_result raised"
    assert len(done) == 1 and isinstance(done[0], PermissionError)
