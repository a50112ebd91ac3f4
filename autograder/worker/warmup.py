"""The zygote's warm-up: the first-use work of the libraries, done once before any worker.

Importing a library is not all a process pays for the first time it uses it: scikit-learn's
input checks discover narwhals' plugins by reading every installed package's metadata,
IPython builds its input transformers and its traceback formatter, matplotlib loads its
fonts and Agg renderer on the first figure drawn. Each of these happens once per process
and is then cached; every worker is a fresh fork of the zygote, so without a warm-up each
submission pays for all of it again (about half of what running week 1's notebook costs in
a worker). ``warm_up`` runs a few cells of the kind the course's notebooks hold through the
zygote's shell, with warnings, output and the global random state untouched, then puts
the shell back as it was: every worker starts from the same state, warm.

Nothing here is a course's reference solution or a hidden test: what the zygote runs, every
worker can see.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import sys
import warnings
from typing import Any

# cells of the kind a notebook of the course holds: each ends without a value to display
WARM_UP_CELLS = (
    """
import numpy as np
import matplotlib.pyplot as plt
from sklearn.datasets import load_iris, make_blobs
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression, Perceptron
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import MultinomialNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
""",
    """
X, y = make_blobs(n_samples=40, centers=2, random_state=0)
X_iris, y_iris = load_iris(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
X_train = StandardScaler().fit(X_train).transform(X_train)
for model in (Perceptron(random_state=0), LogisticRegression(), KNeighborsClassifier(n_neighbors=3)):
    accuracy = accuracy_score(y_test, model.fit(X_train, y_train).predict(X_test))
counts = CountVectorizer().fit_transform(["spam spam eggs", "ham and eggs"])
bayes = MultinomialNB(alpha=1.0).fit(counts, [1, 0])
""",
    """
class Model:
    def __init__(self, eta=0.1):
        self.eta = eta

    def fit(self, X, y):
        self.w_ = np.zeros(1 + X.shape[1])
        return self

print(Model().fit(X, y).w_, f"{accuracy:.2f}")
""",
    # what ``%matplotlib inline`` (the first line of many a notebook) loads, without switching the
    # backend: the magic's module and parser, the backends' registry, the inline backend's module
    """
%matplotlib --list
%time pass
import io
import matplotlib_inline.backend_inline
fig, ax = plt.subplots()
ax.scatter(X[:, 0], X[:, 1], c=y, marker="o", label="points")
ax.plot([0, 1], [0, 1], "k--")
ax.set_xlabel("x")
ax.set_title("warm-up")
ax.legend()
fig.savefig(io.BytesIO(), format="png")
plt.close("all")
""",
    """
def stub():
    raise NotImplementedError()

stub()
""",
)
SHELL_STATE = ("last_execution_succeeded", "last_execution_result")


def warm_up(shell: Any) -> None:
    """Run ``WARM_UP_CELLS`` in ``shell`` as a worker runs a notebook's cells, then restore
    what a notebook could see of it: the namespace, the shell's last result, ``sys.last_*``,
    the cells' lines in ``linecache``. The global random state is never drawn from (every
    cell seeds its own), warnings are silenced (so none is marked as already shown), and
    what the cells print goes nowhere."""
    from autograder.worker.core import WorkerCore

    namespace = dict(shell.user_ns)
    state = {name: getattr(shell, name) for name in SHELL_STATE}
    cached = set(linecache.cache)
    core = WorkerCore(shell)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for source in WARM_UP_CELLS:
            core.handle({"op": "cell", "src": source})
    shell.user_ns.clear()
    shell.user_ns.update(namespace)
    for name, value in state.items():
        setattr(shell, name, value)
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    for key in set(linecache.cache) - cached:
        if key.startswith("<"):
            del linecache.cache[key]
