# Two entry points (see README): `make example` and `make test`. Both install first.

# The sandboxed worker runs as an unprivileged user, so the interpreter must be readable
# by everyone: prefer the system Python over one installed under a private home.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
INTEROP_STAMP := .venv-interop/.installed
EXAMPLE := examples/ML101-Week 1 The perceptron-42.zip
RESULTS := results/week01

# The course's grading environment (docs/AUTHORING.md, "Adding a library"): the libraries
# course.toml's [grading.libraries] pins, installed with the package, so a new library is an
# edit of the course's file and `make setup` installs it.
GRADING_PINS := $(shell $(PYTHON) -c 'import tomllib; print(" ".join(f"{k}=={v}" for k, v in tomllib.load(open("course.toml", "rb")).get("grading", {}).get("libraries", {}).items()))')

# processes for `make test`'s tests/: one more than the cores, since many service, browser and
# interop tests wait on sockets, subprocesses and timeouts while a third process computes (on 2
# cores, 25.0 min with 2; 20.9 with 3, a minute of it from cuts made the same day); `make test
# TEST_JOBS=1` runs them in one
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
# a ceiling for each test of tests/, not a budget (pytest-timeout): the slowest takes ~3.5 min on
# 2 busy cores; one that hangs (a browser that never answers a key) fails after 20 with every
# thread's stack, and xdist starts a fresh process for the tests after it. Not in pyproject.toml:
# the grader's own runs of the hidden tests read that file's pytest settings.
TEST_CEILING := --timeout=1200 --timeout-method=thread

.PHONY: setup example lint test quick generate audit clean

setup: $(STAMP)

$(STAMP): pyproject.toml course.toml scripts/install-system-packages
	scripts/install-system-packages
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(GRADING_PINS) -e '.[test]'
	touch $(STAMP)

# nbgrader and otter-grader, in their own virtualenv, for the interop tests only
$(INTEROP_STAMP): scripts/install-interop pyproject.toml course.toml
	scripts/install-interop
	touch $(INTEROP_STAMP)

example: setup
	$(BIN)/autograder grade week01 "$(EXAMPLE)" --worksheet examples/grades.csv --out $(RESULTS)

generate: setup
	$(BIN)/autograder generate

# configured in pyproject.toml: lint of the package and its tests, strict types on the package,
# and the package's layers (imports run down the floors of [tool.importlinter])
lint: setup
	$(BIN)/ruff check autograder tests
	$(BIN)/mypy
	$(BIN)/lint-imports

# the developers' inner loop (README, "Development"): lint, then the tests that neither start the
# sandbox nor take two seconds or more (markers on the tests and their fixtures), stopping at the first
# failure; about 3 min on 2 cores. Not a check: `make test` (and CI) runs every test.
quick: setup lint
	$(BIN)/python -m pytest tests -q -x -m "not slow and not sandbox" $(TEST_CEILING)

test: setup lint $(INTEROP_STAMP)
	$(BIN)/autograder generate --check
	# every hidden test passes on the reference solution, run in-process (exit 5: no tests)
	$(BIN)/python -m pytest source -q -p no:randomly || [ $$? -eq 5 ]
	# tests/ in TEST_JOBS processes (pytest-xdist): a module's tests stay in one process, so a
	# module fixture (the stand-in LMS and service, a browser, a graded batch) starts once
	$(BIN)/python -m pytest tests -q -n $(TEST_JOBS) --dist loadfile $(TEST_CEILING)
	$(MAKE) audit

# mutation audit of every week's hidden tests: fails on a survivor not explained in
# source/WEEK/audit.toml, or on a mutant of one task losing points on another task's tests
# that audit.toml does not declare as [[builds_on]] (docs/AUTHORING.md, "Auditing the hidden
# tests"); about 2 min a week at most (the blame check grades nothing more)
WEEKS := $(notdir $(wildcard source/week[0-9][0-9]))
audit: setup
	@status=0; for week in $(WEEKS); do $(BIN)/autograder audit $$week || status=1; done; exit $$status

clean:
	rm -rf $(VENV) results
