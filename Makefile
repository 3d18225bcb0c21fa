# Two entry points on a fresh machine (python3, pip, make): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint format bench clean install docs strip-notebooks browser test-site

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,docs]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/genprob demo

# The tour notebooks run in the same pytest session as the tests (nbmake executes every
# notebook under notebooks/), then the documentation site must build without a warning.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 -q -m "not slow and not docs" --nbmake tests notebooks
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site
	$(MAKE) test-site SITE=site

# The built site read in headless Chromium on 127.0.0.1 (tests/test_site.py): formulas typeset,
# images loaded, tables within the page, no request leaving the machine. Builds the site itself
# unless SITE names a built one.
SITE ?=
test-site: $(STAMP) browser
	GENPROB_SITE=$(SITE) $(BIN)/python -m pytest -n 0 -q -m docs tests/test_site.py

# Debian's chromium (Playwright drives it; no browser is downloaded). Needs root, as on CI.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update && apt-get install -y chromium)

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Notebooks are committed without outputs (tests/test_notebooks.py checks it).
strip-notebooks: $(STAMP)
	$(BIN)/python -c "import glob, nbformat; nbs = {p: nbformat.read(p, as_version=4) for p in glob.glob('notebooks/*.ipynb')}; [c.update(outputs=[], execution_count=None) for nb in nbs.values() for c in nb.cells if c.cell_type == 'code']; [nbformat.write(nb, p) for p, nb in nbs.items()]"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m slow

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_fit.py --json benchmarks/results/bench_fit.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
