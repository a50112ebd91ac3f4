"""The audit's HTML page: survivors with their diff first, then the cross-task losses, then
what was killed or skipped.

Rendered by ``formats/templating.environment``, autoescaping (the diffs are source code:
every ``<`` must reach the page as text), over the audit's templates and then the report's
(``style.css`` is shared).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from jinja2 import Environment

from autograder.audit.audit_toml import builds_on_text, entry_text
from autograder.audit.run import Audit, MutantOutcome
from autograder.formats.atomic import write_text
from autograder.formats.templating import environment


@cache
def _environment() -> Environment:
    return environment("autograder.audit", "autograder.report")


def survivor_entry(outcome: MutantOutcome) -> str:
    """The audit.toml entry that would record ``outcome`` as equivalent."""
    m = outcome.mutant
    return entry_text(m.task, m.operator, m.line, m.mutated)


def write_html(audit: Audit, path: Path) -> Path:
    """Write the audit's page to ``path`` (folders created) and return it."""
    pairs = sorted({(loss.task, o.mutant.task) for o, loss in audit.undeclared})
    html = _environment().get_template("audit.html.j2").render(audit=audit, entry=survivor_entry,
                                                               builds_on=builds_on_text, builds_on_pairs=pairs)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, html)
    return path
