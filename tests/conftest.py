"""Shared test helpers: dtype-keyed tolerances and a headless plotting backend."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

from genprob._dtype import TOLERANCES  # noqa: E402


@pytest.fixture
def tol():
    """Tolerances keyed by dtype name: ``tol["float64"]["rtol"]``."""
    return TOLERANCES
