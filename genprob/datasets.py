"""Offline data sets: scikit-learn's bundled sets, palmerpenguins, and the shipped SMS corpus.
Every loader returns ``(X, y)`` NumPy arrays, or a :class:`Dataset` with ``return_dataset=True``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "Dataset",
    "load_iris",
    "load_wine",
    "load_breast_cancer",
    "load_digits",
    "load_sms_spam",
    "load_penguins",
    "load",
]


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


SMS_SPAM_DESCRIPTION = """SMS Spam Collection v.1 (UCI Machine Learning Repository, dataset 228).

5,574 real English SMS messages tagged "ham" (4,827) or "spam" (747); X holds the raw texts and
y the labels. License: CC BY 4.0. Cite: Almeida, T.A., Gomez Hidalgo, J.M., Yamakami, A.
"Contributions to the Study of SMS Spam Filtering: New Collection and Results." Proceedings of
the 2011 ACM Symposium on Document Engineering (DOCENG'11), Mountain View, CA, USA, 2011.
Shipped compressed in genprob/data (see genprob/data/README.md)."""


def load_sms_spam(return_dataset: bool = False):
    """The SMS Spam Collection: ``(texts, labels)``, object arrays of 5,574 raw messages and
    ``"ham"`` or ``"spam"``, from the compressed copy in ``genprob/data`` (no download); a
    :class:`Dataset` with the attribution as description when ``return_dataset``."""
    import lzma
    from importlib import resources

    raw = resources.files("genprob").joinpath("data", "SMSSpamCollection.tsv.xz").read_bytes()
    lines = lzma.decompress(raw).decode("utf-8").splitlines()
    labels, texts = zip(*(line.split("\t", 1) for line in lines if line), strict=True)
    X = np.array(texts, dtype=object)
    y = np.array(labels, dtype=object)
    if not return_dataset:
        return X, y
    return Dataset(
        X=X,
        y=y,
        feature_names=["text"],
        target_names=["ham", "spam"],
        description=SMS_SPAM_DESCRIPTION,
    )


#: Type of every penguin feature: a column -> family mapping ready for ``genprob.MixedNB``.
PENGUIN_FAMILIES = {
    "island": "categorical",
    "bill_length_mm": "gaussian",
    "bill_depth_mm": "gaussian",
    "flipper_length_mm": "gaussian",
    "body_mass_g": "gaussian",
    "sex": "categorical",
    "year": "categorical",
}
PENGUIN_FEATURES = list(PENGUIN_FAMILIES)


def load_penguins(return_dataset: bool = False, as_frame: bool = False, dropna: bool = True):
    """Palmer penguins: 3 species described by 4 measurements and 3 categorical columns.

    From the ``palmerpenguins`` package (Horst, Hill and Gorman, 2020; data by K. Gorman,
    Palmer Station LTER; CC0). Features: ``island`` (str), ``bill_length_mm``,
    ``bill_depth_mm``, ``flipper_length_mm``, ``body_mass_g`` (float), ``sex`` (str) and
    ``year`` (int: 2007-2009); target: ``species`` (Adelie, Chinstrap, Gentoo).
    :data:`PENGUIN_FAMILIES` gives a column -> family mapping for :class:`genprob.MixedNB`.

    Missing values: 11 of the 344 rows lack ``sex`` (2 of them also every measurement). With
    ``dropna=True`` (default) those rows are dropped, leaving 333 complete rows; with
    ``dropna=False`` they are kept as NaN (None/NaN in the object array), which the estimators
    reject with a ``ValueError``.

    Args:
        return_dataset: return a :class:`Dataset`.
        as_frame: X as a pandas DataFrame and y as a Series (else NumPy object arrays: X mixes
            strings and numbers).
        dropna: drop rows with a missing value.

    Returns:
        ``(X, y)`` or a :class:`Dataset`.
    """
    import palmerpenguins

    frame = palmerpenguins.load_penguins()
    if dropna:
        frame = frame.dropna(subset=PENGUIN_FEATURES + ["species"])
    frame = frame.reset_index(drop=True)
    X = frame[PENGUIN_FEATURES].copy()
    y = frame["species"].astype(object).rename("species")
    if not as_frame:
        X = X.astype(object).to_numpy()
        y = y.to_numpy()
    if not return_dataset:
        return X, y
    return Dataset(
        X=X,
        y=y,
        feature_names=list(PENGUIN_FEATURES),
        target_names=sorted(frame["species"].unique().tolist()),
        description=load_penguins.__doc__,
    )


#: Loaders by name, for the CLI and the tour.
LOADERS = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
    "sms_spam": load_sms_spam,
    "penguins": load_penguins,
}


def load(name: str, return_dataset: bool = False):
    """Load a bundled data set by name (see :data:`LOADERS`)."""
    try:
        loader = LOADERS[name]
    except KeyError:
        known = ", ".join(sorted(LOADERS))
        raise ValueError(f"unknown data set {name!r}; known: {known}.") from None
    return loader(return_dataset=return_dataset)
