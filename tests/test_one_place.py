"""The "one place" claims of docs/ARCHITECTURE.md that a scan of the package's source can hold.

- one Jinja environment factory, ``formats/templating.environment``: no other module builds
  an environment or a template of its own;
- one writer of files, ``formats/atomic.py``: no module writes, opens for writing, copies
  or zips a file directly, except into an ``atomic_path``'s partial file or a file named in
  atomic.py's docstring as not an output file (the kernel's, locks, ``/dev/null``);
- one points formatter, ``formats/points.py``: the command line's tables, the report, the
  audit, the worksheet, the publishing step, the Moodle sync and the service's score comment
  format no points themselves.

Each scan reads the source with ``ast``, so it sees what a ``grep`` would miss (an alias)
and is not fooled by a comment or a docstring.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"

# The writes atomic.py's docstring names as not output files: module -> the targets written
# directly there ("*": every write of the module).
NOT_OUTPUT_FILES = {
    "execution/cgroup.py": {"*"},  # cgroupfs's control files: requests to the kernel
    "worker/zygote.py": {"'/proc/self/oom_score_adj'"},  # a request to the kernel
    "execution/launch.py": {"staged"},  # an empty mount point a file is bound onto
    "testing/hidden.py": {"os.devnull", "null"},  # a sink for output nobody reads
    "service/runner.py": {"self.store.root / LOCK_FILE"},  # a lock file, held with flock
    "moodle_ws/sync.py": {"out_dir / _LOCK"},  # a lock file, held with flock
}
POINTS_PATHS = ("cli.py", "audit/", "report/", "formats/worksheet.py", "manual.py", "publish.py", "moodle_ws/",
                "service/counting.py")
POINTS_NAMES = re.compile(r"score|points|lost|grade", re.IGNORECASE)  # what a points value is named


@cache
def modules() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of the package, parsed once for all the scans: (its path in the package, its tree)."""
    return tuple((path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path)))
                 for path in sorted(PACKAGE.rglob("*.py")))


def jinja_builders(tree: ast.Module) -> list[str]:
    """Calls in ``tree`` that make a Jinja environment or template (``Environment(...)``,
    ``jinja2.Template(...)``, ``env.from_string(...)``), however jinja2 was imported."""
    makers = {"Environment", "Template", "SandboxedEnvironment", "NativeEnvironment", "ImmutableSandboxedEnvironment"}
    local: set[str] = set()  # names bound to a maker by `from jinja2... import X [as Y]`
    modules_: set[str] = set()  # names bound to jinja2 or a submodule
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "jinja2":
            local |= {alias.asname or alias.name for alias in node.names if alias.name in makers}
        elif isinstance(node, ast.Import):
            modules_ |= {alias.asname or alias.name for alias in node.names if alias.name.split(".")[0] == "jinja2"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in local
                or isinstance(func, ast.Attribute) and func.attr in makers
                and ast.unparse(func.value).split(".")[0] in modules_
                or isinstance(func, ast.Attribute) and func.attr == "from_string"):
            found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


def _atomic_partials(tree: ast.Module) -> set[str]:
    """Names bound by ``with atomic_path(...) as NAME``: writing into them is writing atomically."""
    return {ast.unparse(item.optional_vars) for node in ast.walk(tree) if isinstance(node, (ast.With, ast.AsyncWith))
            for item in node.items if item.optional_vars is not None and isinstance(item.context_expr, ast.Call)
            and ast.unparse(item.context_expr.func).split(".")[-1] == "atomic_path"}


def _in_memory(tree: ast.Module) -> set[str]:
    """Names bound to ``io.BytesIO()``/``io.StringIO()``: a zip written there is no file."""
    return {ast.unparse(target) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call) and ast.unparse(node.value.func).split(".")[-1] in {"BytesIO", "StringIO"}
            for target in node.targets}


def _mode(call: ast.Call, position: int) -> str:
    """The mode argument of an ``open``-like call (positional at ``position`` or ``mode=``), "" if not a literal."""
    given = call.args[position] if len(call.args) > position else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else ""


def direct_writes(tree: ast.Module) -> list[tuple[str, str]]:
    """(target, call) for each call in ``tree`` that writes a file other than through formats/atomic.py."""
    writes: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, name = node.func, ast.unparse(node.func)
        first = ast.unparse(node.args[0]) if node.args else ""
        target = None
        if isinstance(func, ast.Attribute) and func.attr in {"write_text", "write_bytes", "symlink_to",
                                                            "hardlink_to", "touch"}:
            target = ast.unparse(func.value)  # pathlib's: formats/atomic's are called by name
        elif name in {"open", "io.open"} and set(_mode(node, 1)) & set("wax+"):
            target = first
        elif isinstance(func, ast.Attribute) and func.attr == "open" and name != "os.open" \
                and set(_mode(node, 0)) & set("wax+"):
            target = ast.unparse(func.value)  # Path.open("w")
        elif name == "os.open" and any(flag in ast.unparse(node) for flag in ("O_WRONLY", "O_RDWR", "O_CREAT")):
            target = first
        elif name.split(".")[-1] == "ZipFile" and set(_mode(node, 1)) & set("wax"):
            target = first
        elif name in {"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.rename"} or (
                name == "shutil.copytree" and not any(k.arg == "copy_function" for k in node.keywords)):
            target = ast.unparse(node.args[1]) if len(node.args) > 1 else name
        if target is not None:
            writes.append((target, f"line {node.lineno}: {ast.unparse(node)[:100]}"))
    elsewhere = _atomic_partials(tree) | _in_memory(tree)
    return [(target, call) for target, call in writes if target not in elsewhere]


def formatted_points(tree: ast.Module) -> list[str]:
    """Points formatted by hand in ``tree``: an f-string's format spec (``{score:g}``) or
    ``format`` applied to a value named like points (``round`` is arithmetic, not writing)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            value = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "format"
              and node.args):
            value = node.args[0]
        else:
            continue
        if POINTS_NAMES.search(ast.unparse(value)):
            found.append(f"line {node.lineno}: {ast.unparse(value)}")
    return found


def test_one_jinja_environment_factory() -> None:
    """Every page shares one set of rules (autoescape, undefined names, the points filter, ``_``)."""
    found = {path: calls for path, tree in modules() if path != "formats/templating.py"
             if (calls := jinja_builders(tree))}
    assert not found, (f"Jinja environments or templates made outside formats/templating.py: {found}; "
                       "use formats.templating.environment('<your package>') and a templates/ folder")


def test_every_file_is_written_through_the_atomic_writer() -> None:
    """A file is written whole or not at all: a killed run leaves no half a worksheet."""
    found = {}
    for path, tree in modules():
        if path == "formats/atomic.py":
            continue
        allowed = NOT_OUTPUT_FILES.get(path, set())
        calls = [call for target, call in direct_writes(tree) if "*" not in allowed and target not in allowed]
        if calls:
            found[path] = calls
    assert not found, (f"files written directly, not through formats/atomic.py: {found}; use its write_text, "
                       "write_bytes, copy_file or atomic_path (or, for a file that is not an output, say why in "
                       "atomic.py's docstring and in this test's NOT_OUTPUT_FILES)")


def test_points_are_formatted_by_the_one_formatter() -> None:
    """The command line prints the points the report shows (0.67, not 0.666667)."""
    found = {path: calls for path, tree in modules() if path.startswith(POINTS_PATHS)
             if (calls := formatted_points(tree))}
    assert not found, f"points formatted outside formats/points.py: {found}; use format_points"


@pytest.mark.parametrize(("source", "scan"), [
    ("import jinja2\nenv = jinja2.Environment()\n", jinja_builders),
    ("from jinja2 import Environment as E\nE(autoescape=True)\n", jinja_builders),
    ("env.from_string('{{ x }}')\n", jinja_builders),
    ("path.write_text('x')\n", direct_writes),
    ("with open(path, 'w') as f: pass\n", direct_writes),
    ("with path.open(mode='ab') as f: pass\n", direct_writes),
    ("shutil.copytree(a, b)\n", direct_writes),
    ("zipfile.ZipFile(out, 'w')\n", direct_writes),
    ("print(f'{r.score:g} / {r.max_score:g}')\n", formatted_points),
    ("text = format(result.pending_points, '.2f')\n", formatted_points),
])
def test_the_scans_see_a_violation(source: str, scan: object) -> None:
    """Each scan finds what it is there to refuse, so an empty finding above means something."""
    assert callable(scan)
    assert scan(ast.parse(source))


@pytest.mark.parametrize(("source", "scan"), [
    ("with atomic_path(path) as partial, partial.open('w') as f: pass\n", direct_writes),
    ("with atomic_path(path) as partial, zipfile.ZipFile(partial, 'w') as z: pass\n", direct_writes),
    ("shutil.copytree(a, b, copy_function=copy_file)\n", direct_writes),
    ("with path.open() as f: pass\n", direct_writes),
    ("print(f'{seconds:g} s')\n", formatted_points),
    ("buffer = io.BytesIO()\nzipfile.ZipFile(buffer, 'w')\n", direct_writes),
])
def test_the_scans_let_the_allowed_pass(source: str, scan: object) -> None:
    """What goes through the one place (or is no points) is not reported."""
    assert callable(scan)
    assert not scan(ast.parse(source))


def test_the_command_line_prints_the_points_the_report_and_worksheet_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """2 of 3 points are 0.67 in the CLI's table as on the feedback page and in Moodle's comment."""
    from rich.console import Console

    from autograder import cli
    from autograder.course import Week
    from autograder.formats.worksheet import feedback_comment
    from autograder.report import render_feedback
    from autograder.results import Status, SubmissionResult, TaskResult

    result = SubmissionResult(submission="s", key="s", status=Status.GRADED,
                              tasks=[TaskResult(task=1, score=2 / 3, max_score=1.0), TaskResult(task=2, score=1.5,
                                                                                              max_score=3.0)])
    console = Console(width=200, record=True)
    monkeypatch.setattr(cli, "out", console)
    cli._print_table(Week(name="week01", root=PACKAGE.parent), [result])
    table = console.export_text()

    assert "2.17 / 4" in table and "0.67/1" in table and "1.5/3" in table, table
    assert "2.17" in render_feedback(result, week_title="week01") and "0.67" in render_feedback(result, week_title="w")
    assert "<strong>2.17 / 4</strong>" in feedback_comment(result) and "Task 1: 0.67 / 1" in feedback_comment(result)
