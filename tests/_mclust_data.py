"""The data sets of the mclust references (tests/references/mclust/*.csv: features, then the
class label), read once the same way by every test that compares with R's mclust."""

from __future__ import annotations

from pathlib import Path

import numpy as np

REFERENCES = Path(__file__).parent / "references" / "mclust"


def load(name: str):
    """``(X, y)`` of ``{name}.csv``."""
    table = np.loadtxt(REFERENCES / f"{name}.csv", delimiter=",", skiprows=1)
    return table[:, :-1], table[:, -1].astype(int)


def class_rows(name: str, label: int):
    """The rows of ``{name}.csv`` whose label is ``label``."""
    X, y = load(name)
    return X[y == label]
