"""Shared test helpers: dtype-keyed tolerances and a headless plotting backend."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

from genprob._dtype import TOLERANCES  # noqa: E402


@pytest.fixture
def tol():
    """Tolerances keyed by dtype name: ``tol["float64"]["rtol"]``."""
    return TOLERANCES


def pytest_collection_modifyitems(items):
    """Notebook 02 is ArviZ-facing: `-m arviz` (the ArviZ 1.x run of `make test`) selects it."""
    for item in items:
        if item.path.name == "02_mle_vs_posterior.ipynb":
            item.add_marker(pytest.mark.arviz)
