# The two quickstart commands: `make demo` and `make test`. Both set up the
# virtual environment first when it is missing or stale.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: setup demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/memtree demo

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff, configured in pyproject.toml: lint and the formatter's check (CI runs it before the tests).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: setup
	$(BIN)/python -m memtree.eval.run_all

clean:
	rm -rf $(VENV) build dist *.egg-info
