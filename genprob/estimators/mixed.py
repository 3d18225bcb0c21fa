"""MixedNB: naive Bayes over a table whose columns follow different families, one block of a
:class:`genprob.families.mixed.MixedStory` per family, each fitted in closed form."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from numbers import Real

import numpy as np
import pandas as pd
import scipy.sparse
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from genprob.engine._validation import check_alpha
from genprob.engine.streaming import add_contexts, is_out_of_core
from genprob.estimators._base import GenerativeClassifierBase, keep_parameters
from genprob.estimators.discrete import _DiscreteNB
from genprob.families._registry import block_context, block_families, family_named, naive_block
from genprob.families.mixed import DEFAULT_NAIVE_FAMILY, MixedStory, grow_statistics

__all__ = ["MixedNB"]


def _is_frame(X) -> bool:
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _as_table(X):
    """A DataFrame or NumPy array as is; other array-likes as an object array (types kept)."""
    if scipy.sparse.issparse(X):
        raise TypeError(
            "Sparse data was passed to MixedNB, but dense data is required (a table with one "
            "family per column); use X.toarray() or a DataFrame."
        )
    if _is_frame(X) or isinstance(X, np.ndarray):
        return X
    return np.asarray(X, dtype=object)


def _column_keys(X) -> list:
    if _is_frame(X):
        return list(X.columns)
    shape = np.shape(X)
    if len(shape) != 2:
        raise ValueError(
            f"Expected a 2-D table (rows x columns), got shape {shape}. Reshape your data: "
            f"array.reshape(-1, 1) for a single feature, array.reshape(1, -1) for a single "
            f"sample."
        )
    return list(range(shape[1]))


def _column(X, position: int, key) -> np.ndarray:
    """The values of column ``key``; dates, times and durations are refused by name."""
    values = X.iloc[:, position].to_numpy() if _is_frame(X) else np.asarray(X)[:, position]
    if values.dtype.kind in "mM":
        _refuse_dates(key, values[0] if values.size else values.dtype)
    return values


#: What a category may be: what a model file stores exactly.
_CATEGORY_TYPES = (str, int, float, np.integer, np.floating, np.bool_)
_DATE_TYPES = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)


def _refuse_dates(key, example):
    raise ValueError(
        f"column {key!r} holds dates, times or durations (like {example!r}); MixedNB takes "
        f"numbers and categories (strings, numbers, booleans): convert it, e.g. a date to days "
        f"since a start or to its year, a duration to seconds, or leave it out."
    )


def _shown(known, limit: int = 20) -> str:
    """The first ``limit`` known categories of a column, for a message."""
    values = np.asarray(known).tolist()
    return str(values) if len(values) <= limit else f"{str(values[:limit])[:-1]}, ...]"


def _categories_of(X, position: int, key, known=None, skip_missing=False) -> np.ndarray:
    """Sorted distinct values of a categorical column (with the ``known`` ones, if given);
    missing values are refused, or left out with ``skip_missing``."""
    values = _column(X, position, key).astype(object)
    absent = pd.isna(values)
    if absent.any() and not skip_missing:
        raise ValueError(
            f"categorical column {key!r} has {int(absent.sum())} missing values; drop or impute "
            "those rows, or pass missing='marginalize' to sum them out."
        )
    values = values[~absent]
    odd = {
        kind
        for kind in set(map(type, values))
        if issubclass(kind, _DATE_TYPES) or not issubclass(kind, _CATEGORY_TYPES)
    }
    if odd:  # a list, a dict (Parquet's list and struct columns), bytes, a date ...
        example = next(v for v in values if type(v) in odd)
        if isinstance(example, _DATE_TYPES):
            _refuse_dates(key, example)
        raise ValueError(
            f"categorical column {key!r} holds {type(example).__name__} values (like "
            f"{_shown([example])[1:-1]}); a category is a string, a number or a boolean."
        )
    if known is not None:
        values = np.concatenate([np.asarray(known, dtype=object), values])
    try:
        return np.unique(values)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in values})
        raise ValueError(
            f"categorical column {key!r} mixes value types {kinds}; use one type."
        ) from None


class MixedNB(GenerativeClassifierBase):
    """Naive Bayes with one family per column (numbers, categories and counts in one table).

    Families: ``"gaussian"`` (per-class normal, as :class:`genprob.GaussianNB`),
    ``"categorical"`` (any values, strings included: encoded internally as codes of the sorted
    training categories), ``"bernoulli"`` (0/1), ``"multinomial"`` (the family's columns are the
    counts of one bag of words) and ``"poisson"`` (independent counts).

    Columns are named by DataFrame column name, or by integer position for arrays; every column
    of ``X`` must have a family.

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        families: mapping column -> family name, e.g. ``{"bill_length_mm": "gaussian",
            "island": "categorical"}``; None (the default) makes every column Gaussian.
        alpha: additive smoothing of the Bernoulli, categorical and multinomial blocks, and the
            pseudo-counts of the Poisson block.
        beta: pseudo-rows of the Poisson block.
        var_smoothing: Gaussian block's variance floor (fraction of its largest variance).

    Attributes:
        blocks_: family -> list of its columns (names or positions), in column order.
        categories_: categorical column -> array of its categories (code m is
            ``categories_[column][m]``).
        story_: the fitted :class:`~genprob.families.mixed.MixedStory`.
        params_: flat dict ``"<family>.<parameter>"`` plus ``class_prior``.
    """

    _prior_parameter = "class_prior"
    #: kinds of the fitted attributes its predictions read (checked when a model file loads)
    _fitted_kinds = {
        "_columns": list,
        "_block_positions": dict,
        "_fitted_on_frame": bool,
        "_context": dict,
        "blocks_": dict,
        "categories_": dict,
    }
    _parameter_constraints = {
        **GenerativeClassifierBase._parameter_constraints,
        # a mapping checked column by column when the table is read, naming the column
        "families": "no_validation",
        # an array alpha is refused when the story is made, with its own message
        "alpha": [Interval(Real, 0, None, closed="left"), "array-like"],
        "beta": [Interval(Real, 0, None, closed="left")],
        "var_smoothing": [Interval(Real, 0, None, closed="left")],
        "fit_prior": ["boolean"],
        "class_prior": ["array-like", None],
    }

    def __init__(
        self,
        families=None,
        *,
        alpha=1.0,
        beta=1.0,
        var_smoothing=1e-9,
        fit_prior=True,
        class_prior=None,
        unlabeled_weight=1.0,
        max_iter=100,
        em_tol=1e-12,
        n_init=1,
        random_state=None,
        dtype="float64",
        missing="error",
        unlabeled_label=-1,
    ):
        keep_parameters(self, locals())

    # -- columns -> blocks and codes -------------------------------------------------------------
    def _learn_columns(self, X):
        X = _as_table(X)
        keys = _column_keys(X)
        if not keys:
            raise ValueError(
                f"0 feature(s) (shape={np.shape(X)}) while a minimum of 1 is required by MixedNB."
            )
        families = self.families
        if families is None:
            families = dict.fromkeys(keys, DEFAULT_NAIVE_FAMILY)
        if not isinstance(families, Mapping) or not families:
            raise ValueError(
                f"families must be a non-empty mapping column -> family name, got {families!r}."
            )
        unknown = [key for key in families if key not in keys]
        if unknown:
            if _is_frame(X):
                raise ValueError(
                    f"families names columns that are not in X: {unknown}; X has columns {keys}."
                )
            raise ValueError(
                f"families names columns {unknown}, but X is an array with {len(keys)} columns: "
                f"use positions 0..{len(keys) - 1}, or pass a DataFrame to use column names."
            )
        unmapped = [key for key in keys if key not in families]
        if unmapped:
            raise ValueError(
                f"columns {unmapped} of X have no family; add them to families or drop them."
            )
        positions: dict[str, list[int]] = {}
        known = block_families()
        for position, key in enumerate(keys):
            family = families[key]
            if not isinstance(family, str) or family.lower() not in known:
                raise ValueError(
                    f"unknown family {family!r} for column {key!r}; known families: "
                    f"{', '.join(known)}."
                )
            positions.setdefault(family.lower(), []).append(position)
        # families that read raw values (categories) get them encoded as codes
        categories = {
            keys[position]: _categories_of(
                X, position, keys[position], skip_missing=self._marginalizes
            )
            for family, family_positions in positions.items()
            if family_named(family).block.encodes_values
            for position in family_positions
        }
        self._columns = keys
        self._fitted_on_frame = _is_frame(X)
        self._block_positions = positions
        self.blocks_ = {family: [keys[p] for p in ps] for family, ps in positions.items()}
        self.categories_ = categories

    def _in_fit_order(self, X):
        """``X`` with its columns in fit order (a DataFrame by name), checked against fit's."""
        X = _as_table(X)
        keys = _column_keys(X)
        if _is_frame(X) and self._fitted_on_frame:
            missing = [key for key in self._columns if key not in keys]
            if missing:
                raise ValueError(f"X lacks the columns {missing} seen in fit.")
            return X[self._columns]
        if len(keys) != len(self._columns):
            raise ValueError(
                f"X has {len(keys)} features, but MixedNB is expecting {len(self._columns)} "
                f"features as input."
            )
        return X

    def encode(self, X):
        """``X`` as the numbers the story sees: categorical columns as the codes of their
        categories (positions in ``categories_``), in fit order; a DataFrame stays one."""
        check_is_fitted(self, "categories_")
        return self._encode(X)

    def _encode(self, X):
        X = self._in_fit_order(X)
        keys = _column_keys(X) if _is_frame(X) else list(self._columns)
        encoded = np.empty((np.shape(X)[0], len(keys)), dtype=np.float64)
        family_of = {p: f for f, ps in self._block_positions.items() for p in ps}
        for position, key in enumerate(self._columns):
            values = _column(X, position, key)
            if key in self.categories_:
                known = self.categories_[key]
                values = values.astype(object)
                absent = pd.isna(values) if self._marginalizes else np.zeros(len(values), bool)
                codes = pd.Index(known).get_indexer(values).astype(np.float64)
                refused = (codes < 0) & ~absent
                if np.any(refused):
                    unseen = pd.unique(values[refused])[:5].tolist()
                    count = int(refused.sum())
                    raise ValueError(
                        f"categorical column {key!r} has values not seen in fit (or missing): "
                        f"{unseen} (first at row {int(np.argmax(refused))}, {count} "
                        f"row{'s' if count > 1 else ''} in all); known categories "
                        f"({len(known)} seen in fit): {_shown(known)}."
                    )
                encoded[:, position] = np.where(absent, np.nan, codes)  # NaN: summed out
            else:
                if np.iscomplexobj(values):
                    raise ValueError(
                        f"Complex data not supported: column {key!r} ({family_of[position]}) "
                        f"holds complex numbers."
                    )
                try:
                    encoded[:, position] = np.asarray(values, dtype=np.float64)
                except (TypeError, ValueError) as error:
                    date = next((v for v in values if isinstance(v, _DATE_TYPES)), None)
                    if date is not None:
                        _refuse_dates(key, date)
                    # a wrong type (TypeError) stays a TypeError, as in NumPy/scikit-learn
                    kind = TypeError if isinstance(error, TypeError) else ValueError
                    raise kind(
                        f"column {key!r} ({family_of[position]}) must be numeric ({error}); got "
                        f"values like {values[:3].tolist()}."
                    ) from None
        if _is_frame(X):
            return pd.DataFrame(encoded, columns=X.columns, index=X.index)
        return encoded

    # -- the estimator face ----------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None, **kwargs):
        """Fit every block in closed form, as :meth:`GenerativeClassifierBase.fit`; ``X`` is a
        DataFrame (columns by name) or a 2-D array (columns by position)."""
        if is_out_of_core(X):  # chunks, Parquet or Dask (genprob.engine.streaming)
            return super().fit(X, y, sample_weight=sample_weight, **kwargs)
        self._learn_columns(X)
        return super().fit(self._encode(X), y, sample_weight=sample_weight, **kwargs)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """:meth:`GenerativeClassifierBase.partial_fit`: the first call learns the columns;
        later chunks may bring new categories (their tables grow)."""
        if not hasattr(self, "stats_"):
            self._learn_columns(X)
            self._stats_categories = None
            return super().partial_fit(
                self._encode(X), y, classes=classes, sample_weight=sample_weight
            )
        saved = dict(self.categories_)
        self._stats_categories = saved
        try:
            ordered = self._in_fit_order(X)
            self.categories_ = {
                key: _categories_of(
                    ordered, self._columns.index(key), key, known, self._marginalizes
                )
                for key, known in saved.items()
            }
            return super().partial_fit(
                self._encode(X), y, classes=classes, sample_weight=sample_weight
            )
        except Exception:
            self.categories_ = saved
            raise

    def _extend_statistics(self, stats, story):
        """The blocks' statistics on the grown category lists (``grow_statistics``)."""
        if self._stats_categories is None:
            return stats
        moves = [None] * len(self._columns)
        for key, old in self._stats_categories.items():
            moves[self._columns.index(key)] = pd.Index(self.categories_[key]).get_indexer(old)
        return {**stats, "emission": grow_statistics(story, stats["emission"], moves)}

    def _check_X(self, X, **options):
        if not hasattr(self, "_columns"):
            check_is_fitted(self, "params_")
        return super()._check_X(self._encode(X), **options)

    def _chunk_context(self, X) -> dict:
        """Each block's fit-time context (the family's ``block_context`` hook)."""
        X = np.asarray(X)
        return {
            family: block_context(family, X[:, positions])
            for family, positions in self._block_positions.items()
        }

    def _partial_fit_story(self, X, previous):
        context = self._chunk_context(X)
        if previous is not None:
            context = add_contexts(self._context, context)
        return self._story_for_context(context, X.shape[1])

    def _story_for_context(self, context, num_features):
        self._context = context
        settings = {
            "alpha": check_alpha(self.alpha, per_feature=False),
            "beta": self.beta,
            "var_smoothing": self.var_smoothing,
        }
        blocks = []
        for family, positions in self._block_positions.items():
            # columns with encoded categories tell their count (only categorical ones have any)
            counts = [self.categories_.get(self._columns[p]) for p in positions]
            n_categories = None if any(c is None for c in counts) else tuple(map(len, counts))
            story = naive_block(
                family, {**settings, "n_categories": n_categories}, context.get(family)
            )
            blocks.append((family, story, tuple(positions)))
        return MixedStory(blocks)

    @property
    def _column_names(self):
        """The columns' names (keys of a DataFrame), None for an array's positions."""
        columns = getattr(self, "_columns", None)
        return columns if columns and all(isinstance(c, str) for c in columns) else None

    # class_count_ and class_log_prior_, as every naive Bayes estimator sets them
    _set_fitted_attributes = _DiscreteNB._set_fitted_attributes

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw ``(X, y)`` from the fitted model, categorical columns decoded to their values.

        Returns:
            ``X`` as a DataFrame when fit on one (else an array, of dtype object when some column
            is categorical) and labels ``y``.
        """
        X, y = super().sample(n_samples, random_state)
        columns = [
            self.categories_[key][X[:, p].astype(int)] if key in self.categories_ else X[:, p]
            for p, key in enumerate(self._columns)
        ]
        if self._fitted_on_frame:
            return pd.DataFrame(dict(zip(self._columns, columns, strict=True))), y
        if self.categories_:
            X = np.empty(X.shape, dtype=object)
            for position, values in enumerate(columns):
                X[:, position] = values
        return X, y
