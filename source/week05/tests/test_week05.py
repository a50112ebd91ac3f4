"""Hidden tests for week 5: naive Bayes with Laplace smoothing.

The model returned by ``train_naive_bayes`` is the student's own structure: the tests
only ever pass it back to the student's functions. Every expected value is computed
here, in the grader, from the training data the test itself built, drawn from the test's
``seed`` (fresh per submission); the notes' spam example stays fixed.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import MultinomialNB

from autograder.i18n import _

# The notes' spam example (three spam, five ham messages).
SPAM = ["offer is secret", "click secret link", "secret sports link"]
HAM = ["play sports today", "went play sports", "secret sports event", "sports is today", "sports costs money"]
SPAM_DOCS = SPAM + HAM
SPAM_LABELS = ["spam"] * len(SPAM) + ["ham"] * len(HAM)

WORDS = [
    "apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey", "icing", "jam",
    "kale", "lemon", "mango", "nuts", "olive", "pears", "quince", "rice", "salt", "tea",
]


def random_corpus(seed: int | list[int], class_sizes: dict[str, int], mixed_case: bool) -> tuple[list[str], list[str]]:
    """Short messages over WORDS, each class favouring its own words; labels interleaved."""
    rng = np.random.default_rng(seed)
    docs, labels = [], []
    for label, size in class_sizes.items():
        weights = rng.dirichlet(np.full(len(WORDS), 0.7))
        for _message in range(size):
            words = rng.choice(WORDS, size=int(rng.integers(2, 9)), p=weights)
            if mixed_case:
                words = [w.upper() if rng.random() < 0.3 else w.capitalize() if rng.random() < 0.3 else w for w in words]
            docs.append(" ".join(words))
            labels.append(label)
    order = rng.permutation(len(docs))
    return [docs[i] for i in order], [labels[i] for i in order]


def class_counts(docs: list[str], labels: list[str]) -> dict[str, Counter]:
    """count(w, c) for every class, on lower-cased white-space tokens."""
    counts: dict[str, Counter] = {}
    for doc, label in zip(docs, labels):
        counts.setdefault(label, Counter()).update(doc.lower().split())
    return counts


def exp_scores(student, model, text: str, smoothing: bool) -> dict[str, float]:
    """The student's scores as probabilities (exp of their log scores)."""
    scores = student.log_scores(model, text, smoothing=smoothing)
    assert isinstance(scores, dict), _("log_scores returned a {type_name}; a dictionary {{label: log score}} is expected").format(type_name=type(scores).__name__)
    return {label: math.exp(score) for label, score in scores.items()}


def probability(value: object) -> float:
    """``word_probability``'s answer, after checking it is a number."""
    assert isinstance(value, (int, float)) and not isinstance(value, bool), _(
        "word_probability returned a {type_name}; a number is expected"
    ).format(type_name=type(value).__name__)
    return float(value)


def predicted(result: object) -> tuple[object, dict]:
    """``predict``'s answer, after checking it is a tuple (label, {label: posterior})."""
    assert isinstance(result, tuple) and len(result) == 2, _(
        "predict returned a {type_name}; a tuple (label, {{label: posterior}}) is expected"
    ).format(type_name=type(result).__name__)
    label, posteriors = result
    assert isinstance(posteriors, dict), _("predict's posteriors are a {type_name}; a dictionary {{label: posterior}} is expected").format(type_name=type(posteriors).__name__)
    return label, posteriors


def softmax(scores: dict[str, float]) -> dict[str, float]:
    """Posteriors from log scores, computed stably here in the grader."""
    largest = max(scores.values())
    weights = {label: math.exp(s - largest) for label, s in scores.items()}
    total = sum(weights.values())
    return {label: w / total for label, w in weights.items()}


def close_to_quoted(value: float, quoted: str) -> bool:
    """Whether ``value`` rounds to the number as the notes quote it (half a unit in its last digit)."""
    decimals = len(quoted.split(".")[1])
    return abs(value - float(quoted)) <= 0.5 * 10.0 ** (-decimals) + 1e-15


# ---------------------------------------------------------------- task 1: counts and priors


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_tokenize(student):
    """tokenize lower-cases and splits on any white space."""
    cases = {
        "Secret  OFFER\ttoday\n": ["secret", "offer", "today"],
        "  Play SPORTS  ": ["play", "sports"],
        "one\n\ntwo\r\nthree": ["one", "two", "three"],
        "": [],
    }
    for text, expected in cases.items():
        tokens = student.tokenize(text)
        assert isinstance(tokens, list), _("tokenize returned a {type_name}; a list of words is expected").format(type_name=type(tokens).__name__)
        assert tokens == expected, _("tokenize does not give the lower-cased words split on white space")


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_unsmoothed_probability_is_relative_count(student, seed):
    """Without smoothing, word_probability is count(word, c) / N(c), counted case-insensitively."""
    docs, labels = random_corpus(seed=[seed, 51], class_sizes={"north": 9, "south": 7}, mixed_case=True)
    counts = class_counts(docs, labels)
    model = student.train_naive_bayes(docs, labels)
    for label, counter in counts.items():
        total = sum(counter.values())
        for word in sorted(counter)[:6]:
            p = probability(student.word_probability(model, word, label, smoothing=False))
            assert math.isclose(p, counter[word] / total, rel_tol=1e-9), _(
                "unsmoothed word_probability is not count(word, c) / N(c) on a training set with mixed-case messages"
            )


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_empty_message_scores_log_prior(student, seed):
    """The log score of a message without words is log P(c), the class's share of the training messages."""
    docs, labels = random_corpus(seed=[seed, 52], class_sizes={"red": 5, "green": 3, "blue": 2}, mixed_case=False)
    model = student.train_naive_bayes(docs, labels)
    for smoothing in (True, False):
        scores = student.log_scores(model, "", smoothing=smoothing)
        assert isinstance(scores, dict), _("log_scores returned a {type_name}; a dictionary {{label: log score}} is expected").format(type_name=type(scores).__name__)
        assert set(scores) == set(labels), _("log_scores does not return one score per class (its keys should be the training labels)")
        for label in set(labels):
            prior = labels.count(label) / len(labels)
            assert math.isclose(scores[label], math.log(prior), rel_tol=1e-9), _(
                "the log score of an empty message is not log P(c): check the priors"
            )


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, seed):
    """train_naive_bayes leaves the caller's lists of messages and labels as they were (no in-place lower-casing or sorting)."""
    docs, labels = random_corpus(seed=[seed, 55], class_sizes={"left": 4, "right": 5}, mixed_case=True)
    unchanged_inputs("train_naive_bayes", student.train_naive_bayes, docs=docs, labels=labels)


@pytest.mark.task(1)
@pytest.mark.points(3)
def test_spam_example_unsmoothed(student):
    """Unsmoothed, "secret is secret" scores 0.004630 (spam) vs 0.000185 (ham), 96.15 % spam, as in the notes."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    scores = exp_scores(student, model, "secret is secret", smoothing=False)
    assert set(scores) == {"spam", "ham"}, _("log_scores does not return one score per class")
    assert close_to_quoted(scores["spam"], "0.004630"), _("the unsmoothed spam score of the notes' example is wrong")
    assert close_to_quoted(scores["ham"], "0.000185"), _("the unsmoothed ham score of the notes' example is wrong")
    spam_percent = 100 * scores["spam"] / (scores["spam"] + scores["ham"])
    assert close_to_quoted(spam_percent, "96.15"), _("the unsmoothed spam posterior of the notes' example is wrong")


# ---------------------------------------------------------------- task 2: smoothing


@pytest.mark.task(2)
@pytest.mark.points(10)
def test_smoothed_probability_formula(student, seed):
    """Smoothed, word_probability is (count + 1) / (N(c) + V(c) + 1), for seen and unseen words alike."""
    docs, labels = random_corpus(seed=[seed, 53], class_sizes={"east": 8, "west": 6}, mixed_case=False)
    counts = class_counts(docs, labels)
    model = student.train_naive_bayes(docs, labels)
    for label, counter in counts.items():
        denominator = sum(counter.values()) + len(counter) + 1
        for word in [*sorted(counter)[:5], "zucchini", *[w for w in WORDS if w not in counter][:1]]:
            p = probability(student.word_probability(model, word, label))
            assert math.isclose(p, (counter[word] + 1) / denominator, rel_tol=1e-9), _(
                "smoothed word_probability is not (count(word, c) + 1) / (N(c) + V(c) + 1)"
            )


@pytest.mark.task(2)
@pytest.mark.points(2)
def test_scoring_leaves_the_model_unchanged(student):
    """Asking for the probability of an unseen word, or scoring a message, does not change the model: the probabilities asked before and after agree."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    questions = [(word, label, smoothing) for word in ("secret", "sports", "today")
                 for label in ("spam", "ham") for smoothing in (True, False)]
    before = [probability(student.word_probability(model, *question)) for question in questions]
    for label in ("spam", "ham"):
        student.word_probability(model, "zucchini", label)
        student.word_probability(model, "quokka", label, smoothing=False)
    student.log_scores(model, "never heard such words")
    student.predict(model, "unheard of offers today")
    after = [probability(student.word_probability(model, *question)) for question in questions]
    assert after == before, _(
        "asking about unseen words changed the model: the same probabilities differ afterwards "
        "(look a word up without adding it: counts.get(word, 0); a defaultdict adds every key it is asked for)"
    )


@pytest.mark.task(2)
@pytest.mark.points(8)
def test_smoothed_probabilities_sum_to_one(student, seed):
    """The smoothed probabilities of a class's words plus that of the unknown word add up to 1."""
    docs, labels = random_corpus(seed=[seed, 54], class_sizes={"up": 5, "down": 5}, mixed_case=False)
    counts = class_counts(docs, labels)
    model = student.train_naive_bayes(docs, labels)
    for label, counter in counts.items():
        total = sum(probability(student.word_probability(model, word, label)) for word in counter)
        total += probability(student.word_probability(model, "neverseenword", label))
        assert math.isclose(total, 1.0, rel_tol=1e-9), _(
            "smoothed probabilities over the class's vocabulary plus the unknown word do not sum to 1"
        )


@pytest.mark.task(2)
@pytest.mark.points(10)
def test_spam_example_smoothed(student):
    """Smoothed, "today is secret" scores 0.0007324 (spam) vs 0.00048 (ham), as in the notes."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    scores = exp_scores(student, model, "today is secret", smoothing=True)
    assert set(scores) == {"spam", "ham"}, _("log_scores does not return one score per class")
    assert close_to_quoted(scores["spam"], "0.0007324"), _("the smoothed spam score of the notes' example is wrong")
    assert close_to_quoted(scores["ham"], "0.00048"), _("the smoothed ham score of the notes' example is wrong")


# ---------------------------------------------------------------- task 3: prediction in log space


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_unseen_word_unsmoothed_is_minus_infinity(student):
    """Unsmoothed, a word never seen in a class makes that class's log score -inf, and only that class's."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    for text, impossible, possible in [("secret offer", "ham", "spam"), ("sports today", "spam", "ham")]:
        scores = student.log_scores(model, text, smoothing=False)
        assert scores[impossible] == -math.inf, _("a class that never saw a word of the message does not score -inf")
        assert math.isfinite(scores[possible]), _("a class that saw every word of the message does not get a finite score")


@pytest.mark.task(3)
@pytest.mark.points(8)
def test_posteriors_follow_log_scores(student):
    """predict returns the class with the largest log score and posteriors proportional to exp(log score), summing to 1."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    for text in ["secret is secret", "today is secret", "play sports today", "click link money"]:
        label, posteriors = predicted(student.predict(model, text))
        expected = softmax(student.log_scores(model, text))
        assert set(posteriors) == set(expected), _("predict's posteriors should have one entry per class (its keys should be the training labels)")
        assert math.isclose(sum(posteriors.values()), 1.0, rel_tol=1e-9), _("the posteriors do not add up to 1")
        for c in expected:
            assert math.isclose(posteriors[c], expected[c], rel_tol=1e-6, abs_tol=1e-12), _(
                "the posteriors are not the normalised exponentials of the log scores"
            )
        assert label == max(expected, key=expected.get), _("predict does not return the class with the largest log score")


@pytest.mark.task(3)
@pytest.mark.points(10)
def test_long_message_does_not_underflow(student, rng):
    """A 10,000-word message gets finite log scores and finite posteriors that sum to 1 (no underflow)."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    # A balanced message: its posterior is neither 0 nor 1, so the normalisation itself is tested.
    balanced = " ".join(rng.permutation(["is"] * 5939 + ["today"] * 4061))
    one_sided = " ".join(["secret"] * 10_000)
    for text in (balanced, one_sided):
        scores = student.log_scores(model, text)
        assert all(math.isfinite(s) for s in scores.values()), _("smoothed log scores of a long message are not finite")
        label, posteriors = predicted(student.predict(model, text))
        values = list(posteriors.values())
        assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in values), _(
            "posteriors of a 10,000-word message are not finite probabilities (underflow?)"
        )
        assert math.isclose(sum(values), 1.0, rel_tol=1e-9), _("posteriors of a 10,000-word message do not add up to 1")
        expected = softmax(scores)
        for c in expected:
            assert math.isclose(posteriors[c], expected[c], rel_tol=1e-6, abs_tol=1e-12), _(
                "posteriors of a 10,000-word message are not the normalised exponentials of its log scores"
            )
    assert label == "spam", _("a message made only of the spammiest word is not classified as spam")


def agreement_corpus(seed: int) -> tuple[list[str], list[str], list[str]]:
    """A synthetic two-class corpus: 150 + 150 training messages and 150 test messages.

    Both classes draw from tilted versions of one shared word distribution, so the
    messages overlap and the decision is not trivial.
    """
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"word{i:02d}" for i in range(40)])
    base = rng.dirichlet(np.full(len(vocabulary), 2.0))
    probs = base * np.exp(0.5 * rng.normal(size=(2, len(vocabulary))))
    probs /= probs.sum(axis=1, keepdims=True)

    def message(k: int) -> str:
        return " ".join(rng.choice(vocabulary, size=int(rng.integers(5, 30)), p=probs[k]))

    train_labels = ["alpha", "beta"] * 150  # balanced: the priors cancel out
    train_docs = [message(0 if c == "alpha" else 1) for c in train_labels]
    test_docs = [message(int(rng.integers(2))) for _message in range(150)]
    return train_docs, train_labels, test_docs


@pytest.mark.task(3)
@pytest.mark.points(7)
def test_agrees_with_multinomial_nb(student, seed):
    """predict agrees with scikit-learn's CountVectorizer + MultinomialNB on a synthetic corpus."""
    train_docs, train_labels, test_docs = agreement_corpus(seed)
    vectorizer = CountVectorizer(token_pattern=r"\S+")  # the same tokens as tokenize
    nb = MultinomialNB(alpha=1.0).fit(vectorizer.fit_transform(train_docs), train_labels)
    log_proba = nb.predict_log_proba(vectorizer.transform(test_docs))
    reference = nb.classes_[np.argmax(log_proba, axis=1)]
    log_odds = np.abs(log_proba[:, 0] - log_proba[:, 1])

    model = student.train_naive_bayes(train_docs, train_labels)
    labels = np.array([predicted(student.predict(model, doc))[0] for doc in test_docs])

    # MultinomialNB(alpha=1) smooths with (count + 1) / (N(c) + |vocabulary|), the course
    # with (count + 1) / (N(c) + V(c) + 1). On this corpus every word occurs in both classes
    # and N(c) is in the thousands, so the two differ by about 1/N(c) per word: a message's
    # log-odds moves by far less than 0.1. So the predictions must be identical wherever
    # scikit-learn's log-odds exceed 0.1, and may differ only on near-ties; at least 95 %
    # must agree overall.
    clear = log_odds > 0.1
    assert np.all(labels[clear] == reference[clear]), _(
        "predict disagrees with MultinomialNB on messages whose class is clear"
    )
    assert np.mean(labels == reference) >= 0.95, _("predict agrees with MultinomialNB on fewer than 95 % of messages")
