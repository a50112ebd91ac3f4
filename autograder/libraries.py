"""The libraries student code and hidden tests run on, named once.

Their exact versions are pinned in ``requirements/grading.txt`` (``pyproject.toml``
repeats the pins so an installed package gets them; ``tests/test_libraries.py`` keeps
the two in step). ``GRADING_LIBRARIES`` enter the grader version (``provenance.py``), so
a change of any of them means a regrade; the zygote imports ``PRELOADED_MODULES`` once so
a forked worker pays nothing for them. Imported inside the sandbox: imports nothing.
"""

from __future__ import annotations

# distribution names, as pip and importlib.metadata spell them
GRADING_LIBRARIES = ("numpy", "scipy", "scikit-learn", "matplotlib", "threadpoolctl", "ipython", "pytest")
PINNED = ("numpy", "scipy", "scikit-learn", "matplotlib", "threadpoolctl")  # pinned exactly in both files

# what the course's notebooks import; matplotlib first, after the Agg backend is chosen
PRELOADED_MODULES = (
    "matplotlib.pyplot",
    "numpy",
    "scipy.optimize",
    "scipy.special",
    "sklearn.datasets",
    "sklearn.feature_extraction.text",
    "sklearn.linear_model",
    "sklearn.metrics",
    "sklearn.model_selection",
    "sklearn.naive_bayes",
    "sklearn.neighbors",
    "sklearn.preprocessing",
)
