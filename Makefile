PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Recreated only when pyproject.toml changes, so re-running `make test` is cheap.
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: venv
	$(BIN)/smalto infer examples/hopper_matmul.mlir

test: venv
	$(BIN)/python -m pytest -q

lint: venv
	$(BIN)/ruff check smalto tests bench

bench: venv
	$(BIN)/python -m bench.run
