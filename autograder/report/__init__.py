"""HTML for people: the per-student feedback page and the instructor's report.

``render_feedback`` is also what goes into Moodle's feedback.zip; ``summarize`` is the
JSON-safe summary the CLI prints.
"""

from autograder.report.feedback import render_feedback
from autograder.report.instructor import write_report
from autograder.report.summary import summarize

__all__ = ["render_feedback", "summarize", "write_report"]
