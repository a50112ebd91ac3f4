"""The exports graded by the real nbgrader and otter give our scores, test by test.

The tools live in their own virtualenv (scripts/install-interop -> .venv-interop); these
tests are skipped, saying so, only when that environment is absent.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.markers import find_regions
from autograder.course import Course
from autograder.execution import Sandboxed
from autograder.grading.grader import grade
from autograder.interop import export_nbgrader, export_otter, to_nbgrader_grades_csv
from autograder.interop.grades import NBGRADER_COLUMNS
from autograder.results import SubmissionResult
from autograder.submission import Submission

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("AUTOGRADER_INTEROP_BIN", ROOT / ".venv-interop" / "bin"))
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
SOURCES = {"reference": "source/week01/week01.ipynb", "wrong": "tests/fixtures/week01/wrong_no_bias.ipynb"}


def tool(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not (BIN / name).is_file(), reason=f"{name} not installed in {BIN}: run scripts/install-interop")


def run(*args: str, cwd: Path) -> None:
    result = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def fill(released: Path, answers: str, solution_cells: list[int]) -> bytes:
    """The released notebook with our fixture's solution cells pasted into its answer cells."""
    fixture = {c.get("id"): c for c in nbformat.read(ROOT / answers, as_version=4).cells}
    nb = nbformat.read(released, as_version=4)
    for cell, source_id in zip(solution_cells, SOLUTION_IDS):
        nb.cells[cell].source = fixture[source_id].source
    return nbformat.writes(nb).encode()


REFERENCE = nbformat.read(ROOT / SOURCES["reference"], as_version=4)
SOLUTION_IDS = [c.id for i, c in enumerate(REFERENCE.cells) if c.cell_type == "code" and find_regions(c.source, path="-", cell=i)]


def ours(course: Course, slot, notebooks: dict[str, bytes]) -> dict[str, SubmissionResult]:
    """Our sandboxed grader's results on exactly the notebooks the tool graded."""
    subs = [Submission(origin=name, key=name, content=content) for name, content in notebooks.items()]
    return {r.submission: r for r in grade(course.week("week01"), subs, isolation=Sandboxed(slot=slot))}


@tool("nbgrader")
def test_nbgrader_autograde_gives_our_scores(tmp_path: Path, course: Course, slot):
    export_nbgrader(course.week("week01"), tmp_path)
    run(str(BIN / "nbgrader"), "generate_assignment", "week01", cwd=tmp_path)
    released = tmp_path / "release" / "week01" / "week01.ipynb"
    answer_cells = [i for i, c in enumerate(nbformat.read(released, as_version=4).cells)
                    if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    notebooks = {name: fill(released, path, answer_cells) for name, path in SOURCES.items()}
    for name, content in notebooks.items():
        folder = tmp_path / "submitted" / name / "week01"
        folder.mkdir(parents=True)
        (folder / "week01.ipynb").write_bytes(content)
    run(str(BIN / "nbgrader"), "autograde", "week01", cwd=tmp_path)
    run(str(BIN / "nbgrader"), "export", "--to", "grades.csv", cwd=tmp_path)

    expected = {name: {t.name: t.score for t in r.tests} for name, r in ours(course, slot, notebooks).items()}
    for name in notebooks:
        graded = nbformat.read(tmp_path / "autograded" / name / "week01" / "week01.ipynb", as_version=4)
        theirs = {c.metadata["nbgrader"]["grade_id"]: 0.0 if any(o.output_type == "error" for o in c.outputs) else c.metadata["nbgrader"]["points"]
                  for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
        assert theirs == expected[name]
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert float(rows["reference"]["raw_score"]) == 60.0 and float(rows["wrong"]["raw_score"]) < 60.0
    assert {n: float(r["raw_score"]) for n, r in rows.items()} == {n: sum(s.values()) for n, s in expected.items()}
    header = (tmp_path / "grades.csv").read_text().splitlines()[0]
    assert tuple(header.split(",")) == NBGRADER_COLUMNS
    assert to_nbgrader_grades_csv([], tmp_path / "ours.csv").read_text().splitlines()[0] == header


@tool("otter")
def test_otter_run_gives_our_scores(tmp_path: Path, course: Course, slot):
    master = export_otter(course.week("week01"), tmp_path / "master")
    run(str(BIN / "otter"), "assign", str(master), str(tmp_path / "dist"), cwd=master.parent)
    student = tmp_path / "dist" / "student" / "week01.ipynb"
    answer_cells = [i for i, c in enumerate(nbformat.read(student, as_version=4).cells)
                    if c.cell_type == "code" and "otter_answer_cell" in c.metadata.get("tags", [])]
    notebooks = {name: fill(student, path, answer_cells) for name, path in SOURCES.items()}
    expected = {name: {f"task{t.task}": t.score for t in r.tasks if not t.manual}
                for name, r in ours(course, slot, notebooks).items()}
    assert expected["wrong"]["task1"] < 40.0
    (zip_file,) = (tmp_path / "dist" / "autograder").glob("*.zip")
    for name, content in notebooks.items():
        (tmp_path / name).mkdir()
        submission = tmp_path / name / "week01.ipynb"
        submission.write_bytes(content)
        run(str(BIN / "otter"), "run", "-a", str(zip_file), "-o", str(tmp_path / name), str(submission), cwd=tmp_path)
        report = json.loads((tmp_path / name / "results.json").read_text())
        theirs = {t["name"]: t["score"] for t in report["tests"] if t["name"].startswith("task")}
        assert theirs == expected[name]


# -- imported courses: nbgrader's and otter's own grading against ours, construct by construct --

FIXTURES = ROOT / "tests" / "fixtures" / "interop"
# the same wrong answers, pasted into the tool's notebook and into ours
WRONG = {
    "nbgrader": [("return [i ** 2 for i in range(1, n + 1)]", "return [i ** 2 for i in range(1, min(n, 9) + 1)]"),
                 ("acc += v", "acc = v")],
    "otter": [('return "low" if x < 2.5 else "high"', 'return "low" if x <= 3 else "high"'),
              ("spread = data.max() - data.min()", "spread = data.max()")],
}


def wrong(source: str, tool_name: str) -> str:
    for right, bad in WRONG[tool_name]:
        source = source.replace(right, bad)
    return source


def imported(tool_name: str, fixture: str, root: Path) -> Course:
    """The fixture imported into a course set up as this one ships (its course.toml)."""
    from autograder.interop import import_nbgrader, import_otter

    root.mkdir()
    (root / "course.toml").write_bytes((ROOT / "course.toml").read_bytes())
    convert = import_nbgrader if tool_name == "nbgrader" else import_otter
    convert(FIXTURES / fixture, week="week07", out_root=root)
    course = Course.locate(root)
    from autograder.generate.week import generate_week

    generate_week(course.week("week07"))
    return course


def our_scores(course: Course, by_task: bool, edit: Callable[[str], str] | None = None,
               untouched: bool = False) -> dict[str, dict[str, float]]:
    """Our sandboxed grader on our own generated notebook: the reference's answers, the
    wrong ones (``edit``, else the tool's WRONG) and, when asked, the untouched student
    notebook. Its own zygote, since a shared one does not show this week's data/."""
    week = course.week("week07")
    answers = nbformat.read(week.solution_notebook, as_version=4)
    mistaken = copy.deepcopy(answers)
    for cell in mistaken.cells:
        cell.source = edit(cell.source) if edit else wrong(cell.source, "otter" if by_task else "nbgrader")
    notebooks = [("reference", answers), ("wrong", mistaken)]
    if untouched:
        notebooks.append(("untouched", nbformat.read(week.assignment_notebook, as_version=4)))
    subs = [Submission(origin=name, key=name, content=nbformat.writes(nb).encode()) for name, nb in notebooks]
    titles = {t.number: t.title for t in week.tasks}
    out = {}
    for result in grade(week, subs, isolation=Sandboxed()):
        if by_task:
            out[result.submission] = {titles[t.task]: t.score for t in result.tasks if not t.manual}
        else:
            out[result.submission] = {t.name.removeprefix("test_"): t.score for t in result.tests}
    return out


@pytest.mark.sandbox
@tool("nbgrader")
def test_nbgrader_and_we_score_an_imported_course_alike(tmp_path: Path):
    """Every nbgrader construct (hidden tests, a test rebinding a student's name, a test
    function's parameter shadowing one, a column-0 stub in a loop, manual code, task and
    markdown answers): nbgrader autograde and our grader give each test cell the same points."""
    course_dir = tmp_path / "nbgrader"
    (course_dir / "source" / "ps").mkdir(parents=True)
    master = nbformat.read(FIXTURES / "nbgrader_constructs.ipynb", as_version=4)
    nbformat.write(master, course_dir / "source" / "ps" / "ps.ipynb")
    run(str(BIN / "nbgrader"), "generate_assignment", "ps", cwd=course_dir)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in master.cells
               if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}
    released = nbformat.read(course_dir / "release" / "ps" / "ps.ipynb", as_version=4)
    for name, edit in (("reference", str), ("wrong", lambda s: wrong(s, "nbgrader"))):
        nb = copy.deepcopy(released)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = edit(answers[grade_id])
        (course_dir / "submitted" / name / "ps").mkdir(parents=True)
        nbformat.write(nb, course_dir / "submitted" / name / "ps" / "ps.ipynb")
    run(str(BIN / "nbgrader"), "autograde", "ps", cwd=course_dir)
    theirs = {}
    for name in ("reference", "wrong"):
        graded = nbformat.read(course_dir / "autograded" / name / "ps" / "ps.ipynb", as_version=4)
        theirs[name] = {c.metadata["nbgrader"]["grade_id"]: 0.0 if any(o.output_type == "error" for o in c.outputs)
                        else float(c.metadata["nbgrader"]["points"]) for c in graded.cells
                        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
                        and not c.metadata["nbgrader"].get("solution")}

    ours = our_scores(imported("nbgrader", "nbgrader_constructs.ipynb", tmp_path / "ours"), by_task=False)

    assert theirs == ours
    assert theirs["reference"] == {"correct_squares": 2.0, "squares_rebound": 1.0, "correct_running_total": 3.0}
    assert theirs["wrong"] == {"correct_squares": 0.0, "squares_rebound": 1.0, "correct_running_total": 0.0}


def otter_solutions(master: nbformat.NotebookNode) -> list[str]:
    """The master notebook's solution code cells, in order (delimiters raw or fenced)."""
    found, inside = [], False
    for cell in master.cells:
        text = cell.source.replace("```otter", "").replace("```", "").strip()
        if cell.cell_type in ("raw", "markdown") and text in ("# BEGIN SOLUTION", "# END SOLUTION"):
            inside = text == "# BEGIN SOLUTION"
        elif inside and cell.cell_type == "code":
            found.append(cell.source)
    return found


def otter_scores(work: Path, fixture: str, data: tuple[str, ...],
                 edits: dict[str, Callable[[str], str] | None],
                 student_files: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """``otter assign`` on the fixture, then ``otter run`` on its student notebook with the
    master's answers passed through each edit (None: the student notebook untouched):
    the points otter gives each question. With ``student_files`` (the fixture's own
    ``student_files:``) each submission is a zip holding them beside the notebook, as
    otter's export hands them in."""
    work.mkdir()
    shutil.copy(FIXTURES / fixture, work / "master.ipynb")
    for name in data:
        shutil.copy(FIXTURES / name, work / Path(name).name)
    run(str(BIN / "otter"), "assign", "master.ipynb", "dist", cwd=work)
    student = nbformat.read(work / "dist" / "student" / "master.ipynb", as_version=4)
    answer_at = [i for i, c in enumerate(student.cells) if "otter_answer_cell" in c.metadata.get("tags", [])
                 and c.cell_type == "code"]
    answers = otter_solutions(nbformat.read(FIXTURES / fixture, as_version=4))
    assert len(answers) == len(answer_at)
    (zip_file,) = (work / "dist" / "autograder").glob("*.zip")
    theirs = {}
    for name, edit in edits.items():
        nb = copy.deepcopy(student)
        for i, answer in zip(answer_at, answers):
            nb.cells[i].source = edit(answer) if edit else nb.cells[i].source
        (work / name).mkdir()
        nbformat.write(nb, work / name / "master.ipynb")
        submission = work / name / "master.ipynb"
        if student_files:
            submission = work / name / "submission.zip"
            with zipfile.ZipFile(submission, "w") as handed_in:
                handed_in.write(work / name / "master.ipynb", "master.ipynb")
                for file in student_files:
                    handed_in.write(FIXTURES / file, Path(file).name)
        run(str(BIN / "otter"), "run", "-a", str(zip_file), "-o", str(work / name), str(submission), cwd=work)
        report = json.loads((work / name / "results.json").read_text())
        theirs[name] = {t["name"]: float(t["score"]) for t in report["tests"] if "score" in t}
    return theirs


@pytest.mark.sandbox
@tool("otter")
def test_otter_and_we_score_an_imported_course_alike(tmp_path: Path):
    """Every otter construct (points shared out, all_or_nothing, an expected output ending in
    a quote, messages, files, fenced delimiters, IGNORE and SEED lines, an inline prompt, the
    grader cell): otter run and our grader give each question the same points."""
    theirs = otter_scores(tmp_path / "otter", "otter_constructs.ipynb", ("numbers.csv", "notes.txt"),
                          {"reference": str, "wrong": lambda s: wrong(s, "otter")})

    ours = our_scores(imported("otter", "otter_constructs.ipynb", tmp_path / "ours"), by_task=True)

    assert theirs == ours
    assert theirs["reference"] == {"q1": 1.0, "q2": 4.0, "q3": 1.0}
    assert theirs["wrong"] == {"q1": 1.0, "q2": 0.0, "q3": 0.0}


@tool("otter")
@pytest.mark.sandbox
def test_otters_function_style_tests_give_an_untouched_notebook_nothing(tmp_path: Path):
    """otter's exception-based tests (``def test_q1(slope): ...`` then ``test_q1(slope)  #
    IGNORE``, and one test with no call, which otter calls anyway): the hidden test calls the
    function, so the untouched student notebook earns nothing, and otter run and our grader
    give each question the same points."""
    def mistaken(source: str) -> str:
        return source.replace("return slope * x + intercept", "return slope * x + intercept if x else 0")

    theirs = otter_scores(tmp_path / "otter", "otter_functions.ipynb", (),
                          {"reference": str, "wrong": mistaken, "untouched": None})

    root = tmp_path / "ours"
    from autograder.generate.week import generate_week
    from autograder.interop import import_otter

    import_otter(FIXTURES / "otter_functions.ipynb", week="week07", out_root=root)
    course = Course.locate(root)
    generate_week(course.week("week07"))
    ours = our_scores(course, by_task=True, edit=mistaken, untouched=True)

    assert theirs == ours
    assert theirs == {"reference": {"q1": 2.0, "q2": 3.0}, "wrong": {"q1": 2.0, "q2": 1.5},
                      "untouched": {"q1": 0.0, "q2": 0.0}}


@tool("otter")
@pytest.mark.sandbox
def test_otters_own_example_scores_as_otter_scores_it(tmp_path: Path):
    """otter-grader's own master notebook (tests/fixtures/interop/otter_example: manual
    questions with code, markdown or no solution, a question with no tests, an
    all_or_nothing question, a test printing None, seeding, a student's module, a
    solution spread over cells): imported unchanged, its reference, a wrong answer and
    the untouched student notebook get from our grader what otter run gives each question."""
    def mistaken(source: str) -> str:
        for right, bad in (("x = 2", "x = 4"), ("    return y", "    return y + 1"), ("return a + b", "return a - b")):
            source = source.replace(right, bad)
        return source

    theirs = otter_scores(tmp_path / "otter", "otter_example/example.ipynb",
                          ("otter_example/data.csv", "otter_example/student_file.py"),
                          {"reference": str, "wrong": mistaken, "untouched": None},
                          student_files=("otter_example/student_file.py",))

    ours = our_scores(imported("otter", "otter_example/example.ipynb", tmp_path / "ours"), by_task=True,
                      edit=mistaken, untouched=True)

    assert theirs == ours
    assert theirs == {"reference": {"q1": 16.0, "q3": 12.0, "q8": 12.0, "q9": 1.0},
                      "wrong": {"q1": 0.0, "q3": 0.0, "q8": 12.0, "q9": 0.0},
                      "untouched": {"q1": 0.0, "q3": 0.0, "q8": 0.0, "q9": 0.0}}
