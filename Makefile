# jax 0.12.0.1 needs Python >= 3.12. PYTHON, if given, is used as is; otherwise
# the first interpreter >= 3.12 among python3.12, python3.13, python3 and
# pyenv's installed versions (pyenv's shims refuse versions that are not
# active, so its folders are searched directly).
PYTHON ?= $(shell bash .ci/find-python)
VENV := .venv
BIN := $(VENV)/bin
# Recreated only when pyproject.toml changes, so re-running `make test` is cheap.
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "smalto needs Python >= 3.12 (jax 0.12.0.1 does): install one (e.g. 'pyenv install 3.12') or run 'make PYTHON=/path/to/python3.12 ...'" >&2; exit 1; }
	test -x $(BIN)/python && $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: venv
	$(BIN)/smalto infer examples/hopper_matmul.mlir

# On every core this process may use (pytest-xdist; tests/conftest.py counts them, a
# cgroup's quota and the memory included); work-stealing keeps each worker on a run of
# whole files and hands the last ones to whichever is idle. docs/testing.md says more.
test: venv
	$(BIN)/python -m pytest -q -n auto --dist worksteal

# ruff (lint and format), mypy over the package ([tool.mypy] in pyproject.toml), then the
# import contracts of pyproject.toml (the layers, no circles; see docs/architecture.md), which
# the test suite checks too (tests/codebase/test_import_contracts.py).
lint: venv
	$(BIN)/ruff check smalto tests bench
	$(BIN)/ruff format --check smalto tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# Timings, not tests: writes bench/RESULTS.md (corpus kernels, then the
# fuel-exhausted kernels and the scaling run appended). Takes a few minutes.
bench: venv
	$(BIN)/python -m bench.run --markdown bench/RESULTS.md
	$(BIN)/python -m bench.run --fuel-exhausted --markdown bench/RESULTS.md --append
	$(BIN)/python -m bench.scaling --markdown bench/RESULTS.md --append
	$(BIN)/python -m bench.family --markdown bench/RESULTS.md --append
	$(BIN)/python -m bench.first_call --markdown bench/RESULTS.md --append

# A long fuzz run, fresh seeds: 10 000 random modules against the checker and JAX's pass
# (new failures are saved under tests/fuzz/regressions/, see tests/fuzz/run.py); 1 000
# modules of each rescue family (tests/fuzz/run_rescues.py); 200 deep and wide modules
# through the commands (tests/cli/test_deep_and_wide.py, a random sample per depth).
.PHONY: fuzz
fuzz: venv
	cd tests && ../$(BIN)/python -m fuzz.run --examples 10000
	cd tests && ../$(BIN)/python -m fuzz.run_rescues --examples 1000
	SMALTO_FUZZ_EXAMPLES=20 SMALTO_FUZZ_SEED=$$(date +%s) $(BIN)/pytest -q tests/cli/test_deep_and_wide.py
