"""Generation steps, one transformation or check per module (as nbgrader's preprocessors).

The pipelines that order them live in ``autograder.generate.pipeline``.
"""

from autograder.generate.steps.answer_prompts import AnswerPrompts
from autograder.generate.steps.base import Context, Preprocessor
from autograder.generate.steps.check_markers import CheckMarkers
from autograder.generate.steps.clear_outputs import ClearOutputs
from autograder.generate.steps.clear_solutions import ClearSolutions
from autograder.generate.steps.leak_guard import LeakGuard
from autograder.generate.steps.localize import Localize
from autograder.generate.steps.marker_guard import MarkerGuard
from autograder.generate.steps.stable_ids import StableIds
from autograder.generate.steps.strip_markers import StripMarkers
from autograder.generate.steps.time_limits import TimeLimits

__all__ = [
    "AnswerPrompts",
    "CheckMarkers",
    "ClearOutputs",
    "ClearSolutions",
    "Context",
    "LeakGuard",
    "Localize",
    "MarkerGuard",
    "Preprocessor",
    "StableIds",
    "StripMarkers",
    "TimeLimits",
]
