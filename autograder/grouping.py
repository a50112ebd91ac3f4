"""Groups of similar free-text answers, so that one marking decision can cover a group.

Answers are compared as TF-IDF vectors of character n-grams (within word boundaries,
2 to 4 characters): these need no tokeniser, so they work alike for English, Portuguese,
Spanish and Japanese, which is written without spaces between words. Groups are made by
average-linkage agglomerative clustering on cosine distance, cut at ``DISTANCE``: it has
no random start, so the same answers always give the same groups. Texts are compared
after Unicode NFKC normalisation (full-width and half-width forms alike), case folding and
whitespace collapsing; empty answers form a group of their own.

The groups only propose: the marker sees every answer of a group and can leave any out.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_distances

DISTANCE = 0.65  # average cosine distance up to which answers join one group
NGRAMS = (2, 4)


def normalise(text: str) -> str:
    """``text`` as answers are compared: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


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
    """A cluster label for each of ``texts`` (distinct, non-empty)."""
    if len(texts) < 2:
        return list(range(len(texts)))
    vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=NGRAMS, sublinear_tf=True).fit_transform(texts)
    distances = np.clip(cosine_distances(vectors), 0.0, None)  # rounding can make a self-distance -1e-16
    model = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                    distance_threshold=distance)
    return [int(label) for label in model.fit_predict(distances)]
