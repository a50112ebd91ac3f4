"""Pairs of submissions whose own code is suspiciously alike, for the instructor's report.

The student's own code is the notebook's code cells minus the cells handed out unchanged;
what remains of the given code is excluded again as boilerplate when fingerprinting.
Scoring is copydetect's winnowing (robust winnowing of token k-grams, as MOSS does), not a
home-made comparison: a pair's score is the smaller of the two shares of each listing
found in the other, so a short answer pasted into a long one does not score high.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import nbformat
from copydetect import CodeFingerprint, compare_files

from autograder.exceptions import SubmissionError
from autograder.notebook import read_notebook

K = 25  # noise threshold: matches shorter than this many characters of tokens are ignored
WINDOW = 1  # guarantee threshold K + WINDOW - 1
THRESHOLD = 0.6  # pairs at or above this share are listed
MAX_PAIRS = 50
MAX_CHARS = 200_000  # of one submission's code fingerprinted: a padded notebook cannot stall the report
PREFILTER = 0.5  # pairs sharing fewer fingerprints than this fraction of the threshold are not compared


@dataclass(frozen=True)
class Pair:
    """Two submissions' own code and how much of each is found in the other."""

    first: str  # submission key
    second: str
    score: float  # min of the two shares, 0..1
    shares: tuple[float, float]
    listings: tuple[str, str]


def own_code(content: bytes | None, given: nbformat.NotebookNode | None) -> str:
    """The code cells the student wrote or changed, joined; "" when the notebook cannot be read."""
    if content is None:
        return ""
    try:
        notebook = read_notebook(content)
    except SubmissionError:
        return ""
    handed_out = {c.source.strip() for c in given.cells if c.cell_type == "code"} if given is not None else set()
    cells = [c.source for c in notebook.cells if c.get("cell_type") == "code" and isinstance(c.get("source"), str)]
    return "\n\n".join(s for s in cells if s.strip() and s.strip() not in handed_out)


def _fingerprint(code: str, boilerplate: list[str] | None = None) -> CodeFingerprint:
    return CodeFingerprint("code.py", K, WINDOW, boilerplate=boilerplate, fp=io.StringIO(code))


def similar_pairs(codes: Mapping[str, str], *, given_code: str = "", threshold: float = THRESHOLD,
                  limit: int = MAX_PAIRS) -> list[Pair]:
    """The pairs of ``codes`` (key -> own code) scoring at least ``threshold``, highest first."""
    boilerplate = list(_fingerprint(given_code).hashes) if given_code.strip() else []
    prints = {}
    for key, code in codes.items():
        if code.strip():
            fingerprint = _fingerprint(code[:MAX_CHARS], boilerplate)
            if len(fingerprint.hashes):
                prints[key] = fingerprint
    hashes = {key: set(fingerprint.hashes) for key, fingerprint in prints.items()}
    pairs = []
    for a, b in itertools.combinations(sorted(prints), 2):
        # cheap bound first: copydetect's shares cannot be high when few fingerprints are shared
        common = len(hashes[a] & hashes[b])
        if common < PREFILTER * threshold * max(len(hashes[a]), len(hashes[b])):
            continue
        _, (share_a, share_b), _ = compare_files(prints[a], prints[b])
        score = min(float(share_a), float(share_b))
        if score >= threshold:
            pairs.append(Pair(a, b, score, (float(share_a), float(share_b)), (codes[a], codes[b])))
    pairs.sort(key=lambda p: (-p.score, p.first, p.second))
    return pairs[:limit]
