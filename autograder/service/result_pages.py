"""An attempt's result document and feedback page, as the student reads them.

Written under ``results/<week>/attempt-<id>.{json,html}`` of the data folder, each through
``formats.atomic`` (a fresh temporary name per write): the runner's ``record_result`` and a
marker's mark on the same attempt may write at once, and each page appears whole.
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


def write_pages(root: Path, course: Course | None, *, week: str, key: str, result: SubmissionResult,
                week_title: str) -> tuple[Path, Path]:
    """Write ``result``'s JSON and feedback page (in the week's language when ``course``
    has the week's catalogs); their paths."""
    folder = service_results(root, week)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / f"{key}.json", folder / f"{key}.html"
    write_text(json_path, json.dumps(to_dict(result), ensure_ascii=False, indent=1) + "\n")
    try:
        known: Week | None = course.week(week) if course is not None else None
    except CourseError:
        known = None
    write_text(html_path, render_feedback(result, week_title=week_title, week=known))
    return json_path, html_path
