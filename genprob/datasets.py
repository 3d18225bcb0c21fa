"""Offline data sets: scikit-learn's bundled sets, palmerpenguins, and the shipped SMS corpus.

Every loader returns ``(X, y)`` NumPy arrays by default, or a :class:`Dataset` with feature names,
target names and a description when ``return_dataset=True``. Nothing is downloaded.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Dataset", "load_iris", "load_wine", "load_breast_cancer", "load_digits", "load"]


class Dataset(NamedTuple):
    """A labelled data set."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list
    target_names: list
    description: str


def _from_sklearn(loader, return_dataset: bool):
    bunch = loader()
    if not return_dataset:
        return bunch.data, bunch.target
    return Dataset(
        X=bunch.data,
        y=bunch.target,
        feature_names=list(bunch.feature_names),
        target_names=[str(t) for t in bunch.target_names],
        description=bunch.DESCR,
    )


def load_iris(return_dataset: bool = False):
    """Fisher's iris: 150 flowers, 4 measurements, 3 species."""
    from sklearn.datasets import load_iris as loader

    return _from_sklearn(loader, return_dataset)


def load_wine(return_dataset: bool = False):
    """Wine recognition: 178 wines, 13 chemical measurements, 3 cultivars."""
    from sklearn.datasets import load_wine as loader

    return _from_sklearn(loader, return_dataset)


def load_breast_cancer(return_dataset: bool = False):
    """Wisconsin diagnostic breast cancer: 569 tumours, 30 features, malignant/benign."""
    from sklearn.datasets import load_breast_cancer as loader

    return _from_sklearn(loader, return_dataset)


def load_digits(return_dataset: bool = False):
    """Handwritten digits: 1797 images of 8x8 pixels with intensities 0..16, 10 classes."""
    from sklearn.datasets import load_digits as loader

    return _from_sklearn(loader, return_dataset)


#: Loaders by name, for the CLI and the tour.
LOADERS = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
}


def load(name: str, return_dataset: bool = False):
    """Load a bundled data set by name (see :data:`LOADERS`)."""
    try:
        loader = LOADERS[name]
    except KeyError:
        known = ", ".join(sorted(LOADERS))
        raise ValueError(f"unknown data set {name!r}; known: {known}.") from None
    return loader(return_dataset=return_dataset)
