"""The built-in stories by name, each with a factory and its natural bundled data sets.

Used by the ``genprob`` command line (``genprob check lda``) and by tests that loop over every
built-in story. A factory takes the feature matrix, because some stories are shaped by the data
(the number of categories of each column, which columns of a mixed table are categorical).

Data sets (all offline; :func:`load_data`):

=================  ============================================================================
``iris``           150 x 4 measurements, 3 species
``wine``           178 x 13 chemical measurements, 3 cultivars
``breast_cancer``  569 x 30 tumour measurements (scales 1e-3 .. 1e3), malignant/benign
``digits``         1797 x 64 pixel intensities 0..16 (counts, or 17 categories), 10 digits
``digits_binary``  the digits with every pixel > 0 set to 1 (``BernoulliNB(binarize=0.0)``)
``sms_counts``     5574 SMS messages as counts of the 200 most frequent words, ham/spam
``sms_binary``     the same words as presence/absence
``penguins``       333 penguins: island, sex, year as category codes + 4 measurements, 3 species
=================  ============================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from genprob import datasets
from genprob.story import Story

__all__ = [
    "StoryEntry",
    "STORIES",
    "DATASETS",
    "names",
    "get",
    "make_story",
    "load_data",
    "categorical_columns",
]

#: Vocabulary size of the SMS bag-of-words data sets (the most frequent words).
SMS_VOCABULARY = 200
#: A column is treated as categorical by the ``mixed`` story when it holds non-negative
#: integer codes with at most this many distinct values.
MAX_CODES = 20


class StoryEntry(NamedTuple):
    """A built-in story.

    Attributes:
        name: registry name (``genprob check NAME``).
        description: one line.
        factory: ``factory(X) -> Story`` for a feature matrix ``X``.
        datasets: natural bundled data sets, the default first.
    """

    name: str
    description: str
    factory: Callable[[np.ndarray], Story]
    datasets: tuple


def _gaussian(**options):
    def factory(X):
        from genprob.families.gaussian import GaussianStory

        return GaussianStory(**options)

    return factory


def _discrete(family: str, **options):
    def factory(X):
        from genprob.families import story_named

        return story_named(family).from_data(X, **options)

    return factory


def categorical_columns(X) -> list:
    """Columns of non-negative integer codes with at most :data:`MAX_CODES` distinct values."""
    X = np.asarray(X, dtype=float)
    chosen = []
    for j in range(X.shape[1]):
        column = X[:, j]
        if np.all(column >= 0) and np.all(column == np.round(column)):
            if len(np.unique(column)) <= MAX_CODES:
                chosen.append(j)
    return chosen


def _mixed(X):
    """Gaussian naive Bayes on the measurement columns + a categorical block on code columns."""
    from genprob.families.categorical import CategoricalStory
    from genprob.families.gaussian import GaussianStory
    from genprob.families.mixed import MixedStory

    X = np.asarray(X)
    codes = categorical_columns(X)
    numeric = [j for j in range(X.shape[1]) if j not in codes]
    blocks = []
    if numeric:
        gaussian = GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9)
        blocks.append(("numeric", gaussian, tuple(numeric)))
    if codes:
        story = CategoricalStory.from_data(X[:, codes], alpha=1.0)
        blocks.append(("categories", story, tuple(codes)))
    return MixedStory(blocks)


_GAUSSIAN_DATA = ("iris", "wine", "breast_cancer")


def _entries():
    gaussian = [
        ("lda", "full covariance shared by the classes (LDA), MLE", {}, "iris"),
        ("qda", "full covariance per class (QDA), MLE", {"shared": False}, "wine"),
        (
            "gaussian_nb",
            "diagonal covariance per class (Gaussian NB), var_smoothing=1e-9",
            {"covariance": "diag", "shared": False, "var_smoothing": 1e-9},
            "breast_cancer",
        ),
        (
            "shared_diag",
            "diagonal covariance shared by the classes, MLE",
            {"covariance": "diag"},
            "iris",
        ),
        ("lda_shrinkage", "LDA with shrinkage=0.2", {"shrinkage": 0.2}, "wine"),
        (
            "lda_ledoit_wolf",
            "LDA with Ledoit-Wolf shrinkage (shrinkage='auto')",
            {"shrinkage": "auto"},
            "breast_cancer",
        ),
        ("qda_reg", "QDA with reg_param=0.1", {"shared": False, "reg_param": 0.1}, "iris"),
        (
            "qda_unbiased",
            "QDA with the unbiased covariance (1/(n_k - 1))",
            {"shared": False, "estimator": "unbiased"},
            "wine",
        ),
    ]
    entries = []
    for name, description, options, default in gaussian:
        others = tuple(d for d in _GAUSSIAN_DATA if d != default)
        entries.append(StoryEntry(name, description, _gaussian(**options), (default,) + others))
    entries += [
        StoryEntry(
            "bernoulli",
            "binary features (Bernoulli NB), alpha=1",
            _discrete("bernoulli", alpha=1.0),
            ("digits_binary", "sms_binary"),
        ),
        StoryEntry(
            "categorical",
            "categorical features (categorical NB), alpha=1",
            _discrete("categorical", alpha=1.0),
            ("digits",),
        ),
        StoryEntry(
            "multinomial",
            "word counts (multinomial NB), alpha=1",
            _discrete("multinomial", alpha=1.0),
            ("sms_counts", "digits"),
        ),
        StoryEntry(
            "poisson",
            "independent Poisson counts, Gamma smoothing alpha=1, beta=1",
            _discrete("poisson", alpha=1.0, beta=1.0),
            ("sms_counts", "digits"),
        ),
        StoryEntry(
            "mixed",
            "Gaussian NB on measurements + categorical NB on code columns",
            _mixed,
            ("penguins",),
        ),
    ]
    return {entry.name: entry for entry in entries}


#: Built-in stories by name.
STORIES: dict = _entries()


def names() -> list:
    """Names of the built-in stories, in registry order."""
    return list(STORIES)


def get(name: str) -> StoryEntry:
    """The registry entry of ``name``; ``ValueError`` listing the known names otherwise."""
    try:
        return STORIES[name]
    except KeyError:
        raise ValueError(f"unknown story {name!r}; known: {', '.join(STORIES)}.") from None


def make_story(name: str, X) -> Story:
    """The story ``name`` built for the feature matrix ``X``."""
    return get(name).factory(np.asarray(X))


# -- data ------------------------------------------------------------------------------------------
def _codes(labels):
    classes, codes = np.unique(np.asarray(labels), return_inverse=True)
    return codes.astype(np.int64), [str(c) for c in classes]


def _sklearn(name):
    def load():
        X, y = datasets.load(name)
        codes, classes = _codes(y)
        return np.asarray(X, dtype=np.float64), codes, classes

    return load


def _digits_binary():
    X, y, classes = _sklearn("digits")()
    return (X > 0).astype(np.float64), y, classes


def _sms(binary: bool):
    def load():
        from sklearn.feature_extraction.text import CountVectorizer

        texts, labels = datasets.load_sms_spam()
        vectorizer = CountVectorizer(max_features=SMS_VOCABULARY, binary=binary)
        X = vectorizer.fit_transform(texts).toarray().astype(np.float64)
        codes, classes = _codes(labels)
        return X, codes, classes

    return load


def _penguins():
    import pandas as pd

    frame, species = datasets.load_penguins(as_frame=True)
    columns = []
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_numeric_dtype(column) or name == "year":
            # category codes in sorted order of the values
            _, codes = np.unique(column.astype(str).to_numpy(), return_inverse=True)
            columns.append(codes.astype(np.float64))
        else:
            columns.append(column.to_numpy(dtype=np.float64))
    codes, classes = _codes(species.to_numpy())
    return np.column_stack(columns), codes, classes


#: Bundled data sets by name: loaders returning ``(X, y_codes, class_names)``.
DATASETS: dict = {
    "iris": _sklearn("iris"),
    "wine": _sklearn("wine"),
    "breast_cancer": _sklearn("breast_cancer"),
    "digits": _sklearn("digits"),
    "digits_binary": _digits_binary,
    "sms_counts": _sms(binary=False),
    "sms_binary": _sms(binary=True),
    "penguins": _penguins,
}


def load_data(name: str):
    """A bundled data set as ``(X float64 (n, D), y codes 0..K-1 (n,), class names)``."""
    try:
        loader = DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(DATASETS)}.") from None
    return loader()
