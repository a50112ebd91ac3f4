"""The grading service's core as a process of its own, for the kill -9 test.

``python service_process.py DATA COURSE``: grades the store's queue in DATA with warm
graders and sends scores over HTTP (to whatever line items the store names) until killed.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from autograder.course import Course
from autograder.service.outbox import Outbox
from autograder.service.runner import GradingService
from autograder.service.store import Store


def main() -> None:
    data, course_root = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.service.score_endpoint import HttpSender

    with Store(data) as store, Outbox(store, HttpSender(), base_delay_s=0.2, poll_s=0.05), \
            GradingService(Course.locate(course_root), store, jobs=1):
        print("ready", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
