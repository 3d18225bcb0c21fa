# Two entry points on a fresh machine (python3, pip, make): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the ArviZ 1.x and dependency-floor environments of `make test` (see "matrix" at the end)
ARVIZ1_VENV := .venv-arviz1
ARVIZ1_STAMP := $(ARVIZ1_VENV)/.installed
ARVIZ1_PACKAGES := "arviz==1.3.*" "arviz-base==1.3.*" "arviz-stats==1.3.*" "arviz-plots==1.3.*"
OLDEST_VENV := .venv-oldest
OLDEST_STAMP := $(OLDEST_VENV)/.installed

.PHONY: demo test test-slow lint format bench bench-mclust clean install docs strip-notebooks browser test-site

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
# Then the same under ArviZ 1.x and at every dependency floor (see "matrix" below).
test: $(STAMP) $(ARVIZ1_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 -q -m "not slow and not docs" --nbmake tests notebooks
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site
	$(MAKE) test-site SITE=site
	$(MAKE) --no-print-directory test-arviz1 test-oldest

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

# against R's mclust in the same run (Rscript with mclust; R_LIBS=DIR for a private library)
bench-mclust: $(STAMP)
	$(BIN)/python benchmarks/bench_mclust.py --json benchmarks/results/bench_mclust.json
	$(BIN)/python benchmarks/bench_mclust.py --em-tol 1e-5 --cases iris,digits \
		--json benchmarks/results/bench_mclust_tol.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site $(ARVIZ1_VENV) $(OLDEST_VENV)

# -- matrix: ArviZ 1.x and the dependency floors ------------------------------------------------
# pip gives ArviZ 0.x on Python 3.11 and 1.x (arviz-base/-stats/-plots, DataTree) on 3.12+.
# ArviZ 1.x declares Python >= 3.12 but runs on 3.11: installing it with
# --ignore-requires-python is how its path is tested on this Python. test-arviz1 runs every
# ArviZ-facing test (marker `arviz`: the cross-major parity test against .venv, and notebook 02,
# marked in tests/conftest.py) and the demo there. test-oldest installs every runtime dependency at its
# pyproject.toml floor (.ci/floors.py; scikit-learn stays at the test extra's pin) and runs the
# whole suite and the demo. The parity test is left out there: it compares two environments
# that differ in ArviZ alone.

.PHONY: test-arviz1 test-oldest

$(ARVIZ1_STAMP): pyproject.toml
	$(PYTHON) -m venv $(ARVIZ1_VENV)
	$(ARVIZ1_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(ARVIZ1_VENV)/bin/python -m pip install --quiet -e ".[test]"
	# only ArviZ ignores the Python bound: the rest keeps wheels built for this Python
	$(ARVIZ1_VENV)/bin/python -m pip install --quiet --ignore-requires-python $(ARVIZ1_PACKAGES)
	touch $@

$(OLDEST_STAMP): pyproject.toml .ci/floors.py
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PYTHON) .ci/floors.py --except scikit-learn > $(OLDEST_VENV)/floors.txt
	$(OLDEST_VENV)/bin/python -m pip install --quiet -c $(OLDEST_VENV)/floors.txt -e ".[test]"
	$(OLDEST_VENV)/bin/python .ci/floors.py --except scikit-learn --check
	touch $@

test-arviz1: $(STAMP) $(ARVIZ1_STAMP)
	$(ARVIZ1_VENV)/bin/python -m pytest -n 2 -q -p no:cacheprovider -m "arviz and not slow" --nbmake tests notebooks
	$(ARVIZ1_VENV)/bin/genprob demo --quick --out $(ARVIZ1_VENV)/demo-report

test-oldest: $(OLDEST_STAMP)
	$(OLDEST_VENV)/bin/python .ci/floors.py --except scikit-learn --check
	$(OLDEST_VENV)/bin/python -m pytest -n 2 -q -p no:cacheprovider -m "not slow and not docs" --ignore tests/test_arviz_majors.py --nbmake tests notebooks
	$(OLDEST_VENV)/bin/genprob demo --quick --out $(OLDEST_VENV)/demo-report
