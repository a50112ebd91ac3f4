"""Shared fixtures for the framework's own tests (fixtures only: a helper function two test
files share goes in ``tests/helpers.py``, which they can import)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autograder.course import Course
from autograder.execution import Limits, Sandboxed, ZygoteSlot
from autograder.formats.result_json import to_dict
from autograder.grading.grader import grade
from autograder.results import SubmissionResult
from autograder.submission import Submission
from tests.helpers import PostgresServer, marker_keys

ROOT = Path(__file__).resolve().parent.parent
WEEK01_MIX = ["correct_fresh_notebook", "wrong_no_bias", "untouched_stub", "cheat_allclose", "wrong_unfitted_ppn",
              "correct_loop_eta_y_x"]


@pytest.fixture(scope="session")
def course() -> Course:
    return Course.locate(ROOT)


@pytest.fixture(scope="session")
def slot():
    """One warm, sandboxed zygote shared by the tests (starting one costs about a second),
    with this course's preloaded modules, as its grading's zygote has."""
    with ZygoteSlot(Limits(), preload=Course.locate(ROOT).grading.preload) as s:
        yield s


@pytest.fixture(scope="session")
def week01_mix() -> list[Submission]:
    """Week-1 fixtures (right, wrong, untouched, cheating) and one file that is not a notebook:
    the batch the parallel and cluster runs must grade exactly as one local run does."""
    folder = ROOT / "tests" / "fixtures" / "week01"
    # each with its own fixed seed, so every run draws the same hidden data and results compare exactly
    return [Submission(origin=f"{name}.ipynb", key=name, content=(folder / f"{name}.ipynb").read_bytes(), seed=index)
            for index, name in enumerate(WEEK01_MIX)] + [Submission(origin="broken.ipynb", key="broken",
                                                                    content=b"{not json")]


def comparable(results: list[SubmissionResult]) -> list[dict]:
    """Result documents without the one field that differs between two runs."""
    return [{k: v for k, v in to_dict(r).items() if k != "duration_s"} for r in results]


@pytest.fixture(scope="session")
def as_comparable():
    return comparable


@pytest.fixture(scope="session")
def week01_mix_local(course: Course, slot: ZygoteSlot, week01_mix: list[Submission]) -> list[dict]:
    """``week01_mix`` graded once, locally, in this process: the reference for other runs."""
    return comparable(grade(course.week("week01"), week01_mix, isolation=Sandboxed(slot=slot)))


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright, one for a test module; the test is
    skipped when either is missing (``make setup`` installs both)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("Debian's chromium is not installed: run scripts/install-system-packages (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the session (skipped, saying why, where none is installed)."""
    if shutil.which("pg_config") is None:
        pytest.skip("PostgreSQL is not installed (no pg_config): install Debian's postgresql package")
    folder = Path(tempfile.mkdtemp(prefix="autograder-pg-"))
    try:
        server = PostgresServer(folder)
    except FileNotFoundError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """The database a test's gradebook or store uses, once per engine: None for SQLite (the
    file where the code puts it by default), else a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


# --- markers `sandbox` and `slow`, applied here for the whole suite ----------------------------
# `make quick` runs the tests that are neither (README, "Development"); `make test` and CI run
# every test. A key names a module ("tests/x.py": each of its tests), a test or a fixture of a
# module ("tests/x.py::name", parameters aside), or a fixture wherever it is used ("slot"); a key
# that names nothing any more fails tests/test_marker_lists.py.
# `sandbox`: the test starts bubblewrap, or uses a fixture that does: it grades through
# `grade_parallel`, `run_batch`, the `grade`, `audit` or `moodle sync` command, a service with
# graders, or a zygote (the session's `slot` or one of its own).
# `slow`: not `sandbox`, and measured at two seconds or more (`--durations`) on 2 cores shared with
# other jobs (load 7 to 12).
SANDBOX = frozenset({
    "slot",
    "tests/moodle_ws/test_moodle_sync.py::first",
    "tests/moodle_ws/test_sync_in_serve.py::test_a_sync_in_serve_grades_in_the_services_own_graders",
    "tests/moodle_ws/test_sync_in_serve.py::test_serve_syncs_moodle_on_its_own_and_a_bad_token_harms_nothing_else",
    "tests/moodle_ws/test_sync_in_serve.py::test_the_sync_table_meets_wcag_aa_in_chromium",
    "tests/service/test_accessibility_browser.py",
    "tests/service/test_app_browser.py",
    "tests/service/test_app_e2e.py",
    "tests/service/test_rubric_browser.py",
    "tests/service/test_replicas.py::test_serve_on_postgresql_takes_a_launch_and_an_upload_into_that_database",
    "tests/service/test_replicas_e2e.py",
    "tests/service/test_replicas_rush.py",
    "tests/service/test_runner.py::test_a_dask_cluster_grades_the_queue",
    "tests/service/test_runner.py::test_a_grader_that_dies_costs_only_a_retry_of_the_attempt_it_held",
    "tests/service/test_runner.py::test_a_hidden_check_that_makes_the_grader_work_for_ages_is_stopped_and_the_queue_goes_on",
    "tests/service/test_runner.py::test_a_service_killed_mid_run_grades_every_upload_and_posts_every_score_once",
    "tests/service/test_runner.py::test_a_warmed_grader_takes_the_upload_that_follows",
    "tests/service/test_runner.py::test_one_grader_moves_to_the_week_that_waits",
    "tests/service/test_service_edge.py::test_an_upload_to_a_week_alias_is_graded_under_the_canonical_name_and_stalls_no_one",
    "tests/service/test_service_edge.py::test_one_learners_many_slow_uploads_delay_another_by_at_most_one_grading_slot",
    "tests/service/test_service_edge.py::test_serve_with_its_own_tls_caps_connections_and_closes_half_sent_heads",
    "tests/service/test_service_edge.py::test_serve_with_its_own_tls_stops_at_once_with_an_idle_keep_alive_client",
    "tests/test_audit.py::test_a_mutant_losing_points_on_another_tasks_tests_fails_until_declared",
    "tests/test_audit.py::test_a_reference_that_fails_its_own_tests_stops_the_audit",
    "tests/test_audit.py::test_a_weak_test_lets_a_mutant_survive_until_it_is_recorded_as_equivalent",
    "tests/test_audit.py::test_an_audit_stops_handing_out_mutants_at_its_budget",
    "tests/test_batch_survives.py",
    "tests/test_cli.py::test_a_missing_sandbox_layer_is_said_once_and_grading_goes_on",
    "tests/test_cli.py::test_generate_check_passes_on_the_committed_notebooks",
    "tests/test_cli.py::test_grade_json_worksheet_feedback_and_rerun",
    "tests/test_cli.py::test_loose_notebooks_by_default_stay_out_of_the_moodle_results_folder",
    "tests/test_cli.py::test_manual_marks_merge_into_totals_worksheet_and_survive_regrade",
    "tests/test_cli.py::test_merge_manual_finds_the_batch_its_sheet_came_from",
    "tests/test_distributed_bounds.py",
    "tests/test_distributed.py",
    "tests/test_forged_replies.py::test_a_hostile_worker_chooses_no_word_of_what_anyone_reads",
    "tests/test_forged_replies_in_the_sandbox.py",
    "tests/test_fuzz_inputs.py::test_a_batch_drawn_by_hypothesis_ends_with_one_result_each",
    "tests/test_fuzz_inputs.py::test_the_command_grades_every_case_that_stopped_a_batch",
    "tests/test_generate.py::test_the_command_says_what_it_wrote_and_what_was_up_to_date",
    "tests/test_hidden_markers.py::test_grading_refuses_a_bad_call_timeout_before_any_submission_runs",
    "tests/test_hostile.py::batch",
    "tests/test_hostile_bounds.py",
    "tests/test_isolation_between_submissions.py",
    "tests/test_parallel.py::test_a_grader_process_that_dies_loses_only_its_submission",
    "tests/test_pool.py",
    "tests/test_pristine_state.py",
    "tests/test_quiet.py::test_a_grade_run_of_a_multi_language_week_prints_its_table_and_results_only",
    "tests/test_quiet.py::test_a_zygote_that_stalls_once_is_replaced_without_a_warning",
    "tests/test_regrade_seed.py::test_a_changed_hand_in_draws_a_fresh_seed",
    "tests/test_regrade_seed.py::test_a_cluster_uses_the_seed_it_is_given",
    "tests/test_regrade_seed.py::test_parallel_graders_use_the_seed_they_are_given",
    "tests/test_regrade_seed.py::test_regrade_reproduces_every_score_and_message",
    "tests/test_result_order.py",
    "tests/test_sandbox_anywhere.py",
    "tests/test_single_test_week.py",
    "tests/test_spare_worker.py",
})
SLOW = frozenset({
    "tests/test_warmup.py",
    "tests/moodle_ws/test_sync_in_serve.py::test_a_run_whose_replica_died_is_taken_over_once_its_lease_expires",
    "tests/moodle_ws/test_sync_in_serve.py::test_replicas_on_one_database_run_a_due_sync_once_and_show_one_status",
    "tests/moodle_ws/test_sync_in_serve.py::test_serve_does_not_start_with_a_bad_sync_entry",
    "tests/service/test_app_serve.py::test_serve_starts_serves_the_registration_values_and_stops",
    "tests/service/test_outbox.py::test_409_from_a_platform_clock_ahead_of_ours_is_sent_again_later",
    "tests/service/test_outbox.py::test_a_slow_platform_does_not_hold_up_recording_grades",
    "tests/service/test_outbox_replicas.py",
    "tests/service/test_replicas.py::test_a_bad_database_is_one_clear_error",
    "tests/service/test_replicas.py::test_a_claim_expires_when_its_replica_dies_and_not_while_it_lives",
    "tests/service/test_replicas.py::test_a_stalled_replica_neither_renews_its_lost_claim_nor_overwrites_the_result",
    "tests/service/test_replicas.py::test_eight_replicas_racing_uploads_against_one_attempt_accept_exactly_one",
    "tests/service/test_shared_data_folder.py",
    "tests/service/test_service_edge.py::test_a_body_that_stalls_is_dropped",
    "tests/service/test_service_edge.py::test_a_connection_that_never_finishes_its_head_is_closed",
    "tests/test_accessibility.py::test_every_written_page_has_no_wcag_aa_violation",
    "tests/test_accessibility.py::test_the_reports_filters_and_sort_work_from_the_keyboard_alone",
    "tests/test_cli.py::test_bad_input_is_a_clear_error_not_a_traceback",
    "tests/test_cli.py::test_report_and_merge_manual_read_a_grading_services_database",
    "tests/test_codec.py::test_decoder_never_fails_other_than_with_protocol_error",
    "tests/test_forged_replies.py::test_a_reply_is_bounded_in_memory_before_it_is_built",
    "tests/test_fuzz_inputs.py::test_an_nbformat_3_notebook_is_read_and_a_huge_one_refused_before_any_cell_is_walked",
    "tests/test_fuzz_inputs.py::test_any_moodle_folder_gives_one_outcome_per_hand_in",
    "tests/test_fuzz_inputs.py::test_any_moodle_zip_gives_one_outcome_per_hand_in",
    "tests/test_fuzz_inputs.py::test_any_notebook_reads_or_gets_a_clear_submission_error",
    "tests/test_fuzz_inputs.py::test_any_result_text_is_stored_and_written",
    "tests/test_fuzz_inputs.py::test_outputs_are_never_walked",
    "tests/test_fuzz_inputs.py::test_the_marking_sheet_is_written_whatever_the_notebooks_hold",
    "tests/test_generate.py::test_a_source_without_cell_ids_gets_stable_ones",
    "tests/test_generate.py::test_a_write_prunes_folders_it_emptied",
    "tests/test_generate.py::test_check_is_clean_when_the_committed_files_are_up_to_date",
    "tests/test_generate.py::test_check_reports_stale_missing_and_extra_files_and_a_write_fixes_them",
    "tests/test_generate.py::test_generation_is_byte_identical_across_runs_and_places",
    "tests/test_generate.py::test_the_week_written_from_scratch_in_the_docs_generates_and_its_tests_pass",
    "tests/test_gradebook.py::test_run_killed_mid_batch_resumes_without_loss_or_duplicates",
    "tests/test_gradebook.py::test_sigkill_during_writes_loses_no_committed_result",
    "tests/test_gradebook.py::test_two_processes_writing_at_once_do_not_corrupt",
    "tests/test_hidden_markers.py::test_pytest_on_the_source_refuses_a_bad_marker",
    "tests/test_hidden_markers.py::test_pytest_on_the_source_refuses_tests_that_do_not_add_up_to_the_tasks_points",
    "tests/test_i18n.py::test_a_changed_source_string_makes_generate_refuse_the_stale_language",
    "tests/test_i18n.py::test_a_language_without_a_catalog_is_refused_with_the_fix",
    "tests/test_i18n.py::test_generate_writes_every_language_and_stamps_it",
    "tests/test_interop_convert.py::test_a_bad_week_name_is_a_clear_error",
    "tests/test_interop_convert.py::test_a_student_exception_subclassing_the_expected_one_passes_as_in_nbgrader",
    "tests/test_interop_convert.py::test_an_existing_week_is_never_overwritten",
    "tests/test_interop_convert.py::test_an_nbgrader_course_with_every_construct_imports_and_generates_in_the_shipped_course",
    "tests/test_interop_convert.py::test_an_nbgrader_notebook_that_cannot_become_a_week_is_refused_by_name",
    "tests/test_interop_convert.py::test_an_otter_course_with_every_construct_imports_and_generates_in_the_shipped_course",
    "tests/test_interop_convert.py::test_import_gives_a_week_whose_tests_pass_on_the_reference",
    "tests/test_interop_convert.py::test_import_names_the_files_it_wrote_and_the_marker_finds_its_answers",
    "tests/test_interop_convert.py::test_imported_tests_fail_on_a_wrong_answer",
    "tests/test_interop_convert.py::test_the_authors_headings_stay_the_task_headings",
    "tests/test_interop_convert.py::test_the_weeks_language_comes_from_the_option_else_the_notebook_else_the_course",
    "tests/test_marker_lists.py",
    "tests/test_public_checks.py::test_correct_fixture_passes_every_public_check",
    "tests/test_report.py::test_the_mean_says_how_points_awaiting_hand_marking_are_counted",
    "tests/test_report_browser.py",
    "tests/test_seed_sweep.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        keys = marker_keys(item.nodeid, getattr(item, "fixturenames", ()))
        if keys & SANDBOX:
            item.add_marker(pytest.mark.sandbox)
        if keys & SLOW:
            item.add_marker(pytest.mark.slow)
