"""The service grades its queue through the real grading path: warm grader processes
(``--jobs``) or a real Dask LocalCluster (``--scheduler``), with the sandbox; results,
feedback pages, hand marks and score posts follow; a service killed with -9 loses and
duplicates nothing."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.exceptions import GradingError
from autograder.execution import Limits, Sandboxed
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.results import Status
from autograder.service.outbox import Outbox
from autograder.service.policy import WeekPolicy
from autograder.service.runner import GradingService
from autograder.service.store import Store
from autograder.submission import Submission
from tests.helpers import notebook_bytes
from tests.hostile.bounds_week import HONEST, write_course
from tests.hostile.bounds_week import notebook as bounds_notebook
from tests.service.score_endpoint import HttpSender, ScoreEndpoint

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CONTEXT = "https://moodle.example|3|ml101"


def upload(store: Store, user: str, fixture: str, week: str = "week01") -> int:
    content = (FIXTURES / week / f"{fixture}.ipynb").read_bytes() if fixture else b"{not a notebook"
    return store.submit(context=CONTEXT, user=user, week=week, content=content, policy=WeekPolicy(),
                        now=datetime.now(UTC)).id


def until(condition: Callable[[], bool], timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def all_graded(store: Store, week: str = "week01") -> bool:
    attempts = store.week_attempts(context=CONTEXT, week=week)
    return bool(attempts) and all(a.state in ("graded", "failed") for a in attempts)


@pytest.fixture
def endpoint() -> Iterator[ScoreEndpoint]:
    server = ScoreEndpoint()
    yield server
    server.close()


def test_warm_graders_grade_uploads_as_the_grader_does_and_post_scores(tmp_path: Path, course: Course, slot,
                                                                       endpoint: ScoreEndpoint):
    week = course.week("week01")
    graded = []
    with Store(tmp_path) as store, Outbox(store, HttpSender(), poll_s=0.05):
        store.set_lineitem(CONTEXT, "week01", endpoint.lineitem)
        store.remember_user(CONTEXT, "ann", "Ann Lee", "ann@example.org")
        with GradingService(course, store, jobs=1, on_graded=graded.append) as service:
            ids = {upload(store, "ann", "correct_fresh_notebook"): "correct",
                   upload(store, "bob", "wrong_no_bias"): "wrong", upload(store, "cat", "untouched_stub"): "stub",
                   upload(store, "dan", ""): "broken"}
            service.wake()
            until(lambda: all_graded(store))
            assert service.graders_started == 1  # one warm grader graded them all
        assert sorted(a.id for a in graded) == sorted(ids)
        results = {ids[i]: store.result(i, context=CONTEXT) for i in ids}
        assert all(r is not None for r in results.values())
        correct, wrong, stub, broken = (results[k] for k in ("correct", "wrong", "stub", "broken"))
        assert correct is not None and wrong is not None and stub is not None and broken is not None
        auto = [t.number for t in week.tasks if not t.manual]
        assert all(correct.task(n).score == correct.task(n).max_score for n in auto)
        assert wrong.task(1).score < wrong.task(1).max_score and wrong.task(2).score == wrong.task(2).max_score
        assert stub.status is Status.NOT_ATTEMPTED and broken.status is Status.ERROR
        assert correct.participant is not None and correct.participant.full_name == "Ann Lee"
        # the very grading a local run gives, with the seed the service drew
        ann = store.attempts(context=CONTEXT, user="ann", week="week01")[0]
        local = grade(week, [Submission(origin=correct.submission, key=ann.key, content=store.content(ann),
                                        participant=correct.participant, seed=correct.seed)], isolation=Sandboxed(slot=slot))[0]
        drop = {"duration_s", "tasks"}
        assert {k: v for k, v in to_dict(local).items() if k not in drop} == \
            {k: v for k, v in to_dict(correct).items() if k not in drop}
        assert [(t.task, t.score) for t in local.tasks] == [(t.task, t.score) for t in correct.tasks]
        page = store.feedback(ann) or ""
        assert "week01" in page and "pending" in page.lower()
        # every task graded by hand is pending: the score goes as PendingManual until marked
        until(lambda: len(endpoint.state.accepted) == 4)
        assert {a.progress for a in endpoint.state.accepted} == {"PendingManual"}
        for task in (t for t in week.tasks if t.manual):
            store.mark(ann.id, context=CONTEXT, task=task.number, points=task.points, comment="Well argued.")
        # one post per mark (the first may be superseded by the second before it goes out)
        until(lambda: endpoint.state.accepted[-1].progress == "FullyGraded")
        final = endpoint.state.accepted[-1]
        assert (final.user, final.progress, final.score) == ("ann", "FullyGraded", week.max_score)
        assert 5 <= len(endpoint.state.accepted) <= 6
        assert "Well argued." in (store.feedback(ann) or "")


@pytest.mark.sandbox
def test_one_grader_moves_to_the_week_that_waits(tmp_path: Path, course: Course):
    with Store(tmp_path) as store, GradingService(course, store, jobs=1) as service:
        upload(store, "ann", "correct_fresh_notebook")
        upload(store, "ann", "correct_fresh_notebook", week="week02")
        upload(store, "bob", "wrong_no_bias")
        service.wake()
        until(lambda: all_graded(store) and all_graded(store, "week02"))
        assert service.graders_started >= 2
        week02 = store.attempts(context=CONTEXT, user="ann", week="week02")[0]
        assert week02.state == "graded" and week02.score == course.week("week02").max_score - week02.pending


@pytest.mark.sandbox
def test_a_dask_cluster_grades_the_queue(tmp_path: Path, course: Course):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, Store(tmp_path) as store:
        ids = [upload(store, "ann", "correct_fresh_notebook"), upload(store, "bob", "wrong_unfitted_ppn"),
               upload(store, "cat", "")]
        with GradingService(course, store, scheduler=cluster.scheduler_address) as service:
            service.wake()
            until(lambda: all_graded(store))
        week = course.week("week01")
        ann, bob, cat = (store.result(i, context=CONTEXT) for i in ids)
        assert ann is not None and ann.score == week.max_score - ann.pending_points
        assert bob is not None and bob.task(2).score < bob.task(2).max_score and bob.task(1).score == bob.task(1).max_score
        assert cat is not None and cat.status is Status.ERROR


@pytest.mark.sandbox
def test_on_a_cluster_the_service_keeps_as_many_tasks_in_flight_as_a_batch(tmp_path: Path, course: Course):
    """One cap for whoever grades on a cluster (``distributed.ClusterGraders.in_flight``): on
    one worker thread the service sends five queued uploads at once, as a batch sends its
    submissions; it used to keep two tasks per thread and the rest in its queue."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, Store(tmp_path) as store:
        for user in ("ann", "bob", "cat", "dan", "eve"):
            store.submit(context=CONTEXT, user=user, week="week01", policy=WeekPolicy(), now=datetime.now(UTC),
                         content=notebook_bytes("import time\ntime.sleep(3)"))
        states: list[list[str]] = []

        def sent_or_graded() -> bool:
            states.append([a.state for a in store.week_attempts(context=CONTEXT, week="week01")])
            return states[-1].count("grading") == 5 or "graded" in states[-1]

        with GradingService(course, store, scheduler=cluster.scheduler_address) as service:
            service.wake()
            until(sent_or_graded, timeout_s=120)
        assert states[-1] == ["grading"] * 5, states[-1]  # all sent before the first came back


@pytest.mark.sandbox
def test_a_service_killed_mid_run_grades_every_upload_and_posts_every_score_once(tmp_path: Path,
                                                                                  endpoint: ScoreEndpoint):
    endpoint.state.delay_s = 0.3  # slow enough that posts are under way when the service dies
    data = tmp_path / "data"
    fixtures = ["correct_fresh_notebook", "wrong_no_bias", "wrong_unfitted_ppn", "untouched_stub",
                "correct_loop_eta_y_x", "wrong_ties_to_minus_one"]
    with Store(data) as store:
        store.set_lineitem(CONTEXT, "week01", endpoint.lineitem)
        ids = [upload(store, f"user{i % 4}", name) for i, name in enumerate(fixtures * 2)]  # 3 attempts each

        def run() -> subprocess.Popen[bytes]:
            return subprocess.Popen([sys.executable, str(Path(__file__).with_name("service_process.py")), str(data),
                                     str(ROOT)], start_new_session=True, cwd=ROOT)

        process = run()
        try:
            until(lambda: sum(a.state == "graded" for a in store.week_attempts(context=CONTEXT, week="week01")) >= 3)
            os.killpg(process.pid, signal.SIGKILL)  # grader, zygote and all, as a crash would
            process.wait()
            states = [a.state for a in store.week_attempts(context=CONTEXT, week="week01")]
            assert "queued" in states  # it really died mid-run
            process = run()
            until(lambda: all_graded(store) and all(p.state in ("posted", "superseded")
                                                    for p in store.posts(context=CONTEXT)))
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        attempts = store.week_attempts(context=CONTEXT, week="week01")
        assert sorted(a.id for a in attempts) == sorted(ids) and {a.state for a in attempts} == {"graded"}
        assert [r.key for r in store.gradebook.results("week01")] == sorted(f"attempt-{i}" for i in ids)  # one each
        assert sorted(p.name for p in (data / "results" / "week01").glob("*.json")) == sorted(
            f"attempt-{i}.json" for i in ids)
        posted = [p for p in store.posts(context=CONTEXT) if p.state == "posted"]
        accepted = endpoint.state.accepted
        assert len({(a.user, a.timestamp) for a in accepted}) == len(accepted)  # nothing stored twice
        assert len(accepted) <= len(posted)  # a post whose send was cut off may have arrived the first time
        for user in {a.user for a in attempts}:
            last = [a for a in accepted if a.user == user][-1]
            assert last.sent == store.counted_score(context=CONTEXT, user=user, week="week01")


@pytest.mark.sandbox
def test_a_warmed_grader_takes_the_upload_that_follows(tmp_path: Path, course: Course):
    with Store(tmp_path) as store, GradingService(course, store, jobs=1) as service:
        service.warm("week02")
        service.warm("week99")  # no such week: said in the log, nothing else happens
        until(lambda: service.graders_started == 1)
        upload(store, "ann", "correct_fresh_notebook", week="week02")
        service.wake()
        until(lambda: all_graded(store, "week02"))
        assert service.graders_started == 1


def test_one_grading_service_per_data_folder(tmp_path: Path, course: Course):
    """A second one would queue again what the first is grading: refused, with what to do."""
    with Store(tmp_path) as store, GradingService(course, store), Store(tmp_path) as other:
        with pytest.raises(GradingError, match="another grading service is running on"):
            GradingService(course, other).__enter__()
    with Store(tmp_path) as store, GradingService(course, store):  # free again once the first stopped
        pass


@pytest.mark.sandbox
def test_a_grader_that_dies_costs_only_a_retry_of_the_attempt_it_held(tmp_path: Path, course: Course):
    with Store(tmp_path) as store, GradingService(course, store, jobs=1) as service:
        slow = store.submit(context=CONTEXT, user="ann", week="week01", policy=WeekPolicy(), now=datetime.now(UTC),
                            content=notebook_bytes("import time\ntime.sleep(4)"))
        other = upload(store, "bob", "correct_fresh_notebook")
        service.wake()
        until(lambda: store.attempt(slow.id).state == "grading")  # type: ignore[union-attr]
        [grader] = [p for p in multiprocessing.active_children() if p.name == "autograder-service-week01"]
        grader.kill()
        until(lambda: all_graded(store))
        assert service.graders_started == 2
        assert {a.id: a.state for a in store.week_attempts(context=CONTEXT, week="week01")} == {
            slow.id: "graded", other: "graded"}
    with sqlite3.connect(tmp_path / "gradebook.sqlite") as db:  # the killed grader cost ann's attempt one try
        assert dict(db.execute("SELECT id, tries FROM attempts").fetchall()) == {slow.id: 2, other: 1}


@pytest.mark.sandbox
def test_a_hidden_check_that_makes_the_grader_work_for_ages_is_stopped_and_the_queue_goes_on(tmp_path: Path):
    """The service's warm graders are watched as the batch's are: an upload whose value makes
    a hidden check hold the grader's interpreter (``sum(range(10**15))`` in C) gets an error
    naming the check, is not queued again, and the uploads around it are graded."""
    course = Course(write_course(tmp_path / "course"))
    limits = Limits(cell_timeout_s=5, call_timeout_s=3, submission_timeout_s=10, tests_timeout_s=10,
                    grader_test_wall_s=3, grader_test_cpu_s=3)
    with Store(tmp_path / "data") as store, GradingService(course, store, jobs=1, limits=limits) as service:
        def submit(user: str, *cells: str) -> int:
            return store.submit(context=CONTEXT, user=user, week="week09", content=bounds_notebook(HONEST, *cells),
                                policy=WeekPolicy(), now=datetime.now(UTC)).id
        ids = {"ann": submit("ann"), "eve": submit("eve", "count = 10**15"), "bob": submit("bob")}
        service.wake()
        until(lambda: all_graded(store, "week09"), timeout_s=240)
        attempts = {a.user: a for a in store.week_attempts(context=CONTEXT, week="week09")}
        assert [attempts[u].score for u in ("ann", "bob")] == [60.0, 60.0]
        eve = store.result(ids["eve"], context=CONTEXT)
        assert eve is not None and eve.status == Status.ERROR and eve.score == 0
        assert any("made the grader itself work past its" in m for m in eve.messages), eve.messages
        assert attempts["eve"].number == 1 and len(store.week_attempts(context=CONTEXT, week="week09")) == 3
