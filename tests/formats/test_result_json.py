"""The result document's one encoder and its reader (``formats/result_json.py``): a
malformed document is one clear error naming each wrong field, not a KeyError in a caller."""

from __future__ import annotations

import json

import pytest

from autograder.exceptions import ResultDocumentError
from autograder.formats.result_json import decode, encode, from_dict, to_dict
from autograder.results import Participant, Status, SubmissionResult, TaskResult, TestResult


def a_result() -> SubmissionResult:
    return SubmissionResult(
        "alice.ipynb", "alice", Status.GRADED, week="week01", language="ja", seed=7, duration_s=1.25,
        tasks=[TaskResult(1, 3, 4), TaskResult(2, 0.0, 6.0, manual=True, title="Why", answer_sha256="ab")],
        tests=[TestResult("test_fit", 1, 3, 4, "fit converges")], messages=["cell 3 raised"],
        participant=Participant(participant_id="101", full_name="Alice", folder="Alice_101_assignsubmission_file"))


def test_a_document_reads_back_to_the_same_bytes() -> None:
    result = a_result()
    text = encode(result)
    assert text == json.dumps(to_dict(result), ensure_ascii=False, indent=1) + "\n"  # the batch's file, as before
    assert encode(decode(text)) == text  # points written as ints stay ints
    assert encode(decode(text.encode("utf-8"))) == text


def test_a_malformed_document_names_every_wrong_field() -> None:
    document = to_dict(a_result())
    document["status"] = "finished"
    del document["tasks"][1]["max_score"]
    document["tests"][0]["score"] = "three"
    with pytest.raises(ResultDocumentError) as caught:
        from_dict(document, where="gradebook.sqlite, week01/alice")
    message = str(caught.value)
    assert message.startswith("gradebook.sqlite, week01/alice does not hold a result")
    for field in ("status: Input should be 'graded'", "tasks.1.max_score: Field required",
                  "tests.0.score: Input should be a number"):
        assert field in message
    assert "--regrade" in message  # what to do about it


@pytest.mark.parametrize("text", ['{"submission": "a", "key"', "[]", '"a result"'])
def test_text_that_is_no_document_is_the_same_error(text: str) -> None:
    with pytest.raises(ResultDocumentError, match="result document does not hold"):
        decode(text)
