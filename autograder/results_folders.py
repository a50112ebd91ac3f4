"""Where a course's results go when nobody says: one function per kind of run.

The command line, a batch and the service (its attempts' pages, its scheduled Moodle syncs)
all name these folders, so a sync the service runs and one an instructor starts by hand
write the same gradebook, and ``report`` or ``merge-manual`` find what ``grade`` wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.course import Week

RESULTS = "results"


def export_results(week: Week) -> Path:
    """``results/WEEK``: a graded Moodle export (where the README's commands look)."""
    return week.root / RESULTS / week.name


def notebooks_results(week: Week) -> Path:
    """``results/WEEK-notebooks``: loose notebooks, kept apart from the export's results."""
    return week.root / RESULTS / f"{week.name}-notebooks"


def moodle_results(week: Week, assignment: int) -> Path:
    """``results/WEEK-moodle-ID``: a Moodle Assignment synced over web services, one folder
    (and gradebook) per assignment."""
    return week.root / RESULTS / f"{week.name}-moodle-{assignment}"


def service_results(data: Path, week: str) -> Path:
    """``DATA/results/WEEK``: the result and feedback pages of the service's attempts, in its
    data folder (``week`` canonical, as the service stores it)."""
    return data / RESULTS / week


def audit_page(week: Week) -> Path:
    """``results/audit/WEEK.html``: the mutation audit's page."""
    return week.root / RESULTS / "audit" / f"{week.name}.html"
