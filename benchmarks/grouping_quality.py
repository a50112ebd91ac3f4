"""How well the grouping of free-text answers matches a careful marker's groups.

    .venv/bin/python benchmarks/grouping_quality.py            # the shipped method, per task and overall
    .venv/bin/python benchmarks/grouping_quality.py --search   # and every candidate, chosen on weeks 1-3

Reads benchmarks/grouping_answers.json (212 answers to the course's seven hand-graded tasks
in en, ja, pt and es, each with the group a marker would put it in) and prints the adjusted
Rand index (sklearn.metrics.adjusted_rand_score: 1 = the marker's groups exactly, 0 = no
better than chance) of ``autograder.grouping.group_answers`` against those groups, two ways:

* ``mixed``: all of a task's answers together, as the marking sheet and the rubric page
  group them, the gold group being the idea whatever the language (an answer in Japanese
  and one in Spanish with the same idea belong together, which no comparison of characters
  can see);
* ``one language``: each task's answers in one language alone (a class writing in one
  language), averaged over the task's languages.

``--search`` also scores candidate methods (character n-grams within or across word
boundaries and their lengths, word n-grams, both together, dropping n-grams common to most
answers, average/complete/single linkage, the distance threshold), ranked by the sum of
the two figures on the tasks of weeks 1-3 (``dev``); their figures on weeks 4-6 (``held
out``) are printed beside them and are not used in ranking, so that a method is not chosen
by the gold set alone: the best on weeks 1-3 replaces the shipped method only if it is also
better on weeks 4-6.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import hstack
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.pairwise import cosine_distances

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.grouping import DISTANCE, NGRAMS, group_answers, normalise

ANSWERS = Path(__file__).with_name("grouping_answers.json")
DEV_WEEKS = ("week01", "week02", "week03")  # choose on these; weeks 4-6 are held out

Grouper = Callable[[dict[str, str]], list[list[str]]]


@dataclass(frozen=True)
class Answer:
    key: str
    task: str
    language: str
    group: str
    text: str


def load() -> list[Answer]:
    document = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return [Answer(f"a{index}", a["task"], a["language"], a["group"], a["text"])
            for index, a in enumerate(document["answers"])]


def ari(answers: Sequence[Answer], grouper: Grouper) -> float:
    """The adjusted Rand index of ``grouper``'s groups of ``answers`` against their gold groups."""
    groups = grouper({a.key: a.text for a in answers})
    found = {key: number for number, keys in enumerate(groups) for key in keys}
    return float(adjusted_rand_score([a.group for a in answers], [found[a.key] for a in answers]))


def scores(answers: Sequence[Answer], grouper: Grouper) -> dict[str, tuple[float, float]]:
    """Task -> (mixed ARI, mean one-language ARI)."""
    result = {}
    for task in sorted({a.task for a in answers}):
        of_task = [a for a in answers if a.task == task]
        languages = sorted({a.language for a in of_task})
        result[task] = (ari(of_task, grouper),
                        statistics.mean(ari([a for a in of_task if a.language == lang], grouper) for lang in languages))
    return result


def mean(figures: dict[str, tuple[float, float]], weeks: Sequence[str] | None = None) -> tuple[float, float]:
    chosen = [v for task, v in figures.items() if weeks is None or task.split("/")[0] in weeks]
    return statistics.mean(v[0] for v in chosen), statistics.mean(v[1] for v in chosen)


@dataclass(frozen=True)
class Candidate:
    """A way to vectorise and cluster normalised answers: ``features`` a list of
    (analyzer, n-gram range) TF-IDF blocks stacked side by side; ``max_df`` below 1 drops
    the n-grams in more than that share of a task's answers (its question's own words)."""

    features: tuple[tuple[str, tuple[int, int]], ...]
    linkage: str
    distance: float
    max_df: float = 1.0

    @property
    def name(self) -> str:
        blocks = "+".join(f"{analyzer}{low}-{high}" for analyzer, (low, high) in self.features)
        return f"{blocks} {self.linkage} {self.distance:.2f}" + (f" max_df {self.max_df}" if self.max_df < 1 else "")

    def __call__(self, answers: dict[str, str]) -> list[list[str]]:
        texts: dict[str, list[str]] = {}
        for key, text in answers.items():
            texts.setdefault(normalise(text), []).append(key)
        distinct = sorted(texts)
        if len(distinct) < 2:
            return list(texts.values())
        blocks = [TfidfVectorizer(analyzer=analyzer, ngram_range=ngrams, sublinear_tf=True,
                                  max_df=self.max_df).fit_transform(distinct)
                  for analyzer, ngrams in self.features]
        vectors = hstack(blocks).tocsr() if len(blocks) > 1 else blocks[0]
        distances = np.clip(cosine_distances(vectors), 0.0, None)
        labels = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage=self.linkage,
                                         distance_threshold=self.distance).fit_predict(distances)
        groups: dict[int, list[str]] = {}
        for text, label in zip(distinct, labels, strict=True):
            groups.setdefault(int(label), []).extend(texts[text])
        return list(groups.values())


def candidates() -> list[Candidate]:
    features: list[tuple[tuple[str, tuple[int, int]], ...]] = [
        (("char_wb", (2, 4)),), (("char_wb", (1, 3)),), (("char_wb", (2, 5)),), (("char_wb", (3, 5)),),
        (("char", (2, 4)),), (("char", (3, 6)),), (("word", (1, 1)),), (("word", (1, 2)),),
        (("char_wb", (2, 4)), ("word", (1, 1))),
    ]
    thresholds = [round(0.40 + 0.05 * step, 2) for step in range(12)]  # 0.40 ... 0.95
    return [Candidate(f, linkage, distance) for f in features for linkage in ("average", "complete", "single")
            for distance in thresholds] + [Candidate(f, linkage, distance, 0.5) for f in features[:3]
                                           for linkage in ("average", "complete") for distance in thresholds]


def perfect_within_language(answers: Sequence[Answer], texts: dict[str, str]) -> list[list[str]]:
    """The marker's groups, each split by language: what a method comparing characters
    could at best find, since the same idea in two languages shares no n-grams."""
    by_key = {a.key: a for a in answers}
    groups: dict[tuple[str, str], list[str]] = {}
    for key in texts:
        groups.setdefault((by_key[key].group, by_key[key].language), []).append(key)
    return list(groups.values())


def print_table(title: str, figures: dict[str, tuple[float, float]]) -> None:
    print(f"\n{title}\n{'task':10} {'mixed':>6} {'one language':>13}")
    for task, (mixed, alone) in figures.items():
        print(f"{task:10} {mixed:6.3f} {alone:13.3f}")
    held = {task: v for task, v in figures.items() if task.split("/")[0] not in DEV_WEEKS}
    for label, m in (("dev", mean(figures, DEV_WEEKS)), ("held out", mean(held)), ("overall", mean(figures))):
        print(f"{label:10} {m[0]:6.3f} {m[1]:13.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--search", action="store_true", help="score every candidate method too")
    parser.add_argument("--top", type=int, default=12, help="candidates shown (best on the dev weeks first)")
    args = parser.parse_args()
    answers = load()
    print(f"{len(answers)} answers, {len({a.task for a in answers})} tasks, "
          f"languages {', '.join(sorted({a.language for a in answers}))}")
    oracle = scores(answers, lambda texts: perfect_within_language(answers, texts))
    print(f"for scale, the marker's own groups split by language (what comparing characters could at best "
          f"see) score mixed {mean(oracle)[0]:.3f}, one language {mean(oracle)[1]:.3f}")
    print_table("group_answers, as shipped", scores(answers, group_answers))
    if not args.search:
        return
    dev = [a for a in answers if a.task.split("/")[0] in DEV_WEEKS]
    held = [a for a in answers if a.task.split("/")[0] not in DEV_WEEKS]
    rows = []
    for candidate in candidates():
        rows.append((mean(scores(dev, candidate)), mean(scores(held, candidate)), candidate.name))
    rows.sort(key=lambda row: (-sum(row[0]), row[2]))
    shipped = Candidate((("char_wb", NGRAMS),), "average", DISTANCE).name
    rank = next(index for index, row in enumerate(rows, start=1) if row[2] == shipped)
    print(f"\ncandidates by mixed + one-language ARI on weeks 1-3, best first ({len(rows)} tried; "
          f"the shipped {shipped} is number {rank})")
    print(f"{'method':34} {'dev mixed':>9} {'dev one':>8} {'held mixed':>10} {'held one':>9}")
    for (dev_mixed, dev_one), (held_mixed, held_one), name in rows[: args.top] + rows[rank - 1 : rank]:
        print(f"{name:34} {dev_mixed:9.3f} {dev_one:8.3f} {held_mixed:10.3f} {held_one:9.3f}")


if __name__ == "__main__":
    main()
