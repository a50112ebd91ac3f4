"""Groups of similar free-text answers, so that one marking decision can cover a group.

Answers are compared as TF-IDF vectors of character n-grams (within word boundaries,
2 to 4 characters): these need no tokeniser, so they work alike for English, Portuguese,
Spanish and Japanese, which is written without spaces between words. Groups are made by
average-linkage agglomerative clustering on cosine distance, cut at ``DISTANCE``: it has
no random start, so the same answers always give the same groups. Texts are compared
after Unicode NFKC normalisation (full-width and half-width forms alike), case folding and
whitespace collapsing; empty answers form a group of their own.

Grouping is bounded, because the answers are whatever students uploaded and it runs in the
service's web process (in the background: ``service/answer_groups.py``) and in ``grade``:
only an answer's first ``ANSWER_CHARS`` characters are compared. The cut comes before
normalising, since NFKC can make one character 18 (a 500,000 x U+FDFA answer would become 9
million characters, seconds of CPU and gigabytes in the vectoriser), and again after it and
case folding, which lengthen text. Two answers alike in their first ``ANSWER_CHARS``
characters are proposed as one group; the marker still reads each whole answer. The service
groups a set of answers once, keeping the groups by the set's ``fingerprint``, so a page
shown again does not group them again.

The groups only propose: the marker sees every answer of a group and can leave any out.
How close they come to a marker's groups, and the other methods tried, is measured by
``benchmarks/grouping_quality.py`` (benchmarks/README.md).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_distances

DISTANCE = 0.65  # average cosine distance up to which answers join one group
NGRAMS = (2, 4)
ANSWER_CHARS = 4000  # compared of each answer: ~40 lines of prose, more than any answer the course asks for


def normalise(text: str) -> str:
    """``text`` as answers are compared: its first ``ANSWER_CHARS`` characters, NFKC,
    case-folded, whitespace collapsed, cut to ``ANSWER_CHARS`` again (NFKC and case folding
    lengthen text, NFKC up to 18 times): the work is bounded whatever a student wrote."""
    return " ".join(unicodedata.normalize("NFKC", text[:ANSWER_CHARS]).casefold().split())[:ANSWER_CHARS]


def fingerprint(answers: Mapping[str, str], *, distance: float = DISTANCE) -> str:
    """A SHA-256 naming a set of answers as they are grouped (keys, and texts as far as they
    are compared: ``ANSWER_CHARS``) and the grouping's settings: the same for the same
    answers in any order, another for any change that can change the groups."""
    compared = sorted((key, text[:ANSWER_CHARS]) for key, text in answers.items())
    return hashlib.sha256(json.dumps([distance, NGRAMS, ANSWER_CHARS, compared]).encode()).hexdigest()


def group_answers(answers: Mapping[str, str], *, distance: float = DISTANCE) -> list[list[str]]:
    """The keys of ``answers`` (key -> answer text) in groups of similar answers.

    Largest group first, ties in the order of their first key in ``answers``; keys in that
    order within a group too. Every key is in exactly one group (an answer like no other
    is a group of one). The groups depend on the set of answers only, not on their order."""
    order = {key: index for index, key in enumerate(answers)}
    texts: dict[str, list[str]] = {}  # normalised text -> keys giving it
    for key in answers:
        texts.setdefault(normalise(answers[key]), []).append(key)
    empty = texts.pop("", [])
    distinct = sorted(texts)
    labels = _cluster(distinct, distance)
    groups: dict[int, list[str]] = {}
    for text, label in zip(distinct, labels, strict=True):
        groups.setdefault(label, []).extend(texts[text])
    result = [sorted(keys, key=order.__getitem__) for keys in groups.values()]
    if empty:
        result.append(empty)
    return sorted(result, key=lambda keys: (-len(keys), order[keys[0]]))


def _cluster(texts: list[str], distance: float) -> list[int]:
    """A cluster label for each of ``texts`` (distinct, non-empty, sorted): agglomerative
    clustering of their TF-IDF character n-grams."""
    if len(texts) < 2:
        return list(range(len(texts)))
    vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=NGRAMS, sublinear_tf=True).fit_transform(texts)
    distances = np.clip(cosine_distances(vectors), 0.0, None)  # rounding can make a self-distance -1e-16
    model = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                    distance_threshold=distance)
    return [int(label) for label in model.fit_predict(distances)]
