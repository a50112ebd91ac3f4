"""``autograder audit``: the mutation operators, audit.toml, and whole audits of tiny
throwaway courses graded through the real sandboxed grading path (strength: mutants lose
points on their task; blame: only on their task, unless audit.toml says it builds on another)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

from autograder import results
from autograder.audit.audit_toml import AuditToml, BuildsOn, read_audit_toml
from autograder.audit.mutants import Mutant, generate_mutants, grading_order
from autograder.audit.operators import KINDS, mutations
from autograder.audit.run import judge
from autograder.cli import app
from autograder.course import Course
from autograder.exceptions import CourseError
from autograder.results import Status, SubmissionResult, TaskResult
from tests.helpers import throwaway_course

SNIPPET = textwrap.dedent('''\
    def f(a, b, xs, k):
        """docstring stays"""
        ### BEGIN SOLUTION
        total = a + b * 2.0
        if total >= k and not a:
            total += 1
        a = a - b
        ys = xs[1:k][::-1]
        zs = np.array(xs).copy()
        return min(total, k, key=abs), ys, zs
        ### END SOLUTION
    ''')


def mutated_lines(source: str) -> dict[str, set[str]]:
    """operator -> the changed lines of every mutation of the region (lines 4..10)."""
    found: dict[str, set[str]] = {}
    old = source.split("\n")
    for mutation in mutations(source, 4, 10):
        new = mutation.apply(source).split("\n")
        changed = {n.strip() for o, n in zip(old, new) if o != n} if len(new) == len(old) else {"<lines changed>"}
        found.setdefault(mutation.operator, set()).update(changed)
    return found


def test_the_operators_produce_every_kind_and_touch_only_the_region() -> None:
    found = mutated_lines(SNIPPET)
    assert set(found) == set(KINDS)
    assert {"total = a - b * 2.0", "total = a + b / 2.0", "if total >= k and a:", "total -= 1"} <= found["arithmetic"]
    assert {"if total > k and not a:", "if total >= k or not a:"} <= found["comparison"]
    assert {"total = a + b * 4.0", "total = a + b * 1.0", "total += 2", "total += 0"} <= found["constant"]
    assert {"pass"} <= found["drop"]
    assert {"return min(k, total, key=abs), ys, zs", "return min(total, k), ys, zs"} <= found["swap"]
    assert {"ys = xs[2:k][::-1]", "ys = xs[1:k + 1][::-1]", "ys = xs[1:k][::1]"} <= found["slice"]
    assert {"total = total + 1", "a -= b", "zs = np.array(xs)", "zs = np.asarray(xs).copy()"} <= found["copy"]
    every = {line for lines in found.values() for line in lines}
    assert not any("docstring" in line or line.startswith("def ") for line in every)


def test_every_mutant_differs_and_the_return_is_never_dropped() -> None:
    sources = [m.apply(SNIPPET) for m in mutations(SNIPPET, 4, 10)]
    assert SNIPPET not in sources
    assert all("return" in s for s in sources)
    for source in sources:
        compile(source, "mutant", "exec")


# --- a throwaway course: one function, one weak test -------------------------------------------

NOTEBOOK_CELLS = [
    ("markdown", "# Week 8: Audit drill (10 points)"),
    ("markdown", "## Task 1 (10 points): add one\n\nWrite `add_one(x)`: x plus one."),
    # code outside the markers (SCALE, the def line) is the handout: never mutated
    ("code", "SCALE = 2\n\n\ndef add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"),
]
# kills x - 1 and x + 0, but not x + 2: the survivor the audit must report
WEAK_TEST = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(10)
def test_add_one_is_positive_on_zero(student):
    """add_one(0) is positive"""
    assert student.add_one(0) > 0, "add_one(0) should be positive"


@pytest.mark.task(1)
@pytest.mark.points(0)
def test_add_one_returns_a_number(student):
    """add_one returns a number"""
    assert isinstance(student.add_one(1), (int, float)), "add_one should return a number"
'''
ENTRY = '''[[equivalent]]
task = 1
operator = "constant"
line = "return x + 1"
mutant = "return x + 2"
reason = "a drill: the test only asks for a positive number"
'''
STALE = '''
[[equivalent]]
task = 1
operator = "drop"
line = "x = x * 3"
mutant = "pass"
reason = "a line the notebook no longer has"

[[equivalent]]
task = 1
operator = "arithmetic"
line = "return x + 1"
mutant = "return x - 1"
reason = "wrongly judged equivalent: the test kills it"
'''


@pytest.fixture
def drill(tmp_path: Path) -> Course:
    return throwaway_course(tmp_path, "week08", NOTEBOOK_CELLS, "test_week08.py", WEAK_TEST)


def test_only_the_solution_region_is_mutated_and_the_order_is_seeded(drill: Course) -> None:
    generated = generate_mutants(drill.week("week08"))
    assert sorted(m.mutated for m in generated.mutants) == ["return x + 0", "return x + 2", "return x - 1"]
    assert all(m.task == 1 for m in generated.mutants)
    order = grading_order(generated.mutants, 11)
    assert order == grading_order(generated.mutants, 11)


def audit(course: Course, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", "week08", "--course", str(course.root), "--jobs", "1",
                                      "--html", str(course.root / "audit.html"), *args])
    return result.exit_code, result.output


@pytest.mark.sandbox
def test_a_weak_test_lets_a_mutant_survive_until_it_is_recorded_as_equivalent(drill: Course) -> None:
    code, output = audit(drill)
    assert code == 1, output
    assert "unexplained" in output and "return x + 2" in output and "3 mutants, 3 graded, 2 killed" in output
    assert 'mutant = "return x + 2"' in output  # the entry to paste, shown with the survivor
    page = (drill.root / "audit.html").read_text()
    assert "unexplained" in page and "return x + 2" in page and "mutant = &#34;return x + 2&#34;" in page
    survivor = nbformat.read(drill.root / "audit" / "mutant002.ipynb", as_version=4)  # to replay with pytest --seed
    assert "return x + 2" in survivor.cells[2].source

    (drill.root / "source" / "week08" / "audit.toml").write_text(ENTRY + STALE)
    code, output = audit(drill, "--budget", "60")
    assert code == 0, output
    assert "1 equivalent" in output and "passed" in output
    assert "stale audit.toml entry 2" in output and "x = x * 3" not in output.split("stale")[0]
    assert "unneeded audit.toml entry 3 (task 1, arithmetic: return x - 1): the tests now" in output


@pytest.mark.sandbox
def test_an_audit_stops_handing_out_mutants_at_its_budget(drill: Course) -> None:
    code, output = audit(drill, "--budget", "1")
    assert code == 0, output  # nothing graded, nothing survived: passed, but every mutant is counted as skipped
    assert "0 graded" in output and "3 skipped (budget)" in output


@pytest.mark.sandbox
def test_a_reference_that_fails_its_own_tests_stops_the_audit(drill: Course) -> None:
    tests = drill.root / "source" / "week08" / "tests"
    (tests / "test_week08.py").unlink()  # a new module name: this process already imported test_week08
    (tests / "test_week08_strict.py").write_text(WEAK_TEST.replace("add_one(0) > 0", "add_one(0) > 5"))
    code, output = audit(drill)
    assert code == 2 and "the reference solution loses points" in output, output


BUILDS_ON = '[[builds_on]]\ntask = 2\nuses = 1\nreason = "task 2 doubles what task 1 adds (the instructions say so)"\n'


@pytest.mark.parametrize(("text", "says"), [
    ("[[equivalent]]\ntask = 1\n", "[[equivalent]] entry 1: operator: missing: write the operator's name, copied "
                                   "from the audit's report; [[equivalent]] entry 1: line: missing"),
    (ENTRY.replace('reason = "a drill: the test only asks for a positive number"', 'reason = " "'),
     '[[equivalent]] entry 1: reason = " " is empty: say in one line why no test can tell this mutant apart'),
    (ENTRY.replace('"constant"', '"typo"'), 'operator = "typo" is not one of arithmetic, comparison, constant'),
    ("[equivalent]\ntask = 1\n", "write each entry as [[equivalent]]"),
    ("task = [", "not valid TOML"),
    ("[builds_on]\ntask = 2\n", "write each entry as [[builds_on]] (an array of tables), not [builds_on]"),
    ("[[builds_on]]\ntask = 2\nreason = 'x'\n", "[[builds_on]] entry 1: uses: missing: write the number of the task "
                                                  "whose code those tests use"),
    (BUILDS_ON.replace("uses = 1", "uses = 1\nline = 'x'"), "[[builds_on]] entry 1: line: unknown key; the keys here are reason, task, uses"),
    (BUILDS_ON.replace("uses = 1", 'uses = "1"'), '[[builds_on]] entry 1: uses = "1" is not allowed here: write the number of the task'),
    (BUILDS_ON.replace("uses = 1", "uses = 3"), "[[builds_on]] entry 1: uses = 3 is not an autograded task of the "
                                                "week (its autograded tasks: 1, 2): write one of those"),
    (BUILDS_ON.replace("uses = 1", "uses = 2"), "task and uses are both 2: a task's tests always use its own code"),
    (BUILDS_ON.replace('"task 2 doubles what task 1 adds (the instructions say so)"', '""'),
     '[[builds_on]] entry 1: reason = "" is empty: say in one line why task 2\'s instructions build on task 1'),
    (BUILDS_ON + "\n" + BUILDS_ON, "[[builds_on]] entry 2: repeats entry 1 (task 2 uses task 1): delete one"),
    ("[[build_on]]\ntask = 2\n", "build_on: unknown key; the keys here are builds_on, equivalent: remove it or fix its name"),
])
def test_a_malformed_audit_toml_says_where_and_what_to_write(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(text)
    with pytest.raises(CourseError) as caught:
        read_audit_toml(path, [1, 2])
    assert str(caught.value).startswith(str(path)) and says in str(caught.value), str(caught.value)


def test_a_builds_on_entry_is_read(tmp_path: Path) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(BUILDS_ON + ENTRY)
    read = read_audit_toml(path, [1, 2])
    assert read.declared(2, 1) is not None and read.declared(1, 2) is None
    assert read.declared(2, 1).reason == "task 2 doubles what task 1 adds (the instructions say so)"  # type: ignore[union-attr]
    assert [e.mutant for e in read.equivalents] == ["return x + 2"]


# --- a throwaway course of two tasks, where a task-2 test also runs task 1's code --------------

LONG = "return 2 * x  # twice x: this comment makes the line longer than a terminal's eighty columns"
CHAIN_CELLS = [
    ("markdown", "# Week 9: Blame drill (20 points)"),
    ("markdown", "## Task 1 (10 points): add one\n\nWrite `add_one(x)`: x plus one."),
    ("code", "def add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"),
    ("markdown", "## Task 2 (10 points): double\n\nWrite `double(x)`: twice x."),
    ("code", f"def double(x):\n    ### BEGIN SOLUTION\n    {LONG}\n    ### END SOLUTION"),
]
# add_one(2) >= 3 through double: x - 1 and x + 0 lose task 2's points, x + 2 does not;
# double(3) > 3 lets 3 * x survive (a long line: its entry must paste as printed)
CHAIN_TESTS = '''import pytest


@pytest.mark.task(1)
@pytest.mark.points(10)
def test_add_one(student):
    """add_one(0) is 1"""
    assert student.add_one(0) == 1, "add_one(0) should be 1"


@pytest.mark.task(2)
@pytest.mark.points(5)
def test_double_grows(student):
    """double(3) is more than 3"""
    assert student.double(3) > 3, "double(3) should be more than 3"


@pytest.mark.task(2)
@pytest.mark.points(5)
def test_double_of_add_one(student):
    """double(add_one(2)) is at least 6"""
    assert student.double(student.add_one(2)) >= 6, "double(add_one(2)) should be at least 6"
'''
CHAIN_TOML = f'''{BUILDS_ON}
[[builds_on]]
task = 1
uses = 2
reason = "declared, but no mutant of task 2 costs task 1 a point"

[[equivalent]]
task = 2
operator = "constant"
line = "{LONG}"
mutant = "{LONG.replace("2 * x", "3 * x")}"
reason = "a drill: the test only asks for more than x"
'''


@pytest.fixture
def chain(tmp_path: Path) -> Course:
    return throwaway_course(tmp_path, "week09", CHAIN_CELLS, "test_week09_chain.py", CHAIN_TESTS)


@pytest.mark.sandbox
def test_a_mutant_losing_points_on_another_tasks_tests_fails_until_declared(chain: Course) -> None:
    result = CliRunner().invoke(app, ["audit", "week09", "--course", str(chain.root), "--jobs", "1",
                                      "--html", str(chain.root / "audit.html")])
    output = result.output
    assert result.exit_code == 1, output
    assert "6 mutants, 6 graded" in output and "2 cross-task loss(es) (0 declared)" in output, output
    assert "failed: 1 unexplained survivor(s), 2 cross-task loss(es)" in output
    assert "cross-task losses" in output and "mutant003" in output.split("cross-task losses")[1]
    lines = output.splitlines()
    # the entries to paste, each line whole (a table cell would wrap them at 80 columns)
    assert f'line = "{LONG}"' in lines and f'mutant = "{LONG.replace("2 * x", "3 * x")}"' in lines, output
    assert ["[[builds_on]]", "task = 2", "uses = 1", 'reason = ""'] == lines[lines.index("[[builds_on]]"):][:4]
    page = (chain.root / "audit.html").read_text()
    rows = [row for row in page.split("<tr>") if "test_double_of_add_one" in row]
    assert len(rows) == 2 and all("<strong>undeclared</strong>" in row and "<td>2</td>" in row for row in rows), rows

    (chain.root / "source" / "week09" / "audit.toml").write_text(CHAIN_TOML)
    result = CliRunner().invoke(app, ["audit", "week09", "--course", str(chain.root), "--jobs", "1",
                                      "--html", str(chain.root / "audit.html")])
    assert result.exit_code == 0, result.output
    assert "2 cross-task loss(es) (2 declared)" in result.output and "passed" in result.output
    page = (chain.root / "audit.html").read_text()
    assert page.count("declared: task 2 doubles what task 1 adds (the instructions say so)") == 2
    assert "unneeded audit.toml [[builds_on]] entry 2 (task 1 uses task 2)" in result.output


def test_blame_is_judged_only_for_a_notebook_that_ran_to_its_end() -> None:
    mutant = Mutant(number=1, task=1, cell=2, operator="constant", description="1 -> 2", line="return x + 1",
                    mutated="return x + 2", diff="", source="")
    declared = AuditToml(builds_on=(BuildsOn(number=1, task=3, uses=1, reason="task 3 builds on task 1"),))

    def result(status: Status) -> SubmissionResult:
        tests = [results.TestResult("test_one", 1, 0.0, 4.0, ""), results.TestResult("test_two", 2, 0.0, 5.0, ""),
                 results.TestResult("test_two_more", 2, 3.0, 3.0, ""),
                 results.TestResult("test_three", 3, 1.0, 6.0, "")]  # (imported by module: not a test class)
        return SubmissionResult(submission="m", key="m", status=status, tests=tests,
                                tasks=[TaskResult(1, 0.0, 4.0), TaskResult(2, 3.0, 8.0), TaskResult(3, 1.0, 6.0)])

    graded = judge(mutant, result(Status.GRADED), declared, None)
    assert graded.blamed and not graded.survived
    assert [(c.test, c.task, c.lost, c.declared is not None) for c in graded.cross] == [
        ("test_two", 2, 5.0, False), ("test_three", 3, 5.0, True)]  # its own task's loss is not blame
    late = judge(mutant, result(Status.TIMEOUT), declared, None)  # past the deadline: every later task lost
    assert not late.blamed and late.cross == ()
