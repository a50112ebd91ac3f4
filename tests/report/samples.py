"""The results the report's tests share (tests/report/): one submission's result built to
order, a batch of seven that has every status, a hostile name and a pending hand mark, and
a reader for the HTML pages rendered from them."""

from __future__ import annotations

from html.parser import HTMLParser

from autograder import results as r

WEEK_TITLE = "Week 1: The Perceptron"
HOSTILE = "<script>alert('x')</script>"


class Page(HTMLParser):
    """The parts of an HTML page the tests look at: tags with attributes, and the text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.tags if t == tag]

    @property
    def plain(self) -> str:
        return " ".join(" ".join(self.text).split())


def make_result(
    key: str,
    name: str,
    status: r.Status = r.Status.GRADED,
    passes: tuple[bool, bool, bool] = (True, False, True),
    manual: float = 0.0,
    comment: str = "",
    messages: tuple[str, ...] = (),
) -> r.SubmissionResult:
    ran = status in (r.Status.GRADED, r.Status.TIMEOUT)
    tests = [
        r.TestResult("test_fit", 1, 6.0 if passes[0] else 0.0, 6.0, "fit() converges on separable data"),
        r.TestResult(
            "test_errors", 1, 4.0 if passes[1] else 0.0, 4.0,
            "errors_ has one entry per epoch" + ("" if passes[1] else "\nerrors_ is shorter than n_iter"),
        ),
        r.TestResult("test_secret", 2, 5.0 if passes[2] else 0.0, 5.0, "SECRET-CHECK-TEXT", visibility=r.Visibility.HIDDEN),
    ] if ran else []
    tasks = [
        r.TaskResult(1, sum(t.score for t in tests if t.task == 1), 10.0, title="Implement the Perceptron"),
        r.TaskResult(2, sum(t.score for t in tests if t.task == 2), 5.0, title="Learning rate"),
        r.TaskResult(3, manual, 5.0, manual=True, title="Discuss convergence", comment=comment,
                     marked=bool(manual or comment)),
    ]
    return r.SubmissionResult(
        submission=f"export.zip!{name}_{key}_assignsubmission_file/week01.ipynb",
        key=key,
        status=status,
        tasks=tasks if status is not r.Status.NOT_SUBMITTED else [],
        tests=tests,
        week="week01",
        participant=r.Participant(participant_id=key, full_name=name),
        messages=list(messages),
        duration_s=0.25,
        grader_version="0.1.0",
    )


def seven_results() -> list[r.SubmissionResult]:
    """The batch most of the report's tests read: one submission in each status, a Japanese
    and a hostile name, one hand mark given (101) and one still to come (102)."""
    return [
        make_result("101", "Jane Doe", manual=4.0, comment="Good argument."),
        make_result("102", "山田 太郎", passes=(True, True, True)),
        make_result("103", HOSTILE, messages=(f"Cell 2 printed {HOSTILE}",), comment=f"marker wrote {HOSTILE}"),
        make_result("104", "João", status=r.Status.NOT_ATTEMPTED),
        make_result("105", "Ana", status=r.Status.ERROR, messages=("The notebook is not valid JSON",)),
        make_result("106", "Li", status=r.Status.TIMEOUT, passes=(True, False, False)),
        make_result("107", "Max", status=r.Status.NOT_SUBMITTED, messages=("no .ipynb; files seen: a.pdf",)),
    ]
