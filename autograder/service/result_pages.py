"""An attempt's result document and feedback page, as the student reads them: rendered from
the gradebook's result (marks applied), never read back.

The feedback route and the instructor's results.zip render them when asked, so a mark the
gradebook took from anywhere shows at once. ``write_pages`` also writes them under
``results/<week>/attempt-<id>.{json,html}`` of the data folder when a result or a mark is
stored, each through ``formats.atomic`` (a fresh temporary name per write): the runner's
``record_result`` and a marker's mark on the same attempt may write at once, and each page
appears whole.
"""

from __future__ import annotations

import json
from pathlib import Path

from autograder.course import Course, Week
from autograder.exceptions import CourseError
from autograder.formats.atomic import write_text
from autograder.formats.result_json import to_dict
from autograder.report import render_feedback
from autograder.results import SubmissionResult
from autograder.results_folders import service_results


def result_document(result: SubmissionResult) -> str:
    """The result's JSON document as the data folder holds it."""
    return json.dumps(to_dict(result), ensure_ascii=False, indent=1) + "\n"


def feedback_page(course: Course | None, *, week: str, result: SubmissionResult, week_title: str) -> str:
    """The result's feedback page, in the week's language when ``course`` has the week's catalogs."""
    try:
        known: Week | None = course.week(week) if course is not None else None
    except CourseError:
        known = None
    return render_feedback(result, week_title=week_title, week=known)


def write_pages(root: Path, course: Course | None, *, week: str, key: str, result: SubmissionResult,
                week_title: str) -> tuple[Path, Path]:
    """Write ``result``'s JSON and feedback page; their paths."""
    folder = service_results(root, week)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / f"{key}.json", folder / f"{key}.html"
    write_text(json_path, result_document(result))
    write_text(html_path, feedback_page(course, week=week, result=result, week_title=week_title))
    return json_path, html_path
