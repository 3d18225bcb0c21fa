"""The built-in stories by name, each with a factory and its natural bundled data sets.

Used by the ``genprob`` command line (``genprob check lda``) and by tests that loop over every
built-in story. The entries come from the families' records (:mod:`genprob.families`): a new
family adds its stories there, not here. A factory takes the feature matrix, because some
stories are shaped by the data (the number of categories of each column, which columns of a
mixed table are categorical).

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
from genprob.families import Command, commands, families
from genprob.story import Story

__all__ = [
    "ALIASES",
    "StoryEntry",
    "STORIES",
    "DATASETS",
    "names",
    "get",
    "make_story",
    "load_data",
    "notes",
    "report_stories",
    "takes_text",
]

#: Vocabulary size of the SMS bag-of-words data sets (the most frequent words).
SMS_VOCABULARY = 200


class StoryEntry(NamedTuple):
    """A built-in story (from a family's :class:`~genprob.families.Command`).

    Attributes:
        name: registry name (``genprob check NAME``).
        description: one line.
        factory: ``factory(X) -> Story`` for a feature matrix ``X``.
        datasets: natural bundled data sets, the default first.
        aliases: other accepted names.
        table_estimator: ``table_estimator(features, **options)``, the estimator of a story that
            takes a table of mixed column types (text included); None for the others.
        note: what the command line's help says of the story beyond its name.
        face: ``"module:Class"`` of the estimator that fits the story on the command line, with
            keyword arguments ``face_options``; empty: ``GenerativeClassifier`` of the story.
    """

    name: str
    description: str
    factory: Callable[[np.ndarray], Story]
    datasets: tuple
    aliases: tuple = ()
    table_estimator: Callable | None = None
    note: str = ""
    face: str = ""
    face_options: dict = {}

    @property
    def takes_text(self) -> bool:
        """Whether the story's features may hold text columns (categories)."""
        return self.table_estimator is not None


def _factory(story: type, command: Command):
    if command.make_story is not None:
        return command.make_story
    return lambda X: story.from_data(X, **command.options)


def _entries() -> dict:
    return {
        command.name: StoryEntry(
            command.name,
            command.description,
            _factory(family.story, command),
            tuple(command.datasets),
            tuple(command.aliases),
            command.table_estimator,
            command.note,
            command.face,
            dict(command.face_options),
        )
        for family in families().values()
        for command in family.commands
    }


#: Built-in stories by name, from the families' records.
STORIES: dict = _entries()
#: Other names of the built-in stories (scikit-learn's estimator names) -> registry names.
ALIASES: dict = {alias: entry.name for entry in STORIES.values() for alias in entry.aliases}


def names() -> list:
    """Names of the built-in stories, in registry order."""
    return list(STORIES)


def get(name: str) -> StoryEntry:
    """The registry entry of ``name`` (or of an alias); ``ValueError`` listing the known names
    otherwise."""
    try:
        return STORIES[ALIASES.get(name, name)]
    except KeyError:
        raise ValueError(f"unknown story {name!r}; known: {', '.join(STORIES)}.") from None


def make_story(name: str, X) -> Story:
    """The story ``name`` built for the feature matrix ``X``."""
    return get(name).factory(np.asarray(X))


def has_story(name: str) -> bool:
    """Whether the registry story ``name`` is one story (its face fits a story), which ``genprob
    check`` can cross-check; a face without one (``_has_story = False``) chooses its model."""
    entry = get(name)
    if not entry.face:
        return True
    from genprob.families._registry import load

    return getattr(load(entry.face), "_has_story", True)


def report_stories() -> tuple:
    """The stories the full report cross-checks (the families' choice)."""
    return tuple(command.name for command in commands().values() if command.in_report)


def notes() -> str:
    """The stories' notes for the command line's help, one after the other."""
    return " ".join(entry.note for entry in STORIES.values() if entry.note)


def takes_text(story: Story) -> bool:
    """Whether a fitted model of ``story`` reads text columns (a family with a table
    estimator)."""
    family = families().get(getattr(story, "name", None))
    return family is not None and any(c.table_estimator for c in family.commands)


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
