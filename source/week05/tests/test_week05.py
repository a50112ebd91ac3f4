"""Hidden tests for week 5: naive Bayes with Laplace smoothing.

The model returned by ``train_naive_bayes`` is the student's own structure: the tests
only ever pass it back to the student's functions. Every expected value is computed
here, in the grader, from the training data the test itself built, drawn from the test's
``seed`` (fresh per submission); the notes' spam example stays fixed.

Points go to the task that earned them. Tasks 1 and 2 never read their values through
``log_scores`` (task 3): the notes' scores are computed here from the student's
``word_probability`` and the priors of the training data. The priors themselves can only
be seen through ``log_scores`` (the log score of the empty message is log P(c)); a
``log_scores`` that adds no prior at all (every empty message scores 0) is charged to
task 3, which checks that it adds one, and costs task 1 nothing. Task 3 checks its sums
against the student's own ``word_probability`` and empty-message scores, so a task-1 or
task-2 mistake costs task 3 nothing.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import MultinomialNB

from autograder.i18n import _
from autograder.testing import Call

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


def checked_scores(scores: object, labels: set[str]) -> dict[str, float]:
    """``log_scores``' answer, after checking it is a dictionary of one number per class."""
    assert isinstance(scores, dict), _("log_scores returned a {type_name}; a dictionary {{label: log score}} is expected").format(type_name=type(scores).__name__)
    assert set(scores) == labels, _("log_scores does not return one score per class (its keys should be the training labels)")
    assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in scores.values()), _("log_scores' scores should be numbers")
    return {label: float(score) for label, score in scores.items()}


def notes_scores(student, model, words: list[str], smoothing: bool) -> dict[str, float]:
    """The notes' example scored here: the priors of the notes (3/8, 5/8) times the
    student's ``word_probability`` of each word, so that only word_probability is graded."""
    priors = {label: SPAM_LABELS.count(label) / len(SPAM_LABELS) for label in ("spam", "ham")}
    word_probability = student.word_probability
    return {label: prior * math.prod(probability(p) for p in student.each(
                [Call(word_probability, model, word, label, smoothing=smoothing) for word in words]))
            for label, prior in priors.items()}


def empty_scores(student, docs: list[str], labels: list[str]) -> dict[str, float]:
    """The student's log scores of the empty message, from a model trained on (docs, labels)."""
    return checked_scores(student.log_scores(student.train_naive_bayes(docs, labels), "", smoothing=True), set(labels))


def adds_no_prior(scores: dict[str, float]) -> bool:
    """Whether every class scores exactly 0 on the empty message: log_scores adds no prior."""
    return all(score == 0.0 for score in scores.values())


def probability(value: object) -> float:
    """``word_probability``'s answer, after checking it is a number."""
    assert isinstance(value, (int, float)) and not isinstance(value, bool), _(
        "word_probability returned a {type_name}; a number is expected"
    ).format(type_name=type(value).__name__)
    return float(value)


def predicted(result: object, labels: set[str]) -> tuple[object, dict]:
    """``predict``'s answer, after checking it is a tuple (label, {label: posterior}) with one
    posterior per class."""
    assert isinstance(result, tuple) and len(result) == 2, _(
        "predict returned a {type_name}; a tuple (label, {{label: posterior}}) is expected"
    ).format(type_name=type(result).__name__)
    label, posteriors = result
    assert isinstance(posteriors, dict), _("predict's posteriors are a {type_name}; a dictionary {{label: posterior}} is expected").format(type_name=type(posteriors).__name__)
    assert set(posteriors) == labels, _("predict's posteriors should have one entry per class (its keys should be the training labels)")
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
        # white space is the only separator: punctuation and digits stay in their words
        "WIN $1,000 now!!! (Don't wait) e-mail: x@y.com": ["win", "$1,000", "now!!!", "(don't", "wait)", "e-mail:", "x@y.com"],
        "  Play SPORTS  ": ["play", "sports"],
        "one\n\ntwo\r\nthree": ["one", "two", "three"],
        "": [],
    }
    tokenize = student.tokenize
    for (text, expected), tokens in zip(cases.items(), student.each([Call(tokenize, text) for text in cases])):
        assert isinstance(tokens, list), _("tokenize returned a {type_name}; a list of words is expected").format(type_name=type(tokens).__name__)
        assert tokens == expected, _("tokenize does not give the lower-cased words split on white space")


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_unsmoothed_probability_is_relative_count(student, seed):
    """Without smoothing, word_probability is count(word, c) / N(c), counted case-insensitively, a word repeated in a message counting each time."""
    docs, labels = random_corpus(seed=[seed, 51], class_sizes={"north": 9, "south": 7}, mixed_case=True)
    # Every class gets a message repeating a word, and one with punctuation kept in words.
    docs += ["Apple apple APPLE kale", "apple kale! Kale", "Tea tea rice", "rice, tea TEA"]
    labels += ["north", "north", "south", "south"]
    counts = class_counts(docs, labels)
    model, word_probability = student.train_naive_bayes(docs, labels), student.word_probability
    for label, counter in counts.items():
        total = sum(counter.values())
        words = [*sorted(counter)[:6], "apple", "kale", "kale!", "tea", "rice,"]
        answers = student.each([Call(word_probability, model, word, label, smoothing=False) for word in words])
        for word, answer in zip(words, answers):
            p = probability(answer)
            assert math.isclose(p, counter[word] / total, rel_tol=1e-9), _(
                "unsmoothed word_probability is not count(word, c) / N(c) on a training set with mixed-case messages"
            )


@pytest.mark.task(1)
@pytest.mark.points(5)
def test_empty_message_scores_log_prior(student, seed):
    """The log score of a message without words is log P(c), the class's share of the training messages (not of the words)."""
    docs, labels = random_corpus(seed=[seed, 52], class_sizes={"red": 5, "green": 3, "blue": 2}, mixed_case=False)
    scores = empty_scores(student, docs, labels)
    if adds_no_prior(scores):
        return  # log_scores adds no prior, so the priors cannot be seen: task 3 is charged for that
    for label in set(labels):
        prior = labels.count(label) / len(labels)
        assert math.isclose(scores[label], math.log(prior), rel_tol=1e-9), _(
            "the log score of an empty message is not log P(c): check the priors (the class's share of the training messages)"
        )


@pytest.mark.task(1)
@pytest.mark.points(2)
def test_leaves_its_inputs_unchanged(unchanged_inputs, student, seed):
    """train_naive_bayes leaves the caller's lists of messages and labels as they were (no in-place lower-casing or sorting), while counting the words."""
    docs, labels = random_corpus(seed=[seed, 55], class_sizes={"left": 4, "right": 5}, mixed_case=True)
    model = unchanged_inputs("train_naive_bayes", student.train_naive_bayes, docs=docs, labels=labels)
    counts = class_counts(docs, labels)
    questions = [(word, label, counter[word] / sum(counter.values()))
                 for label, counter in counts.items() for word in sorted(counter)[:3]]
    answers = student.each([Call(student.word_probability, model, word, label, smoothing=False) for word, label, _p in questions])
    did_the_job = all(math.isclose(probability(answer), right, rel_tol=1e-9)
                      for (_word, _label, right), answer in zip(questions, answers))
    assert did_the_job, _(
        "train_naive_bayes left its inputs as they were, but this check counts only when it also counts the "
        "words: unsmoothed word_probability should be count(word, c) / N(c)"
    )


@pytest.mark.task(1)
@pytest.mark.points(3)
def test_spam_example_unsmoothed(student):
    """Unsmoothed, "secret is secret" scores 0.004630 (spam) vs 0.000185 (ham), 96.15 % spam, as in the notes: P(c) times the unsmoothed word_probability of each word."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    scores = notes_scores(student, model, ["secret", "is", "secret"], smoothing=False)
    assert close_to_quoted(scores["spam"], "0.004630"), _("on the notes' example, P(spam) times the unsmoothed word_probability of each word of \"secret is secret\" is not 0.004630: check count(word, c) / N(c)")
    assert close_to_quoted(scores["ham"], "0.000185"), _("on the notes' example, P(ham) times the unsmoothed word_probability of each word of \"secret is secret\" is not 0.000185: check count(word, c) / N(c)")
    spam_percent = 100 * scores["spam"] / (scores["spam"] + scores["ham"])
    assert close_to_quoted(spam_percent, "96.15"), _("on the notes' example, the unsmoothed scores of \"secret is secret\" do not give 96.15 % spam: check count(word, c) / N(c)")


# ---------------------------------------------------------------- task 2: smoothing


@pytest.mark.task(2)
@pytest.mark.points(10)
def test_smoothed_probability_formula(student, seed):
    """Smoothed, word_probability is (count + 1) / (N(c) + V(c) + 1), for seen and unseen words alike."""
    docs, labels = random_corpus(seed=[seed, 53], class_sizes={"east": 8, "west": 6}, mixed_case=False)
    counts = class_counts(docs, labels)
    model, word_probability = student.train_naive_bayes(docs, labels), student.word_probability
    for label, counter in counts.items():
        denominator = sum(counter.values()) + len(counter) + 1
        words = [*sorted(counter)[:5], "zucchini", *[w for w in WORDS if w not in counter][:1]]
        answers = student.each([Call(word_probability, model, word, label) for word in words])
        for word, answer in zip(words, answers):
            p = probability(answer)
            assert math.isclose(p, (counter[word] + 1) / denominator, rel_tol=1e-9), _(
                "smoothed word_probability is not (count(word, c) + 1) / (N(c) + V(c) + 1)"
            )


@pytest.mark.task(2)
@pytest.mark.points(2)
def test_scoring_leaves_the_model_unchanged(student):
    """Asking for the probability of an unseen word does not change the model: the smoothed probabilities asked before and after agree (and are right)."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    questions = [(word, label, smoothing) for word in ("secret", "sports", "today")
                 for label in ("spam", "ham") for smoothing in (True, False)]
    word_probability = student.word_probability
    unseen = [Call(word_probability, model, word, label, **options) for label in ("spam", "ham")
              for word, options in (("zucchini", {}), ("quokka", {"smoothing": False}))]
    # before, the unseen words, after: one request, in that order
    answers = student.each([*(Call(word_probability, model, *question) for question in questions), *unseen,
                            *(Call(word_probability, model, *question) for question in questions)])
    before = [probability(answer) for answer in answers[:len(questions)]]
    counts = class_counts(SPAM_DOCS, SPAM_LABELS)
    right = [(counts[label][word] + 1) / (sum(counts[label].values()) + len(counts[label]) + 1)
             for word, label, smoothing in questions if smoothing]
    assert all(math.isclose(p, q, rel_tol=1e-9) for p, q in zip(before[::2], right)), _(
        "this check counts only when word_probability also gives the smoothed probabilities right"
    )
    after = [probability(answer) for answer in answers[len(questions) + len(unseen):]]
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
    model, word_probability = student.train_naive_bayes(docs, labels), student.word_probability
    for label, counter in counts.items():
        total = sum(probability(p) for p in student.each(
            [Call(word_probability, model, word, label) for word in [*counter, "neverseenword"]]))
        assert math.isclose(total, 1.0, rel_tol=1e-9), _(
            "smoothed probabilities over the class's vocabulary plus the unknown word do not sum to 1"
        )


@pytest.mark.task(2)
@pytest.mark.points(10)
def test_spam_example_smoothed(student):
    """Smoothed, "today is secret" scores 0.0007324 (spam) vs 0.00048 (ham), as in the notes: P(c) times the smoothed word_probability of each word."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    scores = notes_scores(student, model, ["today", "is", "secret"], smoothing=True)
    assert close_to_quoted(scores["spam"], "0.0007324"), _("on the notes' example, P(spam) times the smoothed word_probability of each word of \"today is secret\" is not 0.0007324: check (count + 1) / (N(c) + V(c) + 1)")
    assert close_to_quoted(scores["ham"], "0.00048"), _("on the notes' example, P(ham) times the smoothed word_probability of each word of \"today is secret\" is not 0.00048: check (count + 1) / (N(c) + V(c) + 1)")


# ---------------------------------------------------------------- task 3: prediction in log space


@pytest.mark.task(3)
@pytest.mark.points(5)
def test_unseen_word_unsmoothed_is_minus_infinity(student):
    """Unsmoothed, a word never seen in a class makes that class's log score -inf, and only that class's."""
    model = student.train_naive_bayes(SPAM_DOCS, SPAM_LABELS)
    for text, impossible, possible in [("secret offer", "ham", "spam"), ("sports today", "spam", "ham")]:
        scores = checked_scores(student.log_scores(model, text, smoothing=False), {"spam", "ham"})
        assert scores[impossible] == -math.inf, _("a class that never saw a word of the message does not score -inf")
        assert math.isfinite(scores[possible]), _("a class that saw every word of the message does not get a finite score")


@pytest.mark.task(3)
@pytest.mark.points(6)
def test_log_score_adds_prior_and_word_log_probabilities(student, seed):
    """log_scores adds log P(c) (the empty message's score, not 0) and log word_probability once per word of the message, repeats included, smoothed or not."""
    docs, labels = random_corpus(seed=[seed, 56], class_sizes={"odd": 7, "even": 3}, mixed_case=False)
    docs += ["apple tea salt", "tea apple rice"]  # words both classes have seen, whatever the draw
    labels += ["odd", "even"]
    empty = empty_scores(student, docs, labels)
    assert not adds_no_prior(empty), _(
        "log_scores should add log P(c) to every class's score: the empty message scores 0 in every class"
    )
    counts = class_counts(docs, labels)
    shared = sorted(set(counts["odd"]) & set(counts["even"]))  # no class gives these probability 0
    rng = np.random.default_rng([seed, 57])
    train, log_scores, word_probability = student.train_naive_bayes, student.log_scores, student.word_probability
    classes = sorted(set(labels))
    for smoothing in (True, False):
        for _message in range(3):
            words = list(rng.choice(shared, size=int(rng.integers(3, 9))))
            words += words[:2]  # repeated words count each time
            model = train(docs, labels)  # fresh: a test of log_scores alone
            # the message's scores, then each class's word probabilities: one request
            answers = student.each([Call(log_scores, model, " ".join(words), smoothing=smoothing),
                                    *(Call(word_probability, model, w, label, smoothing=smoothing)
                                      for label in classes for w in words)])
            scores = checked_scores(answers[0], set(labels))
            for i, label in enumerate(classes):
                expected = empty[label] + sum(math.log(probability(p))
                                              for p in answers[1 + i * len(words):1 + (i + 1) * len(words)])
                assert math.isclose(scores[label], expected, rel_tol=1e-9, abs_tol=1e-9), _(
                    "log_scores should be the empty message's score plus log word_probability of each word of the message, once per occurrence"
                )


@pytest.mark.task(3)
@pytest.mark.points(6)
def test_posteriors_follow_log_scores(student):
    """predict returns the class with the largest log score and posteriors proportional to exp(log score), summing to 1."""
    texts = ["secret is secret", "today is secret", "play sports today", "click link money"]
    predict, log_scores, train = student.predict, student.log_scores, student.train_naive_bayes
    # a fresh model for each call: what one call might add to a model is not charged here
    answers = student.each([Call(method, Call(train, SPAM_DOCS, SPAM_LABELS), text)
                            for text in texts for method in (predict, log_scores)])
    for answer, scores in zip(answers[::2], answers[1::2]):
        label, posteriors = predicted(answer, {"spam", "ham"})
        expected = softmax(checked_scores(scores, {"spam", "ham"}))
        assert math.isclose(sum(posteriors.values()), 1.0, rel_tol=1e-9), _("the posteriors do not add up to 1")
        for c in expected:
            assert math.isclose(posteriors[c], expected[c], rel_tol=1e-6, abs_tol=1e-12), _(
                "the posteriors are not the normalised exponentials of the log scores"
            )
        assert label == max(expected, key=expected.get), _("predict does not return the class with the largest log score")


@pytest.mark.task(3)
@pytest.mark.points(7)
def test_long_message_does_not_underflow(student, rng):
    """A 10,000-word message gets finite log scores and finite posteriors that sum to 1 (no underflow)."""
    # A balanced message: its posterior is neither 0 nor 1, so the normalisation itself is tested.
    balanced = " ".join(rng.permutation(["is"] * 5939 + ["today"] * 4061))
    one_sided = " ".join(["secret"] * 10_000)
    predict, log_scores, train = student.predict, student.log_scores, student.train_naive_bayes
    answers = student.each([Call(method, Call(train, SPAM_DOCS, SPAM_LABELS), text)
                            for text in (balanced, one_sided) for method in (log_scores, predict)])
    for answer, prediction in zip(answers[::2], answers[1::2]):
        scores = checked_scores(answer, {"spam", "ham"})
        assert all(math.isfinite(s) for s in scores.values()), _("smoothed log scores of a long message are not finite")
        label, posteriors = predicted(prediction, {"spam", "ham"})
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
@pytest.mark.points(6)
def test_agrees_with_multinomial_nb(student, seed):
    """predict agrees with scikit-learn's CountVectorizer + MultinomialNB on a synthetic corpus."""
    train_docs, train_labels, test_docs = agreement_corpus(seed)
    vectorizer = CountVectorizer(token_pattern=r"\S+")  # the same tokens as tokenize
    nb = MultinomialNB(alpha=1.0).fit(vectorizer.fit_transform(train_docs), train_labels)
    log_proba = nb.predict_log_proba(vectorizer.transform(test_docs))
    reference = nb.classes_[np.argmax(log_proba, axis=1)]
    log_odds = np.abs(log_proba[:, 0] - log_proba[:, 1])

    model = student.train_naive_bayes(train_docs, train_labels)
    answers = student.each([Call(student.predict, model, doc) for doc in test_docs])
    labels = np.array([predicted(answer, {"alpha", "beta"})[0] for answer in answers])

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
