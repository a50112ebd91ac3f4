"""What grading processes say to each other (``grading.messages``): a submission crosses every
pipe and every Dask task as one JSON text and comes back the same, and a message that does
not parse is an error naming the field, not a ``KeyError`` deep in the receiver."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from pydantic import ValidationError

from autograder.course import Course
from autograder.grading.messages import TO_GRADER, SubmissionData, Work, receive, send
from autograder.grading.relay import Relay
from autograder.results import Participant, Status
from autograder.submission import Submission

ROOT = Path(__file__).resolve().parents[2]


def test_a_submission_crosses_as_json_and_comes_back_the_same() -> None:
    sent = Submission(origin="export.zip!Ann Lee_1_assignsubmission_file/nb.ipynb", key="ann-lee",
                      content=b"\x00\xff{not utf-8}", participant=Participant(participant_id="1", full_name="Ann Lée"),
                      status=Status.WRONG_WEEK, message="names week02", seed=2**63 - 1)
    ours, theirs = multiprocessing.Pipe(duplex=True)
    send(ours, Work(index=7, submission=SubmissionData.of(sent)))
    received = receive(theirs, TO_GRADER)
    assert isinstance(received, Work) and received.index == 7
    assert received.submission.submission() == sent
    # what a Dask task is handed is the same text
    assert SubmissionData.model_validate_json(SubmissionData.of(sent).model_dump_json()).submission() == sent
    absent = Submission(origin="Bob_2", key="bob", content=None, status=Status.NOT_SUBMITTED)
    assert SubmissionData.of(absent).submission() == absent


def test_a_relayed_batch_that_does_not_parse_names_the_missing_field() -> None:
    """A sync's ``grade`` message without its week: the service's side says which field is
    missing (it used to be a bare ``KeyError: 'week'`` from the relay's dict walk)."""
    ours, theirs = multiprocessing.Pipe(duplex=True)
    relay = Relay(ours, Course(ROOT).week)
    try:
        theirs.send_bytes(b'{"op": "grade", "submissions": []}')
        with pytest.raises(ValidationError, match=r"week\s+Field required"):
            relay.pump()
        theirs.send_bytes(b'{"op": "grade", "week": "week01", "submissions": [{"origin": "a", "key": "a"}]}')
        with pytest.raises(ValidationError, match=r"submissions\.0\.content\s+Field required"):
            relay.pump()
    finally:
        relay.close()
