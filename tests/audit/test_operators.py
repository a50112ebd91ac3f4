"""The mutation operators (autograder/audit/operators.py): every kind, only inside the
solution region, never a mutant equal to the source or without its return."""

from __future__ import annotations

import textwrap

from autograder.audit.operators import KINDS, mutations

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

