"""A class of 300 in a running service: week01 handed in by 300 students whose names are in
four languages (English, Japanese, Portuguese, Spanish), each notebook in its student's
language, for the tests of the instructor's pages at the size issue 40 is about.

Grading 300 notebooks in the sandbox would take a CI run's minutes, so none is graded here:
each hand-in goes through the calls the service's runner makes, in its order, and leaves the
one record a graded attempt has (``Store.submit`` stores the upload and queues the attempt,
``Store.claim`` takes it, the result starts as ``judge.base_result``, the answers' fingerprints
come from ``manual.answer_hashes`` as ``Runner._record`` computes them, ``Store.record_result``
writes the gradebook's result, the feedback page and the attempt's row; then the groups of
similar answers are computed in the background, as the runner has them computed:
``answer_groups.regroup``). Every page then reads these attempts as it reads graded ones. The
autograded points are drawn, not computed: the pages show them, no test here checks a grader.

The answers to the hand-graded tasks 3 and 4 give grouping work: paraphrases of the same
right idea, wrong ideas, blanks, "don't know"s, copies of the long model answer and one idea
said sixty times over (5 kB), in the student's language. A few students have several graded
attempts, a few have one still queued or one that failed, and the first answers of the list
are marked.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.course import Course, Week
from autograder.database import clock
from autograder.grading.judge import base_result
from autograder.i18n.languages import translations
from autograder.manual import answer_hashes
from autograder.notebook import declared_language
from autograder.results import Participant, Status, SubmissionResult, TaskResult, TestResult
from autograder.service.answer_groups import regroup
from autograder.service.policy import WeekPolicy
from autograder.service.runner import week_answers
from autograder.service.store import Attempt, Store
from autograder.submission import Submission
from tests.service.lms import Lms
from tests.service.lti_platform import COURSE

WEEK = "week01"
LANGUAGES = ("en", "ja", "pt", "es")
SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions" / WEEK

# 15 given names x 5 family names per language: 75 students each, 300 in all (names as each
# language writes them: a Japanese family name first, accents kept)
GIVEN = {
    "en": ["Olivia", "Liam", "Amelia", "Noah", "Isla", "Oliver", "Ava", "George", "Mia", "Harry", "Grace", "Jack",
           "Chloe", "Leo", "Evie"],
    "ja": ["花子", "太郎", "陽菜", "蓮", "結衣", "大翔", "美咲", "悠斗", "さくら", "健太", "由美", "翔", "彩", "拓海",
           "優子"],
    "pt": ["João", "Maria", "Conceição", "José", "Inês", "Gonçalo", "Beatriz", "Sebastião", "Lúcia", "Tomás",
           "Leonor", "André", "Margarida", "Luís", "Ana"],
    "es": ["Ángela", "José", "María", "Íñigo", "Begoña", "Andrés", "Lucía", "Martín", "Sofía", "Raúl", "Inés",
           "Jesús", "Nuria", "Óscar", "Elena"],
}
FAMILY = {
    "en": ["Smith", "O'Brien", "Taylor", "Clarke", "Walker"],
    "ja": ["田中", "鈴木", "佐藤", "高橋", "渡辺"],
    "pt": ["Gonçalves", "Araújo", "Simões", "Magalhães", "Brandão"],
    "es": ["Muñoz", "Peña", "Fernández", "Ibáñez", "Núñez"],
}

# per language and task: ideas a marker would group, each a list of paraphrases
ANSWERS: dict[str, dict[int, dict[str, list[str]]]] = {
    "en": {
        3: {"spam": ["Spam filtering: each e-mail is a vector of word counts, +1 is spam and -1 is not spam.",
                     "An e-mail spam filter. Features are how often words occur; label +1 spam, -1 normal mail.",
                     "Classifying e-mails as spam (+1) or not spam (-1) from the words they contain."],
            "tumour": ["Deciding whether a tumour is benign or malignant from its size and shape in a scan.",
                       "Medical diagnosis: malignant (+1) versus benign (-1) tumours, features from the scan."],
            "regression": ["Predicting the price of a house from its area and number of rooms.",
                           "House prices: the output is the price in euros, learnt from past sales."],
            "unsure": ["I don't know.", "Not sure, I did not understand the question."]},
        4: {"criterion": ["It minimises the perceptron criterion: the sum of -y w.x over the misclassified points.",
                          "Minimise the sum over misclassified samples of -y times w^T x, by stochastic gradient "
                          "descent.",
                          "The loss is max(0, -y w.x) summed over the data; the update is a gradient step on it."],
            "margin": ["It maximises the margin between the two classes.",
                       "The perceptron finds the hyperplane with the largest margin, like an SVM."],
            "squares": ["It minimises the squared error between the output and the label."],
            "unsure": ["No idea.", "I ran out of time."]},
    },
    "ja": {
        3: {"spam": ["スパムフィルタ：各メールを単語の出現回数のベクトルにし、+1がスパム、-1がスパムではない。",
                     "迷惑メールの判定。特徴量は単語の頻度で、ラベルは+1がスパム、-1が通常のメール。"],
            "tumour": ["画像から腫瘍が良性か悪性かを大きさと形で判定する。",
                       "医療診断：悪性(+1)と良性(-1)の腫瘍を分類する。"],
            "regression": ["家の広さと部屋数から家の価格を予測する。"],
            "unsure": ["わかりません。"]},
        4: {"criterion": ["パーセプトロン基準、つまり誤分類された点についての -y w・x の和を最小化する。",
                          "誤分類されたサンプルの -y wᵀx の総和を確率的勾配降下法で最小化する。"],
            "margin": ["2つのクラスの間のマージンを最大化する。"],
            "squares": ["出力とラベルの二乗誤差を最小化する。"],
            "unsure": ["時間が足りませんでした。"]},
    },
    "pt": {
        3: {"spam": ["Filtro de spam: cada e-mail é um vetor com a contagem das palavras; +1 é spam, -1 não é.",
                     "Classificar e-mails como spam (+1) ou não spam (-1) a partir das palavras que contêm."],
            "tumour": ["Decidir se um tumor é benigno ou maligno pelo tamanho e pela forma na imagem.",
                       "Diagnóstico médico: tumores malignos (+1) contra benignos (-1)."],
            "regression": ["Prever o preço de uma casa a partir da área e do número de quartos."],
            "unsure": ["Não sei.", "Não percebi a pergunta."]},
        4: {"criterion": ["Minimiza o critério do perceptrão: a soma de -y w·x sobre os pontos mal classificados.",
                          "Minimizar a soma, sobre as amostras mal classificadas, de -y wᵀx com descida do "
                          "gradiente estocástica."],
            "margin": ["Maximiza a margem entre as duas classes."],
            "squares": ["Minimiza o erro quadrático entre a saída e o rótulo."],
            "unsure": ["Não tive tempo."]},
    },
    "es": {
        3: {"spam": ["Filtro de spam: cada correo es un vector con la frecuencia de las palabras; +1 es spam y -1 "
                     "no lo es.",
                     "Clasificar correos como spam (+1) o no spam (-1) según las palabras que contienen."],
            "tumour": ["Decidir si un tumor es benigno o maligno por su tamaño y su forma en la imagen.",
                       "Diagnóstico médico: tumores malignos (+1) frente a benignos (-1)."],
            "regression": ["Predecir el precio de una vivienda a partir de su superficie y del número de habitaciones."],
            "unsure": ["No lo sé.", "No entendí la pregunta."]},
        4: {"criterion": ["Minimiza el criterio del perceptrón: la suma de -y w·x sobre los puntos mal clasificados.",
                          "Minimizar la suma, sobre las muestras mal clasificadas, de -y wᵀx con descenso de "
                          "gradiente estocástico."],
            "margin": ["Maximiza el margen entre las dos clases."],
            "squares": ["Minimiza el error cuadrático entre la salida y la etiqueta."],
            "unsure": ["Me quedé sin tiempo."]},
    },
}
# how often each kind of answer comes: most give a right idea in their own words, some copy the
# (long) model answer, some a wrong idea, some leave the cell blank
KINDS = {3: {"spam": 40, "tumour": 20, "regression": 12, "unsure": 6, "model": 10, "blank": 12, "long": 4},
         4: {"criterion": 45, "margin": 15, "squares": 8, "unsure": 8, "model": 10, "blank": 14, "long": 4}}
LONG = 60  # times a "long" answer says its idea again, numbered: some 5 kB, past what grouping reads of it
SEVERAL = 12  # students with two or three graded attempts
QUEUED = 6  # students whose (only) attempt is still queued
FAILED = 4  # students whose last attempt failed (an earlier one graded)
MARKED = 30  # students whose task 3 is marked


@dataclass(frozen=True)
class Student:
    user: str  # the LMS's id (the launch's ``sub``)
    name: str
    language: str  # of their notebook and answers


@dataclass
class ClassOf300:
    """What ``enrol`` recorded, for the tests to check the pages against."""

    context: str  # the store's course key, the instructor's launches' too
    students: list[Student]
    answers: dict[str, dict[int, str]]  # by user: the answer to tasks 3 and 4 of their latest graded attempt
    attempts: dict[str, list[int]] = field(default_factory=dict)  # by user, in order
    queued: list[str] = field(default_factory=list)  # users whose attempt waits in the queue
    failed: list[str] = field(default_factory=list)  # users whose last attempt failed
    several: list[str] = field(default_factory=list)  # users with more than one graded attempt
    marked: list[str] = field(default_factory=list)  # users whose task 3 is marked
    build_s: float = 0.0  # how long enrol took

    def student(self, user: str) -> Student:
        return next(s for s in self.students if s.user == user)


def students() -> list[Student]:
    """300 students, 75 per language, interleaved so each stretch of the class mixes them."""
    return [Student(f"s300-{number:03d}", _name(language, number // len(LANGUAGES)), language)
            for number in range(300) for language in [LANGUAGES[number % len(LANGUAGES)]]]


def _name(language: str, index: int) -> str:
    given, family = GIVEN[language][index % 15], FAMILY[language][index // 15]
    return f"{family} {given}" if language == "ja" else f"{given} {family}"


def hand_in(language: str, answers: dict[int, str], attempt: int) -> bytes:
    """The model solution in ``language`` with ``answers`` written in the tasks' answer cells
    (a blank answer is an empty cell); ``attempt`` makes each attempt a different file."""
    nb = _solution(language)
    for cell in nb.cells:
        task = cell.metadata.get("autograder", {}).get("answer")
        if task in answers and answers[task] != "model":
            cell.source = answers[task]
    nb.metadata["attempt"] = attempt  # a student's next upload is another file, as it would be
    return json.dumps(nb, ensure_ascii=False, indent=1).encode()  # nbformat.writes, without validating 300 times


def _solution(language: str) -> nbformat.NotebookNode:
    """A copy of the model solution in ``language`` (read once)."""
    return copy.deepcopy(_read_solution(language))


@functools.cache
def _read_solution(language: str) -> nbformat.NotebookNode:
    notebook: nbformat.NotebookNode = nbformat.read(SOLUTIONS / language / f"{WEEK}.ipynb", as_version=4)
    return notebook


def _answers(rng: random.Random, language: str) -> dict[int, str]:
    """One student's answers to tasks 3 and 4: a paraphrase of an idea (sometimes a little
    changed), "model" (the model answer kept), "" (blank), or one idea said again and again."""
    chosen = {}
    for task, weights in KINDS.items():
        kind = rng.choices(list(weights), list(weights.values()))[0]
        if kind in ("model", "blank"):
            chosen[task] = "model" if kind == "model" else ""
            continue
        ideas = ANSWERS[language][task]
        if kind == "long":
            idea = next(iter(ideas.values()))[0]
            chosen[task] = "\n".join(f"({number}) {idea}" for number in range(1, LONG + 1))
            continue
        text = rng.choice(ideas[kind])
        if rng.random() < 0.25:  # the same idea said a little differently
            text = text.rstrip(".。") + (" (see the lecture)." if language == "en" else " (2).")
        chosen[task] = text
    return chosen


def _result(week: Week, submission: Submission, handed_out: nbformat.NotebookNode | None,
            rng: random.Random) -> SubmissionResult:
    """A graded result as the judge builds one (``base_result``, the notebook's language, the
    week's tasks with titles in it, one hidden test a task), its autograded points drawn."""
    result = base_result(week, submission)
    result.language = week.languages.pick(declared_language(submission.content or b""))
    speak = translations(week, result.language)
    title = speak.gettext if speak is not None else str
    result.tasks, result.tests = [], []
    for task in week.tasks:
        score = 0.0 if task.manual else rng.choice([task.points, task.points, task.points / 2, 0.0])
        result.tasks.append(TaskResult(task.number, score, task.points, manual=task.manual, title=title(task.title)))
        if not task.manual:
            result.tests.append(TestResult(f"test_task{task.number}", task.number, score, task.points,
                                           "" if score == task.points else "A check of this task failed."))
    result.status = Status.GRADED
    for number, answer_hash in answer_hashes(submission, week.tasks, handed_out).items():
        result.task(number).answer_sha256 = answer_hash
    return result


def enrol(lms: Lms, course: Course, *, seed: int = 300) -> ClassOf300:
    """Hand in week01 for 300 students in ``lms``'s service (one whose grading is off:
    ``pytest.mark.lms(grading=False)``, or a runner would claim them first) and record their
    results as the runner does; what was recorded."""
    if lms.app.state.grading:
        raise RuntimeError("the class of 300 needs a service that does not grade (its runner would claim the "
                           "hand-ins first): give the test module pytestmark = pytest.mark.lms(grading=False)")
    started = time.perf_counter()
    store = lms.app.state.store
    registration = lms.platform.registration()
    context = f"{lms.platform.base}|{registration.get_deployment_id()}|{COURSE}"
    week = course.week(WEEK)
    title, handed_out = week.label(), week.handed_out()
    rng = random.Random(seed)
    everyone = students()
    enrolled = ClassOf300(context, everyone, {})
    several = {s.user for s in everyone[10:10 + SEVERAL]}
    failed = {s.user for s in everyone[40:40 + FAILED]}
    queued = everyone[-QUEUED:]
    for student in everyone[:-QUEUED]:
        store.remember_user(context, student.user, student.name, None)
        tries = 1 + (1 + rng.randrange(2) if student.user in several else 0) + (student.user in failed)
        for number in range(1, tries + 1):
            answers = _answers(rng, student.language)
            content = hand_in(student.language, answers, number)
            attempt = _submit(store, context, student.user, content)
            claimed = store.claim([WEEK])
            assert claimed is not None and claimed.id == attempt.id, "another attempt was queued: is grading on?"
            enrolled.attempts.setdefault(student.user, []).append(attempt.id)
            if student.user in failed and number == tries:
                store.fail(attempt.id, "the grader stopped (its memory limit): it was not graded")
                continue
            submission = Submission(origin=f"{WEEK} attempt {attempt.number}", key=attempt.key, content=content,
                                    participant=Participant(participant_id=student.user, full_name=student.name))
            assert store.record_result(attempt.id, _result(week, submission, handed_out, rng),
                                       week_title=title) is not None
            enrolled.answers[student.user] = _written(student.language, answers)
    # as the runner does after a result with a hand-graded task once nothing of the week waits
    # (for a rush, once after the last): the groups of similar answers, computed in the background
    regroup(store, context, WEEK, lambda: week_answers(store, context, WEEK))
    for student in queued:
        store.remember_user(context, student.user, student.name, None)
        answers = _answers(rng, student.language)
        enrolled.attempts[student.user] = [_submit(store, context, student.user,
                                                   hand_in(student.language, answers, 1)).id]
    enrolled.queued = [s.user for s in queued]
    enrolled.failed = sorted(failed)
    enrolled.several = sorted(several)
    for student in everyone[:MARKED]:  # marked one by one, as the marking page does
        attempt_id = enrolled.attempts[student.user][-1]
        points = 20.0 if enrolled.answers[student.user][3] else 0.0
        store.mark(attempt_id, context=context, task=3, points=points)
        enrolled.marked.append(student.user)
    enrolled.build_s = time.perf_counter() - started
    return enrolled


def _submit(store: Store, context: str, user: str, content: bytes) -> Attempt:
    return store.submit(context=context, user=user, week=WEEK, content=content, policy=WeekPolicy(), now=clock.now())


def _written(language: str, answers: dict[int, str]) -> dict[int, str]:
    """The answers as the notebook holds them ("model": the model answer's text)."""
    model = {c.metadata["autograder"]["answer"]: c.source for c in _solution(language).cells
             if c.metadata.get("autograder", {}).get("answer")}
    return {task: model[task] if text == "model" else text for task, text in answers.items()}
