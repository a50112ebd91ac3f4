"""What hidden tests use: the ``student`` fixture's types and the errors a test may meet.

The fixture itself and the markers come from the pytest plugin ``autograder.testing.plugin``
(registered as an entry point, so any ``pytest`` run in this environment has them).
"""

from autograder.exceptions import (
    MissingName,
    NotAttempted,
    NotPlainData,
    StudentCodeError,
    StudentTimeout,
    WorkerCrashed,
)
from autograder.testing.student import Call, Remote, Student

__all__ = [
    "Call",
    "MissingName",
    "NotAttempted",
    "NotPlainData",
    "Remote",
    "Student",
    "StudentCodeError",
    "StudentTimeout",
    "WorkerCrashed",
]
