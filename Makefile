# Two entry points on a fresh machine (python3, pip, make): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint format bench clean install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m genprob.tour

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m slow

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_fit.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
