"""The trust boundary, tested on the real sandboxed worker (bubblewrap zygote when present).

Each test runs a small notebook in a fresh worker through ``SubmissionRun`` and talks to
it through ``Student``, exactly as a hidden test does.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from autograder.course import Course
from autograder.exceptions import (
    MissingName,
    NotAttempted,
    NotPlainData,
    ProtocolError,
    StudentCodeError,
    StudentTimeout,
    WorkerCrashed,
)
from autograder.execution import Limits, SubmissionRun, ZygoteSlot
from autograder.testing.student import Call, Student

FAST = Limits(cell_timeout_s=3, call_timeout_s=2, submission_timeout_s=20, tests_timeout_s=20)

CLASS_CELL = '''
import numpy as np
class Model:
    def __init__(self, k=2):
        self.k = k
    def fit(self, X):
        self.mean_ = np.asarray(X).mean(axis=0) * self.k
        return self
def combine(a, b):
    return a.k + b.k
'''


@pytest.fixture
def run_notebook(slot: ZygoteSlot):
    runs: list[SubmissionRun] = []

    def start(*cells: str, limits: Limits = FAST) -> tuple[SubmissionRun, Student]:
        for earlier in runs:  # one worker per zygote at a time, as in a batch
            earlier.close()
        slot.limits = limits
        run = SubmissionRun(slot, list(cells), limits)
        run.execute()
        runs.append(run)
        return run, Student(run)

    yield start
    for run in runs:
        run.close()
    slot.limits = Limits()


def test_handles_stay_in_the_worker_and_can_be_passed_back(run_notebook):
    _, student = run_notebook(CLASS_CELL)
    model = student.Model(k=3)
    assert student.typename(model) == "Model"
    fitted = model.fit(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert student.same(fitted, model)
    assert isinstance(fitted.mean_, np.ndarray) and fitted.mean_.tolist() == [6.0, 9.0]
    assert student.combine(model, student.Model(k=4)) == 7


TREE_CELL = """
class Leaf:
    def __init__(self, indices):
        self.indices = indices
class Node:
    def __init__(self, dim, left, right):
        if left is right:
            raise ValueError('one child twice')
        self.dim, self.left, self.right = dim, left, right
"""


class CountingChannel:
    """The run's channel, counting the requests that reach the worker."""

    def __init__(self, run: SubmissionRun) -> None:
        self.run, self.requests = run, 0

    @property
    def generation(self) -> int:
        return self.run.generation

    def request(self, message, *, timeout=None):
        self.requests += 1
        return self.run.request(message, timeout=timeout)


def test_build_makes_a_nested_structure_in_one_request(run_notebook):
    run, _ = run_notebook(TREE_CELL)
    channel = CountingChannel(run)
    student = Student(channel)
    Leaf, Node = student.Leaf, student.Node
    before = channel.requests
    root = student.build(Call(Node, 0, Call(Node, 1, Call(Leaf, np.array([0, 1])), Call(Leaf, np.array([2]))),
                              Call(Leaf, np.array([3, 4]))))
    assert channel.requests == before + 1  # five constructors, one request
    assert student.typename(root) == "Node" and root.dim == 0
    assert student.typename(root.left.right) == "Leaf" and root.left.right.indices.tolist() == [2]
    assert root.right.indices.tolist() == [3, 4]


def test_build_reports_a_steps_exception_as_a_call_would(run_notebook):
    _, student = run_notebook(TREE_CELL)
    with pytest.raises(StudentCodeError) as info:
        student.build(Call(student.Node, 0, Call(student.Leaf, 1), Call(student.Leaf, 2), "a fourth argument"))
    assert info.value.ename == "TypeError"
    with pytest.raises(TypeError):
        Call(lambda: None)  # only remote callables are made in the worker


def test_each_makes_a_loop_of_calls_in_one_request(run_notebook):
    run, _ = run_notebook(TREE_CELL + "def scaled(x, k=1):\n    return x * k\n")
    channel = CountingChannel(run)
    student = Student(channel)
    scaled, Leaf = student.scaled, student.Leaf
    before = channel.requests
    values = student.each([Call(scaled, np.arange(3), k=k) for k in range(4)] + [Call(Leaf, 7)])
    assert channel.requests == before + 1
    assert [v.tolist() for v in values[:4]] == [[0, 0, 0], [0, 1, 2], [0, 2, 4], [0, 3, 6]]
    assert student.typename(values[4]) == "Leaf" and values[4].indices == 7  # not data: a remote object
    assert student.each([]) == []
    with pytest.raises(StudentCodeError) as info:  # the first exception ends the batch, as a call's would
        student.each([Call(scaled, 1), Call(scaled, None, k=2), Call(scaled, 3)])
    assert info.value.ename == "TypeError"


@pytest.mark.parametrize("forged", [{"t": [1]}, {"t": [1, 2, 3]}, [1, 2], {"h": [1, "list", False]}])
def test_each_refuses_a_reply_that_is_not_one_value_per_call(run_notebook, forged):
    """A worker the student patched answers ``each`` with any value: anything but a tuple of
    one value per call is a protocol error, worded by the grader."""
    run, _ = run_notebook(TREE_CELL)

    class Forging(CountingChannel):
        def request(self, message, *, timeout=None):
            reply = super().request(message, timeout=timeout)
            return {"ok": True, "value": forged} if message["op"] == "calls" else reply

    student = Student(Forging(run))
    leaf = student.Leaf
    with pytest.raises(ProtocolError):
        student.each([Call(leaf, 1), Call(leaf, 2)])


TREE_FIELDS = {"Node": ["dim"], "Leaf": ["indices"]}
TREE_LINKS = {"Node": ["left", "right"]}


def test_walk_reads_a_whole_tree_in_one_request(run_notebook):
    run, _ = run_notebook(TREE_CELL + "root = Node(0, Node(1, Leaf([0, 1]), Leaf(2)), 'not a node')\n")
    channel = CountingChannel(run)
    student = Student(channel)
    root = student.root
    before = channel.requests
    walked = student.walk(root, TREE_FIELDS, TREE_LINKS, max_nodes=10, max_depth=5)
    assert channel.requests == before + 1
    assert [next(walked) for _ in range(5)] == [("Node", [0]), ("Node", [1]), ("Leaf", [[0, 1]]), ("Leaf", [2]), ("str", [])]


def test_walk_stops_one_past_the_bounds_asked_for(run_notebook):
    """A chain of 1000 nodes: the worker sends at most ``max_nodes + 1`` of them, none
    deeper than ``max_depth + 1``; reading past what was sent is a protocol error."""
    run, student = run_notebook(TREE_CELL + "root = Leaf(0)\nfor i in range(1000):\n    root = Node(i, root, Leaf(i))\n")
    root = student.root
    many = student.walk(root, TREE_FIELDS, TREE_LINKS, max_nodes=7, max_depth=5000)
    assert [next(many)[0] for _ in range(8)] == ["Node"] * 8
    with pytest.raises(ProtocolError):
        next(many)
    deep = student.walk(root, TREE_FIELDS, TREE_LINKS, max_nodes=100, max_depth=3)
    # depths 0-3 walked into, the two children at depth 4 listed only; then the right leaves
    assert [next(deep)[0] for _ in range(9)] == ["Node"] * 5 + ["Leaf"] * 4
    with pytest.raises(ProtocolError):
        next(deep)


def test_walk_cuts_the_value_that_goes_past_the_items_asked_for_and_ends_there(run_notebook):
    """Leaves of 3, 4 and 2 million items against ``max_items=5``: the first leaf comes
    whole, the second cut to 3 items (one more than the 2 left), and nothing after it is
    sent, so a test counting indices fails on that leaf instead of on a reply too large."""
    run, student = run_notebook(TREE_CELL + "import numpy as np\n"
                                "root = Node(0, Leaf([0, 1, 2]), Node(1, Leaf(np.arange(4)), Leaf(np.zeros(2_000_000))))\n")
    walked = student.walk(student.root, TREE_FIELDS, TREE_LINKS, max_nodes=10, max_depth=5, max_items=5)
    assert next(walked) == ("Node", [0]) and next(walked) == ("Leaf", [[0, 1, 2]]) and next(walked) == ("Node", [1])
    kind, (cut,) = next(walked)
    assert kind == "Leaf" and cut.tolist() == [0, 1, 2]
    with pytest.raises(ProtocolError):
        next(walked)
    whole = student.walk(student.root, TREE_FIELDS, {}, max_nodes=10, max_depth=5, max_items=3)
    assert next(whole) == ("Node", [0])  # no links: the root alone, its scalar field not counted


@pytest.mark.parametrize("forged", [{"t": []}, [["Node", [1]]], [{"t": ["Node", []]}], [{"t": ["Leaf", [1, 2]]}],
                                    [{"t": ["Leaf", [1]]}] * 4])
def test_walk_refuses_a_listing_of_another_shape(run_notebook, forged):
    """A patched worker answers ``walk`` with anything: a listing that is not a list of at
    most ``max_nodes + 1`` (name, values) pairs with each type's number of fields is refused."""
    run, _ = run_notebook(TREE_CELL + "root = Leaf(0)\n")

    class Forging(CountingChannel):
        def request(self, message, *, timeout=None):
            reply = super().request(message, timeout=timeout)
            return {"ok": True, "value": forged} if message["op"] == "walk" else reply

    student = Student(Forging(run))
    with pytest.raises(ProtocolError):
        student.walk(student.root, TREE_FIELDS, TREE_LINKS, max_nodes=2, max_depth=5)


def test_a_forward_step_reference_is_refused_by_the_worker(run_notebook):
    """A step may only use steps made before it: a request naming a later one is an error, not a crash."""
    run, student = run_notebook(TREE_CELL)
    leaf = student.Leaf
    reply = run.request({"op": "calls", "steps": [
        {"obj": leaf._ref.id, "args": {"t": [{"h": [-2, "step", False]}]}},
        {"obj": leaf._ref.id, "args": {"t": [1]}}]})
    assert reply["ok"] is False and reply["ename"] == "LookupError"
    assert student.Leaf(5).indices == 5  # the worker serves on


def test_non_plain_values_are_remote_and_refuse_to_be_data(run_notebook):
    _, student = run_notebook("import numpy as np\nobj = np.array([1, 'a'], dtype=object)\nclass Liar:\n"
                              "    def __eq__(self, other): return True\n    def __array__(self, *a, **k): return np.ones(3)\n"
                              "liar = Liar()")
    for name in ("obj", "liar"):
        value = getattr(student, name)
        with pytest.raises(NotPlainData):
            _ = value == np.ones(3)
        with pytest.raises(NotPlainData):
            np.asarray(value)


def test_missing_names_student_exceptions_and_stubs(run_notebook):
    _, student = run_notebook("def f(x):\n    raise ValueError('bad x')\ndef g():\n    raise NotImplementedError()")
    assert "f" in student and "nope" not in student
    with pytest.raises(MissingName):
        student.nope  # noqa: B018 - the lookup itself must raise
    with pytest.raises(StudentCodeError) as info:
        student.f(1)
    assert info.value.ename == "ValueError" and "bad x" in info.value.evalue
    with pytest.raises(NotAttempted):
        student.g()


def test_a_hanging_call_times_out_and_the_next_call_gets_a_fresh_worker(run_notebook):
    run, student = run_notebook("def spin():\n    while True:\n        pass\nvalue = 42")
    with pytest.raises(StudentTimeout):
        student.spin()
    assert student.value == 42  # re-ran the notebook in a new worker
    assert run.generation == 2


def test_a_call_that_hangs_is_a_timeout_in_every_test_it_hits(run_notebook):
    """Once the fresh workers are used up, the calls still fail as timeouts, not as crashes."""
    limits = replace(FAST, call_timeout_s=1, restarts=2)
    _, student = run_notebook("def spin():\n    while True:\n        pass", limits=limits)
    for _ in range(limits.restarts + 2):
        with pytest.raises(StudentTimeout) as caught:
            student.spin()
        assert caught.value.feedback() == "your code used more than 1 s of CPU time"


def test_a_cell_that_hangs_or_exits_is_skipped_and_the_rest_still_counts(run_notebook):
    run, student = run_notebook("a = 1", "while True:\n    pass", "b = 2", "import os\nos._exit(3)", "c = 3")
    assert (student.a, student.b, student.c) == (1, 2, 3)
    assert run.bad_cells == {2, 4}
    assert any("was stopped after 3 s of CPU time" in m for m in run.messages)
    assert any("ended the process" in m for m in run.messages)


def test_a_call_that_kills_the_worker_fails_only_that_call(run_notebook):
    _, student = run_notebook("import os\ndef die():\n    os._exit(1)\nx = 5")
    with pytest.raises(WorkerCrashed):
        student.die()
    assert student.x == 5


def test_a_notebook_past_its_deadline_times_out(run_notebook):
    limits = replace(FAST, cell_timeout_s=2, submission_timeout_s=3)
    spin = "import time\nstarted = time.process_time()\nwhile time.process_time() - started < 1.5:\n    pass"
    run, _ = run_notebook(spin, spin, spin, limits=limits)
    assert run.timed_out
    assert run.messages == ["the notebook used more than 3 s of CPU time"]


def test_ipython_semantics_matplotlib_and_input(run_notebook):
    run, student = run_notebook(
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nbackend = plt.get_backend()",
        "answer = input('name?')",
        "!echo hi\nafter = 1",
    )
    assert student.backend == "inline"  # %matplotlib inline took effect, with no GUI loop to start
    assert "answer" not in student and any("EOFError" in m for m in run.messages)
    assert student.after == 1


FIGURE_CELLS = (
    "%matplotlib inline\nimport io\nimport matplotlib.pyplot as plt\nfrom IPython import get_ipython",
    # a figure formatted as the display hook and show() format it, and a twin rendered to a PNG by hand
    "def figure():\n    fig, ax = plt.subplots(layout='constrained')\n    ax.plot([1, 2], [3, 5])\n"
    "    ax.set_xlabel('x label')\n    ax.set_title('a title')\n    return fig\n"
    "fig, twin = figure(), figure()\nunlaid = fig.axes[0].get_position().bounds\n"
    "formats = sorted(get_ipython().display_formatter.format(fig)[0])\n"
    "laid = fig.axes[0].get_position().bounds\n"
    "twin.savefig(io.BytesIO(), format='png')\nrendered = twin.axes[0].get_position().bounds\nplt.show()",
    "still_open = plt.get_fignums()\nkept_title = fig.axes[0].get_title()",
)


def test_a_figure_is_drawn_as_in_jupyter_but_never_rendered(run_notebook):
    """Under ``%matplotlib inline`` a displayed figure is formatted as text only (no PNG
    nobody reads, ~75 ms a figure), yet drawn: its layout is the one a rendered twin gets."""
    run, student = run_notebook(*FIGURE_CELLS)
    assert not run.messages
    assert student.formats == ["text/plain"]
    assert student.laid != student.unlaid  # drawn: the layout engine ran
    assert student.laid == student.rendered  # as far as a test can read, the figure Jupyter shows
    assert student.still_open == [] and student.kept_title == "a title"  # show() closed it, the object lives on


def test_rich_reprs_are_not_computed(run_notebook):
    """A cell's value is shown as a terminal shows it: ``__repr__``, not ``_repr_html_``."""
    _, student = run_notebook(
        "calls = []\nclass Table:\n    def __repr__(self):\n        calls.append('repr')\n        return 'Table'\n"
        "    def _repr_html_(self):\n        calls.append('html')\n        return '<table></table>'\nTable()",
        "from IPython.display import display\ndisplay(Table())",
    )
    assert student.calls == ["repr", "repr"]


def test_memory_limit_is_a_crash_not_a_hang(run_notebook):
    limits = replace(FAST, memory_mb=1024)
    run, student = run_notebook("import numpy as np\nblocks = []\nfor _ in range(64):\n"
                                "    blocks.append(np.ones(64 * 2**20 // 8))\nsurvived = True", "after = 1",
                                limits=limits)
    assert "survived" not in student and student.after == 1


def test_the_worker_sees_neither_the_course_nor_the_network(run_notebook, course: Course):
    secret = course.week("week01").tests_dir
    run, student = run_notebook(
        "import os, socket\n"
        f"try:\n    seen = os.listdir({str(secret)!r})\nexcept OSError:\n    seen = None\n"
        f"try:\n    open({str(course.root / 'source' / 'week01' / 'week01.ipynb')!r}).read(10)\n    read = True\n"
        "except OSError:\n    read = False\n"
        "try:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\n    net = True\n"
        "except OSError:\n    net = False\n"
        "env = sorted(os.environ)\n"
    )
    assert student.seen is None and student.read is False and student.net is False
    assert "AUTOGRADER_COURSE" not in student.env and all(not k.startswith("PYTEST") for k in student.env)


def test_patching_numpy_in_the_worker_does_not_reach_the_grader(run_notebook):
    _, student = run_notebook("import numpy as np\nnp.allclose = lambda *a, **k: True\n"
                              "np.array_equal = lambda *a, **k: True\nwrong = np.zeros(3)")
    assert not np.allclose(student.wrong, np.ones(3))


def test_the_next_submission_starts_clean(run_notebook):
    run_notebook("import numpy as np, sklearn\nnp.pi = 3\nsklearn.__version__ = 'hacked'\n"
                 "open('leftover.txt', 'w').write('x')")
    _, student = run_notebook("import numpy as np, os, sklearn\npi = float(np.pi)\nversion = sklearn.__version__\n"
                              "leftover = os.path.exists('leftover.txt')")
    assert student.pi == pytest.approx(np.pi) and student.version != "hacked" and student.leftover is False
