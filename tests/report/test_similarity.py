"""Similar answers (autograder/report/similarity.py): a copied pair is found through a
renamed variable, and code the week gave every student is not counted as shared."""

from __future__ import annotations


def test_similarity_finds_the_copied_pair_and_ignores_the_given_code() -> None:
    import nbformat

    from autograder.report.similarity import own_code, similar_pairs

    given = nbformat.v4.new_notebook()
    scaffold = "import numpy as np\n\ndef load(path):\n    return np.loadtxt(path, delimiter=',')\n"
    given.cells = [nbformat.v4.new_code_cell(scaffold), nbformat.v4.new_code_cell("def fit(X, y):\n    raise NotImplementedError")]

    def handed_in(fit: str) -> bytes:
        nb = nbformat.from_dict(given)
        nb.cells[1] = nbformat.v4.new_code_cell(fit)
        return nbformat.writes(nb).encode()

    alice = ("def fit(X, y):\n    w = np.zeros(X.shape[1])\n    for epoch in range(100):\n"
             "        for xi, yi in zip(X, y):\n            if yi * (w @ xi) <= 0:\n                w += yi * xi\n    return w\n")
    bob = alice.replace("epoch", "e").replace("    return w", "    return w  # done")  # renamed a variable
    carol = ("def fit(X, y):\n    from sklearn.linear_model import Perceptron\n    model = Perceptron(max_iter=50)\n"
             "    model.fit(X, y)\n    coefficients = model.coef_.ravel()\n    return coefficients\n")
    codes = {name: own_code(handed_in(fit), given) for name, fit in (("alice", alice), ("bob", bob), ("carol", carol))}
    assert "np.loadtxt" not in codes["alice"]  # the given cell is not the student's own code
    pairs = similar_pairs(codes, given_code=scaffold)
    assert [(p.first, p.second) for p in pairs] == [("alice", "bob")]
    assert pairs[0].score > 0.8 and pairs[0].listings == (codes["alice"], codes["bob"])
    same_scaffold = {"x": scaffold, "y": scaffold}  # only given code in common: nothing to report
    assert similar_pairs(same_scaffold, given_code=scaffold) == []
