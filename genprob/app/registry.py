"""The built-in stories by name: the families' :class:`~genprob.families.Command` records, each
with ``make_story(X)`` (some stories are shaped by the data) and its natural bundled data sets;
docs/cli.md lists the stories and the data sets."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from genprob import datasets
from genprob.families import Command, families
from genprob.story import Story

__all__ = [
    "ALIASES",
    "STORIES",
    "DATASETS",
    "names",
    "get",
    "make_story",
    "load_data",
]

#: Vocabulary size of the SMS bag-of-words data sets (the most frequent words).
SMS_VOCABULARY = 200


#: Built-in stories by name (a command without make_story gets its family's from_data).
STORIES: dict = {
    command.name: command
    if command.make_story
    else replace(command, make_story=partial(family.story.from_data, **command.options))
    for family in families().values()
    for command in family.commands
}
#: Other names of the built-in stories (scikit-learn's estimator names) -> registry names.
ALIASES: dict = {alias: entry.name for entry in STORIES.values() for alias in entry.aliases}


def names() -> list:
    """Names of the built-in stories, in registry order."""
    return list(STORIES)


def get(name: str) -> Command:
    """The record of story ``name`` (or of an alias); ``ValueError`` listing the known names."""
    try:
        return STORIES[ALIASES.get(name, name)]
    except KeyError:
        raise ValueError(f"unknown story {name!r}; known: {', '.join(STORIES)}.") from None


def make_story(name: str, X) -> Story:
    """The story ``name`` built for the feature matrix ``X``."""
    return get(name).make_story(np.asarray(X))


def has_story(name: str) -> bool:
    """Whether ``name`` is one story ``genprob check`` can cross-check (not a model choice)."""
    entry = get(name)
    if not entry.face:
        return True
    from genprob.families._registry import load

    return getattr(load(entry.face), "_has_story", True)


# -- data ------------------------------------------------------------------------------------------
def _digits_binary():
    X, y = datasets.load("digits")
    return X > 0, y


def _sms(binary: bool):
    from sklearn.feature_extraction.text import CountVectorizer

    texts, labels = datasets.load_sms_spam()
    vectorizer = CountVectorizer(max_features=SMS_VOCABULARY, binary=binary)
    return vectorizer.fit_transform(texts).toarray(), labels


def _penguins():
    import pandas as pd

    frame, species = datasets.load_penguins(as_frame=True)
    for name in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[name]) or name == "year":
            # category codes in sorted order of the values
            frame[name] = np.unique(frame[name].astype(str).to_numpy(), return_inverse=True)[1]
    return frame, species


#: Bundled data sets by name: loaders returning ``(X, labels)`` (:func:`load_data` codes them).
DATASETS: dict = {
    **{name: partial(datasets.load, name) for name in ("iris", "wine", "breast_cancer", "digits")},
    "digits_binary": _digits_binary,
    "sms_counts": partial(_sms, binary=False),
    "sms_binary": partial(_sms, binary=True),
    "penguins": _penguins,
}


def load_data(name: str):
    """A bundled data set as ``(X float64 (n, D), y codes 0..K-1 (n,), class names)``."""
    try:
        loader = DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(DATASETS)}.") from None
    X, labels = loader()
    classes, codes = np.unique(np.asarray(labels), return_inverse=True)
    return np.asarray(X, dtype=np.float64), codes.astype(np.int64), [str(c) for c in classes]
