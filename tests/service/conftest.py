"""The fixtures of the service tests (their helpers are in ``tests/service/lms.py`` and
``tests/service/web.py``; tests/test_layout.py keeps the split)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest

from autograder.course import Course
from tests.service.class_of_300 import ClassOf300, enrol
from tests.service.lms import Lms, registered_lms

MEMORY = Path("/dev/shm")  # a tmpfs on Linux


@pytest.fixture(scope="module")
def lms(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, course: Course) -> Iterator[Lms]:
    """The stand-in LMS and the service, registered with each other and week01 added, one pair
    a test module. A module sets the pair's options with ``pytestmark = pytest.mark.lms(...)``
    (the keywords of ``running_lms``: ``grading=False`` for the web app alone, ``Settings``;
    and ``in_memory=True``)."""
    # a module fixture sees its module's marks only: a test's own lms mark would be ignored
    marked = [item.nodeid for item in request.session.items
              if getattr(item, "module", None) is request.module
              and any(mark.name == "lms" for mark in item.own_markers)]
    if marked:
        raise pytest.UsageError(f"{', '.join(marked)}: the lms fixture starts one LMS and service a module, so a "
                                "test's own @pytest.mark.lms(...) cannot change it; set the options for the whole "
                                "module with pytestmark = pytest.mark.lms(...)")
    marker = request.node.get_closest_marker("lms")
    options = dict(marker.kwargs) if marker else {}
    name = request.module.__name__.rpartition(".")[2]
    # in_memory=True: the service's data folder on tmpfs, for a module that writes thousands of
    # rows (the class of 300: ~3,300 SQLite commits, each a disk flush otherwise)
    in_memory = options.pop("in_memory", False) and MEMORY.is_dir()
    with (tempfile.TemporaryDirectory(prefix=f"{name}-", dir=MEMORY) if in_memory
          else nullcontext(tmp_path_factory.mktemp(name))) as folder, \
            registered_lms(Path(folder), course, **options) as running:
        yield running


@pytest.fixture(scope="module")
def class_of_300(lms: Lms, course: Course) -> ClassOf300:
    """week01 handed in by 300 students (names and notebooks in en, ja, pt, es) into the
    module's service, results recorded as the runner records them (tests/service/class_of_300.py);
    the module's service must not grade, and builds it faster in memory:
    ``pytestmark = pytest.mark.lms(grading=False, in_memory=True)``."""
    return enrol(lms, course)
