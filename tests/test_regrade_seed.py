"""``--regrade`` reproduces a score exactly: the gradebook keeps the seed behind each
result's hidden data, and grading the same submission again passes it back, in one
process, with ``--jobs`` and on a Dask cluster (real sandbox, real gradebook file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.batch import GradingOptions, run_batch
from autograder.course import Course
from autograder.gradebook import FILENAME, Gradebook
from autograder.grading.parallel import grade_parallel
from autograder.results import Status, SubmissionResult

FIXTURES = Path(__file__).parent / "fixtures" / "week01"
# one right answer and two wrong ones, whose failing messages quote seed-drawn data
NAMES = ["correct_fresh_notebook", "wrong_no_bias", "wrong_lookup_table"]


def copy_fixtures(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for name in NAMES:
        (folder / f"{name}.ipynb").write_bytes((FIXTURES / f"{name}.ipynb").read_bytes())
        paths.append(folder / f"{name}.ipynb")
    return paths


def fingerprint(results: list[SubmissionResult]) -> dict[str, tuple]:
    return {r.key: (r.seed, r.score, [(t.name, t.score, t.output) for t in r.tests]) for r in results}


def test_gradebook_gives_the_seed_back_only_for_the_same_content(tmp_path: Path) -> None:
    with Gradebook.open(tmp_path / FILENAME) as book:
        book.record(SubmissionResult(submission="a.ipynb", key="a", status=Status.GRADED, week="week01",
                                     submission_sha256="1" * 64, seed=123456789))
        assert book.recorded_seed("week01", "a", submission_sha256="1" * 64) == 123456789
        assert book.recorded_seed("week01", "a", submission_sha256="2" * 64) is None  # changed hand-in
        assert book.recorded_seed("week01", "b", submission_sha256="1" * 64) is None
        assert book.recorded_seed("week02", "a", submission_sha256="1" * 64) is None
        assert book.recorded_seed("week01", "a", submission_sha256=None) is None


@pytest.mark.sandbox
@pytest.mark.parametrize("jobs", [1, 2])
def test_regrade_reproduces_every_score_and_message(course: Course, tmp_path: Path, jobs: int) -> None:
    week = course.week("week01")
    paths = copy_fixtures(tmp_path / "in")
    out = tmp_path / "out"
    first = run_batch(week, paths, GradingOptions(out_dir=out)).results
    seeds = {r.key: r.seed for r in first}
    assert all(isinstance(s, int) for s in seeds.values()), seeds
    assert len(set(seeds.values())) == len(seeds), "every submission draws its own seed"
    lost = {r.key for r in first if any(t.score < t.max_score for t in r.tasks if not t.manual)}
    assert lost == {"wrong_no_bias", "wrong_lookup_table"}, lost

    again = run_batch(week, paths, GradingOptions(out_dir=out, regrade=True, jobs=jobs))
    assert again.reused == 0
    assert fingerprint(again.results) == fingerprint(first)


@pytest.mark.sandbox
def test_a_changed_hand_in_draws_a_fresh_seed(course: Course, tmp_path: Path) -> None:
    week = course.week("week01")
    paths = copy_fixtures(tmp_path / "in")
    out = tmp_path / "out"
    before = {r.key: r.seed for r in run_batch(week, paths[:1], GradingOptions(out_dir=out)).results}
    paths[0].write_bytes(paths[0].read_bytes().replace(b'"cells"', b'"cells" ', 1))
    after = {r.key: r.seed for r in run_batch(week, paths[:1], GradingOptions(out_dir=out)).results}
    assert before.keys() == after.keys() and before != after


@pytest.mark.sandbox
def test_parallel_graders_use_the_seed_they_are_given(course: Course) -> None:
    from autograder.submission import Submission

    week = course.week("week01")
    subs = [Submission(origin=n, key=n, content=(FIXTURES / f"{n}.ipynb").read_bytes(), seed=1000 + i)
            for i, n in enumerate(NAMES)]
    assert [r.seed for r in grade_parallel(week, subs, jobs=2)] == [1000, 1001, 1002]


@pytest.mark.sandbox
def test_a_cluster_uses_the_seed_it_is_given(course: Course) -> None:
    distributed = pytest.importorskip("distributed")
    from autograder.grading.distributed import grade_on_cluster
    from autograder.submission import Submission

    week = course.week("week01")
    subs = [Submission(origin=n, key=n, content=(FIXTURES / f"{n}.ipynb").read_bytes(), seed=7 + i)
            for i, n in enumerate(NAMES)]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        results = grade_on_cluster(week, subs, scheduler=client)
    assert [r.seed for r in results] == [7, 8, 9]
    assert all(t.score == t.max_score for t in results[0].tasks if not t.manual)  # the correct notebook
