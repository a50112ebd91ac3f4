"""Hostile cases against the grader's own bounds and against traces between submissions.

Graded by ``tests/test_hostile_bounds.py`` with ``--jobs 1`` and ``--jobs 2``, each case
between honest neighbours that must keep 60/60. Cases on ``bounds_week`` (week 9) are the
honest week-9 code plus an attack cell; each says what it must get:

- ``stopped``: the grader's work for one check ran past its CPU or wall budget; the
  parent stops that grader process: status ``error``, a message naming the check;
- ``lost``: graded, and exactly these tasks score 0 (a bound turned the attack into a
  failed check: the reply cap, the grader's memory limit, an error in the grader);
- ``lost=()``: graded 60/60: a bound must not punish what stays inside it.

Readers (``trace_*_reader``) come right after their planters in the batch and sabotage
their own task 3 (``count = -1``) if they see anything a planter could have moved.
``runs_clean``: the attack cell must run without an error (a planter whose allocation
failed would leave nothing to find, and its reader would pass for nothing).
``REAL_WEEK_CASES`` replay the issue's two attacks on the real weeks 1 and 4: whatever
their hidden tests do with them now, the neighbour's score and the batch must hold.
"""

from __future__ import annotations

LAZY_INT8_TREE = '''
import numpy as np

class Leaf:
    @property
    def indices(self):
        return np.zeros(1_900_000, dtype=np.int8)  # under every per-message cap

class Node:
    def __init__(self, depth=0):
        self.depth = depth
    @property
    def left(self):
        return Node(self.depth + 1) if self.depth < 12 else Leaf()
    right = left

def build_tree(n):
    return Node()
'''

SABOTAGE_IF_SEEN = '''
if seen:
    count = -1
'''

CASES = [
    # -- the grader's CPU and wall budgets: that submission is stopped, the batch goes on --------
    dict(name="refit_max_iter_for_hours", expect="stopped",
         attack="fitted ppn, then max_iter=2**32-1 and tol=None: the grader's refit runs for hours",
         cell="ppn.set_params(max_iter=2**32 - 1, tol=None)"),
    dict(name="refit_verbose_flood", expect="stopped",
         attack="the same with verbose=1: a line per epoch printed in the grader",
         cell="ppn.set_params(max_iter=2**32 - 1, tol=None, verbose=1)"),
    dict(name="refit_early_stopping_never", expect="stopped",
         attack="early stopping that never stops: patience 2**31-1, no tolerance",
         cell="ppn.set_params(max_iter=2**31 - 1, tol=None, early_stopping=True, n_iter_no_change=2**31 - 1, "
              "validation_fraction=0.5)"),
    dict(name="refit_impostor_estimator", expect="stopped",
         attack="not a Perceptron at all: an object whose get_params asks for 2**31-1 epochs",
         cell="class Impostor:\n    def get_params(self, deep=True):\n"
              "        return {'max_iter': 2**31 - 1, 'tol': None, 'shuffle': False}\nppn = Impostor()"),
    dict(name="count_for_ages", expect="stopped",
         attack="count = 10**15: sum(range(count)) holds the grader's interpreter in C",
         cell="count = 10**15"),
    dict(name="count_bigint", expect="stopped", attack="count = 2**200: big-integer sums forever",
         cell="count = 2**200"),
    dict(name="pause_forever", expect="stopped",
         attack="pause = 10**6: the grader blocks without spending CPU (only the wall budget sees it)",
         cell="pause = 10**6"),
    dict(name="output_flood_forever", expect="stopped",
         attack="10**12 lines of 10 kB printed by the grader", cell="line = 'x' * 10_000\nlines = 10**12"),
    # -- the reply cap and the grader's memory: that check fails, the others stand ---------------
    dict(name="tree_lazy_int8_leaves", expect="lost", lost=(2,),
         attack="a lazily generated tree of 4096 leaves of 1.9 M int8 each, widened to int64 in the grader",
         cell=LAZY_INT8_TREE),
    dict(name="tree_endless_chain", expect="lost", lost=(2,),
         attack="every node's children are new nodes: no leaf ever",
         cell="class Node:\n    @property\n    def left(self):\n        return Node()\n    right = left\n"
              "def build_tree(n):\n    return Node()"),
    dict(name="tree_cycle", expect="lost", lost=(2,), attack="a node that is its own child",
         cell="class Node:\n    pass\nroot = Node()\nroot.left = root.right = root\n"
              "def build_tree(n):\n    return root"),
    dict(name="tree_megabyte_string_leaves", expect="lost", lost=(2,),
         attack="leaves whose indices are strings of a million digits",
         cell="class Leaf:\n    indices = '9' * 1_000_000\nclass Node:\n    left = right = Leaf()\n"
              "def build_tree(n):\n    return Node()"),
    dict(name="refit_params_of_600k_entries", expect="lost", lost=(1,),
         attack="get_params answers a dict of 600,000 entries (12 MB, under the frame and item caps)",
         cell="class Many:\n    def get_params(self, deep=True):\n"
              "        return {f'k{i}': i for i in range(600_000)}\nppn = Many()"),
    dict(name="refit_invalid_settings", expect="lost", lost=(1,),
         attack="a negative tolerance: scikit-learn refuses it in the grader", cell="ppn.set_params(tol=-1.0)"),
    dict(name="table_past_the_graders_memory", expect="lost", lost=(4,),
         attack="size = 3 GiB: the grader's own allocation, under its memory limit", cell="size = 3 << 30"),
    dict(name="table_absurd", expect="lost", lost=(4,), attack="size = 2**62", cell="size = 2**62"),
    dict(name="pause_nan", expect="lost", lost=(5,), attack="pause = nan", cell="pause = float('nan')"),
    dict(name="pause_negative", expect="lost", lost=(5,), attack="pause = -1", cell="pause = -1"),
    # -- inside the bounds: nothing lost ----------------------------------------------------------
    dict(name="output_many_lines_quickly", expect="lost", lost=(),
         attack="20 MB printed by the grader in a second", cell="line = 'y' * 100\nlines = 200_000"),
    dict(name="output_control_characters", expect="lost", lost=(),
         attack="lone surrogates, NUL and terminal escapes printed by the grader",
         cell="line = '\\udcff' * 50 + '\\x00\\x1b[2J\\x1b]0;title\\x07'\nlines = 1000"),
    dict(name="refit_verbose_briefly", expect="lost", lost=(),
         attack="verbose=1 with the asked-for settings: a few lines, to nowhere", cell="ppn.set_params(verbose=1)"),
    dict(name="pause_just_inside", expect="lost", lost=(), attack="a check that takes 1.5 s of the grader's time",
         cell="pause = 1.5"),
    # -- traces between submissions: planters, then readers that sabotage themselves -----------
    dict(name="trace_pid_planter", expect="lost", lost=(),
         attack="move the pid counter with 300 threads and 100 children, leave zombies and a daemon",
         cell='''
import os, threading, time
for _ in range(300):
    t = threading.Thread(target=int); t.start(); t.join()
for _ in range(100):
    if os.fork() == 0:
        os._exit(0)
if os.fork() == 0:
    os.setsid()
    time.sleep(300)
'''),
    dict(name="trace_pid_reader", expect="lost", lost=(), runs_clean=True,
         attack="read the pid, a thread's id, a child's pid and the namespace's last pid",
         cell='''
import os, threading
ids = []
t = threading.Thread(target=lambda: ids.append(threading.get_native_id())); t.start(); t.join()
child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
last = open("/proc/loadavg").read().split()[4]
seen = (os.getpid(), os.getppid(), ids[0], child, last) != (1, 0, 2, 3, "3")
''' + SABOTAGE_IF_SEEN),
    dict(name="trace_cgroup_planter", expect="lost", lost=(), runs_clean=True,
         attack="raise the zygote cgroup's memory high-water mark with 200 MB touched, then free it",
         cell="import numpy as np\nhoard = np.ones(200 << 17)\nhoard[::512] += 1\ndel hoard"),
    dict(name="trace_cgroup_reader", expect="lost", lost=(), runs_clean=True,
         attack="read any cgroup: counters, other graders' cgroups, its own cgroup's path",
         cell='''
import os
files = [os.path.join(top, f) for top, _, names in os.walk("/sys/fs/cgroup") for f in names]
own = open("/proc/self/cgroup").read().splitlines()
seen = bool(files) or any(not line.endswith(":/") for line in own)
''' + SABOTAGE_IF_SEEN),
    dict(name="trace_zygote_reader", expect="lost", lost=(), runs_clean=True,
         attack="look for the zygote and its counters in /proc (status, faults, children)",
         cell='''
import os
pids = [p for p in os.listdir("/proc") if p.isdigit()]
status = open("/proc/1/status").read()
seen = pids != ["1"] or os.readlink("/proc/self") != "1" or "PPid:\t0" not in status
''' + SABOTAGE_IF_SEEN),
    dict(name="trace_exit_code_planter", expect="lost", lost=(),
         attack="end its worker with exit code 42 (a number the zygote once reported, and kept in its memory)",
         cell="import os\nos._exit(42)"),
]

REAL_WEEK_CASES = [
    dict(name="week01_refit_for_hours", week="week01", fixture="correct_fresh_notebook.ipynb",
         attack="the issue's week-1 notebook: fitted ppn, then max_iter=2**32-1, tol=None, verbose=1",
         cell="ppn.set_params(max_iter=2**32 - 1, tol=None, verbose=1)"),
    dict(name="week04_lazy_int8_tree", week="week04", fixture="correct_iterative.ipynb",
         attack="the issue's week-4 notebook: a lazily generated tree whose every leaf is 1.9 M int8",
         cell='''
import numpy as np

class KDLeaf:
    @property
    def indices(self):
        return np.zeros(1_900_000, dtype=np.int8)

class KDNode:
    def __init__(self, depth=0):
        self.depth, self.dim, self.split = depth, depth % 2, 0.0
    @property
    def left(self):
        return KDNode(self.depth + 1) if self.depth < 12 else KDLeaf()
    right = left

def build_kdtree(X, leaf_size=1):
    return KDNode()
'''),
]
