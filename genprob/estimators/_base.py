"""The scikit-learn face shared by every genprob estimator: it validates input, encodes labels
as codes 0..K-1, builds the story from its hyperparameters and calls the engine in a precision
context; every prediction derives from the joint log-probability.
"""

from __future__ import annotations

import copy
import weakref

import numpy as np
import scipy.sparse
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from genprob import core
from genprob._lazy import LazyModule, is_jax_array
from genprob.engine import execution
from genprob.engine._arrays import encode_labels, is_integer_labels, placed, tree_map
from genprob.engine._dtype import numpy_dtype, precision, resolve_dtype
from genprob.engine._labels import (
    check_classes,
    check_known_labels,
    check_num_classes,
    check_partial_fit_classes,
    check_unlabeled_label,
    check_unlabeled_label_type,
    encode_partial_labels,
    unlabeled_mask,
)
from genprob.engine._limits import check_count
from genprob.engine._validation import (
    EM_PARAMETER_CONSTRAINTS,
    MISSING_PARAMETER_CONSTRAINTS,
    FeatureValueError,
    check_class_prior,
    check_rows,
    check_sample_weight,
    validate_params,
)
from genprob.engine._warnings import warn_user
from genprob.engine.capabilities import chunk_refusal, has_closed_form
from genprob.engine.em_driver import warn_max_iter
from genprob.engine.masking import has_missing, marginalized
from genprob.engine.streaming import ChunkStatistics, chunk_weights
from genprob.engine.streaming import fit as _fit_out_of_core
from genprob.engine.streaming import is_dask_collection as _is_dask
from genprob.engine.streaming import is_out_of_core as _out_of_core
from genprob.estimators._criteria import CriteriaMixin, fit_with_chosen_weight
from genprob.io.persistence import register_estimator
from genprob.story import Story, statistics_layout

_em = LazyModule("genprob.engine.em")
_missing = LazyModule("genprob.engine.missing")

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

__all__ = ["GenerativeClassifierBase", "keep_parameters"]

#: Fitted estimator -> (dtype, params_ with story_ and arrays by identity, prepared copies).
_DEVICE_PARAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def keep_parameters(estimator, parameters: dict) -> None:
    """An estimator's ``__init__`` arguments (its ``locals()``) as attributes, unchanged."""
    for name, value in parameters.items():
        if name != "self":
            setattr(estimator, name, value)


#: Attributes set only by a fit with unlabeled rows (removed by a later fully labeled fit).
_EM_ATTRIBUTES = (
    "n_iter_",
    "converged_",
    "log_likelihood_trace_",
    "label_distributions_",
    "transduction_",
)
#: State of incremental fitting (``partial_fit``), reset by ``fit``.
_PARTIAL_FIT_STATE = ("stats_", "_pending_reason", "_missing_fit")


def _dask_predict(estimator, method, X, /, *args, **kwargs):
    from genprob.engine.distributed import predict

    return predict(estimator, method, X, *args, **kwargs)


class GenerativeClassifierBase(CriteriaMixin, ClassifierMixin, BaseEstimator):
    """Base class: fit by closed form from one-hot responsibilities, predict by Bayes' rule.

    Subclasses implement :meth:`_make_story` or :meth:`_partial_fit_story`, and may override
    :meth:`_validate_X` and :meth:`_set_fitted_attributes`; the fitted attributes every
    estimator shares are listed in docs/reference/estimators.md.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_estimator(cls)  # loadable by qualified name (genprob.load)

    #: Keyword arguments for ``validate_data`` (:func:`~genprob.engine._validation.check_rows`)
    _validate_kwargs: dict = {}
    #: scikit-learn's constraints on the constructor parameters; subclasses add their own
    _parameter_constraints: dict = {**EM_PARAMETER_CONSTRAINTS, **MISSING_PARAMETER_CONSTRAINTS}
    #: The fixed class prior's parameter (None: the class prior is always estimated)
    _prior_parameter: str | None = "priors"
    #: Fewest classes a fit accepts: naive Bayes fits one class, as scikit-learn does
    _min_classes = 1
    _renormalize_priors = False  # a prior not summing to 1: renormalized with a warning, or refused

    # -- hooks -----------------------------------------------------------------------------------
    def _make_story(self, X) -> Story:
        if type(self)._partial_fit_story is GenerativeClassifierBase._partial_fit_story:
            raise NotImplementedError(f"{type(self).__name__} must define _make_story")
        return self._partial_fit_story(X, None)

    def _validate_X(self, X, *, fitting: bool):
        """The estimator's conversions of checked rows (binarizing, say)."""
        return X

    @property
    def _column_names(self):
        """The names of ``X``'s columns in messages (None: their positions)."""
        return getattr(self, "feature_names_in_", None)

    def _named(self, error):
        """A :class:`FeatureValueError` led by its column's name, when the columns have names."""
        names = self._column_names
        if not isinstance(error, FeatureValueError) or names is None or error.feature is None:
            return error
        return FeatureValueError(f"column {str(names[error.feature])!r}: {error}", error.feature)

    def _validate_story(self, story: Story, X):
        """``story.validate(X)``, the one family-specific check of the rows, naming the column."""
        try:
            story.validate(X)
        except FeatureValueError as error:
            raise self._named(error) from None
        return X

    def _class_prior_argument(self):
        """(class_prior, fit_prior) passed to the closed-form fit, the fixed prior checked."""
        name = self._prior_parameter
        prior = check_class_prior(
            getattr(self, name, None) if name else None,
            self.classes_,
            name=name,
            renormalize=self._renormalize_priors,
        )
        return prior, getattr(self, "fit_prior", True)

    def _check_parameters(self):
        validate_params(self)

    def _set_fitted_attributes(self, stats):
        """Set scikit-learn-named attributes from ``self.params_`` and the fit's statistics."""

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def _dtype(self) -> str:
        return resolve_dtype(getattr(self, "dtype", None))

    @property
    def _unlabeled_label(self):
        """The label of unlabeled rows (-1; None: every label is a class)."""
        return check_unlabeled_label(getattr(self, "unlabeled_label", -1))

    def _unlabeled_rows(self, y):
        """Mask of ``y``'s unlabeled rows; a marker of another type than ``y`` is refused."""
        check_unlabeled_label_type(y, self._unlabeled_label)
        return unlabeled_mask(y, self._unlabeled_label)

    def _as_array(self, X):
        """``X`` in the estimator's dtype: NumPy stays on the host (no copy when it has it)."""
        dtype = numpy_dtype(self._dtype)
        if is_jax_array(X):
            return X if X.dtype == dtype else X.astype(dtype)
        return np.asarray(X, dtype=dtype)

    def _as_features(self, X):
        """Features as the engine scores and fits them (sparse ones stay SciPy on the host)."""
        return self._as_array(X)

    def _params_jax(self):
        """:meth:`_prepared_params`, cached beside the estimator (predicting keeps its pickle)."""
        key = (self.params_, getattr(self, "story_", None), *self.params_.values())
        cached = _DEVICE_PARAMS.get(self)
        if cached is not None and cached[0] == self._dtype and len(cached[1]) == len(key):
            if all(a is b for a, b in zip(cached[1], key, strict=True)):
                return cached[2]
        value = self._prepared_params()
        _DEVICE_PARAMS[self] = (self._dtype, key, value)
        return value

    def _prepared_params(self):
        """The fitted parameters in the estimator's dtype, placed on the device."""
        dtype = numpy_dtype(self._dtype)
        return placed({k: np.asarray(v, dtype) for k, v in self.params_.items()})

    # -- missing entries (NaN with missing="marginalize"; genprob.engine.missing)
    @property
    def _marginalizes(self) -> bool:
        return getattr(self, "missing", "error") == "marginalize"

    def _rows(self, X, y="no_validation", *, reset: bool = False):
        """The one row check of every public entry, NaN let through when it marks missing."""
        return check_rows(
            self, X, y, reset=reset, allow_nan=self._marginalizes, **self._validate_kwargs
        )

    def _checked_features(self, X, *, fitting: bool):
        """:meth:`_validate_X` (and at predict the story's check) of the observed entries."""

        def checked(X):
            X = self._validate_X(X, fitting=fitting)
            return X if fitting else self._validate_story(self.story_, X)

        if not (self._marginalizes and has_missing(X)):
            return checked(X)
        if scipy.sparse.issparse(X):
            X = X.toarray()
        missing = np.isnan(X)
        X = np.array(checked(np.where(missing, 0, X).astype(X.dtype)))
        X = X.astype(np.result_type(X.dtype, np.float32))
        X[missing] = np.nan
        return X

    def _scoring_story(self, X) -> Story:
        """The fitted story, reading NaN entries as missing when there are some to read."""
        if self._marginalizes and has_missing(X):
            return marginalized(self.story_)
        return self.story_

    def _fit_missing(self, X, y, unlabeled, sample_weight, classes):
        """Observed-data maximum likelihood: EM over missing entries and unlabeled rows."""
        codes = self._encode_classes(y, unlabeled, classes)
        X = self._checked_features(X, fitting=True)
        story = self._make_story(np.where(np.isnan(X), 0, X))
        marginalized(story)  # refuses stories that cannot leave entries out, saying why
        if not has_closed_form(story):  # its marginalized likelihood maximized directly
            if unlabeled.any():
                raise ValueError(
                    f"{type(story).__name__} has no closed form, and fitting it on rows with both "
                    f"missing entries and missing labels is not supported: give every row a "
                    f"label, or drop the {int(unlabeled.sum())} unlabeled rows."
                )
            self._fit_labeled(marginalized(story), X, codes, sample_weight)  # validates X there
            self.story_ = story  # the user's story; scoring marginalizes whenever X has NaN
            self._missing_fit = True
            return self
        options = self._em_options()
        with precision(self._dtype):
            Xj = self._as_array(X)
            self._validate_story(marginalized(story), Xj)
            result = _missing.fit_observed(
                story,
                Xj,
                codes,
                **self._em_data_arguments(sample_weight),
                unlabeled_weight=float(options["unlabeled_weight"]),
                max_iter=options["max_iter"],
                tol=options["tol"],
                feature_names=getattr(self, "feature_names_in_", None),
                class_names=self.classes_,
            )
        self._missing_fit = True  # statistics of observed entries: partial_fit cannot add rows
        return self._keep_em(
            story,
            result,
            result.stats,
            options,
            iterated=result.n_iter > 1,
            labels=unlabeled.any() or classes is not None,
            what="EM over the missing entries",
        )

    def _check_X(self, X):
        """``X`` validated for a prediction (finite, unless NaN marks missing entries)."""
        if hasattr(self, "stats_") and not hasattr(self, "params_"):
            raise NotFittedError(
                f"{type(self).__name__} has statistics from partial_fit but no parameters yet: "
                f"{getattr(self, '_pending_reason', 'not enough data')}. Call partial_fit with "
                f"more data first."
            )
        check_is_fitted(self, "params_")
        return self._checked_features(self._rows(X), fitting=False)

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None, classes=None):
        """Fit the story's parameters by maximum likelihood: the closed form, or EM over the
        rows labeled ``unlabeled_label`` (docs/semi_supervised.md).

        Args:
            X: features (n_samples, n_features), or out of core (chunks, Parquet, Dask;
                :mod:`genprob.engine.streaming`).
            y: labels, any hashable values; ``unlabeled_label`` (-1) marks an unlabeled row.
            sample_weight: optional non-negative row weights (n_samples,); an integer weight
                is that many copies of the row.
            classes: every class label; needed when some class has no labeled row. Giving it
                always runs EM.

        Returns:
            self (Self): the fitted estimator itself, for chaining.
        """
        self._check_parameters()
        if getattr(self, "unlabeled_weight", None) == "auto":  # λ by cross-validation
            return fit_with_chosen_weight(self, X, y, sample_weight=sample_weight, classes=classes)
        if _is_dask(X):
            from genprob.engine import distributed

            return distributed.fit(self, X, y, sample_weight=sample_weight, classes=classes)
        if _out_of_core(X):
            return _fit_out_of_core(self, X, y, sample_weight=sample_weight, classes=classes)
        X, y = self._rows(X, y, reset=True)
        return self._fit_rows(X, y, sample_weight, classes)

    def _fit_rows(self, X, y, sample_weight, classes):
        sample_weight = check_sample_weight(
            sample_weight, X.shape[0], allow_all_zero=False, dtype=self._dtype
        )
        for name in _EM_ATTRIBUTES + _PARTIAL_FIT_STATE:
            self.__dict__.pop(name, None)
        unlabeled = self._unlabeled_rows(y)
        if self._marginalizes and has_missing(X):
            return self._fit_missing(X, y, unlabeled, sample_weight, classes)
        if classes is not None or unlabeled.any():
            return self._fit_partly_labeled(X, y, unlabeled, sample_weight, classes)
        codes = self._encode_classes(y, unlabeled, classes)
        X = self._validate_X(X, fitting=True)
        try:
            return self._fit_labeled(self._make_story(X), X, codes, sample_weight)
        except ValueError as error:
            if X.shape[0] != 1 or isinstance(error, np.linalg.LinAlgError):
                raise
            # one class of one row fits naive Bayes, but no story spread; say why
            raise ValueError(f"{error} (X has 1 sample.)") from error

    def _labeled_statistics(self, story, X, codes, sample_weight):
        """Statistics of labeled rows (codes 0..K-1), ``X`` checked against the story."""
        Xj = self._as_features(X)
        self._validate_story(story, Xj)
        return execution.labeled_statistics(story, Xj, codes, len(self.classes_), sample_weight)

    def _fit_labeled(self, story, X, codes, sample_weight):
        """Fit on fully labeled rows (codes 0..K-1, ``classes_`` set): the closed form."""
        class_prior, fit_prior = self._class_prior_argument()
        with precision(self._dtype):
            stats = self._labeled_statistics(story, X, codes, sample_weight)
            params = execution.parameters(story, stats, class_prior, fit_prior)
        self.story_ = story
        return self.fit_statistics(stats, params=params)

    # -- incremental fitting ---------------------------------------------------------------------
    def _partial_fit_story(self, X, previous):
        """The story after a new chunk ``X`` (``previous``: the story so far, or None)."""
        return self._make_story(X)

    def _chunk_context(self, X) -> dict:
        """Additive context of a chunk that the story is built from (document lengths, say)."""
        return {}

    def _story_for_context(self, context: dict, num_features: int):
        """The story for the summed :meth:`_chunk_context` of every chunk."""
        return self.story_

    def _extend_statistics(self, stats, story):
        """The running statistics in the layout of the grown ``story`` (padding, say)."""
        return stats

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add a chunk of labeled rows to ``stats_`` and re-derive the closed form: any sequence
        of chunks gives :meth:`fit`'s parameters (docs/scaling.md).

        Args:
            X: features of the chunk (n_chunk, n_features).
            y: labels of the chunk, each one of ``classes`` (no unlabeled rows: use :meth:`fit`
                for EM).
            classes: every class label; required on the first call (scikit-learn's
                convention), optional afterwards (then it must be the same).
            sample_weight: optional non-negative weights of the chunk's rows.

        Returns:
            self (Self): the fitted estimator itself, for chaining.

        Raises:
            ValueError: missing ``classes`` on the first call, labels outside ``classes``,
                unlabeled rows, another number of features, or statistics that do not add up.
        """
        self._check_parameters()
        first = not hasattr(self, "stats_")
        if first:
            if classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit: every class label, "
                    "e.g. classes=np.unique(y_all)."
                )
            new_classes = check_partial_fit_classes(classes, None, self._unlabeled_label)
            check_num_classes(new_classes, self._min_classes)
        elif classes is not None:
            check_partial_fit_classes(classes, self.classes_, self._unlabeled_label)
        X, y = self._rows(X, y, reset=first)
        if has_missing(X) or getattr(self, "_missing_fit", False):
            raise ValueError(
                "partial_fit does not take missing entries (NaN) yet, nor continue a fit that "
                "had some: its running statistics count whole rows. Use fit(), which "
                "marginalizes them."
            )
        if first:
            for name in _EM_ATTRIBUTES:
                self.__dict__.pop(name, None)
            self.classes_ = new_classes
        unlabeled = self._unlabeled_rows(y)
        if unlabeled.any():
            raise ValueError(
                f"y contains {int(unlabeled.sum())} unlabeled rows ({self._unlabeled_label!r}): "
                f"partial_fit adds "
                f"labeled statistics only; fit partly labeled data with fit(X, y) (EM)."
            )
        check_classification_targets(y)
        check_known_labels(y, self.classes_)
        codes = np.searchsorted(self.classes_, y)
        sample_weight = check_sample_weight(sample_weight, X.shape[0], dtype=self._dtype)
        self._class_prior_argument()  # a bad fixed prior is refused before any work
        X = self._validate_X(X, fitting=True)
        previous = None if first else self.story_
        story = self._partial_fit_story(X, previous)
        if reason := chunk_refusal(story):
            raise ValueError(
                f"partial_fit is not available: {reason}, and partial_fit needs statistics "
                f"that add up over chunks. Use fit() on all the data."
            )
        with precision(self._dtype):
            stats = self._labeled_statistics(story, X, codes, sample_weight)
            if not first:
                before = tree_map(self._as_array, self.stats_)
                before = self._extend_statistics(before, story)
                if statistics_layout(before) != statistics_layout(stats):
                    raise ValueError(
                        "the hyperparameters changed between partial_fit calls in a way that "
                        "changes the statistics kept; call fit() to start afresh."
                    )
                stats = execution.combine_statistics(story, before, stats)
            stats = tree_map(np.asarray, stats)
        self.stats_ = stats  # before the attributes: a class without rows yet then waits
        self.story_ = story
        self.__dict__.pop("_pending_reason", None)
        try:
            self.fit_statistics(stats)
        except ValueError as error:
            # not enough data yet (a class without rows): no parameters until a later chunk
            self.__dict__.pop("params_", None)
            self.story_ = story
            self._pending_reason = str(error)
            warn_user(
                f"partial_fit kept the chunk, but the parameters are not estimable yet: {error}",
                UserWarning,
            )
        return self

    # -- fits over chunks (genprob.engine.streaming, genprob.engine.distributed)
    def chunk_statistics(self, X, y, sample_weight=None, *, e_step: bool = False):
        """Sufficient statistics of a chunk ``(X, y, sample_weight)`` under the fitted story,
        unlabeled rows by their posteriors with ``e_step`` (docs/scaling.md); the estimator is
        not changed. Returns a :class:`genprob.engine.streaming.ChunkStatistics`, or (without
        ``e_step``) None when the chunk does not fit ``story_`` (an unknown category, say)."""
        num_rows = np.shape(X)[0]
        if num_rows == 0:
            return ChunkStatistics(self.story_, self._dtype, None)
        probe = copy.copy(self)  # growing the story below must leave this estimator as it is
        if e_step:
            Xv = probe._check_X(X)
        else:
            # marked fitted: the prediction-time checks prepare the features as they are scored
            probe.params_ = self.__dict__.get("params_", {})
            try:
                Xv = probe._check_X(X)
                grown = probe._partial_fit_story(Xv, self.story_)
            except ValueError:
                return None
            # the same structure: statistics of the same layout (traced settings aside)
            if jax.tree_util.tree_structure(grown) != jax.tree_util.tree_structure(self.story_):
                return None
        if has_missing(Xv):  # as in partial_fit: the statistics count whole rows
            raise ValueError(
                "a fit over chunks does not take missing entries (NaN) yet: its statistics count "
                "whole rows. Use fit() on the rows in memory, which marginalizes them."
            )
        codes = self._row_codes(y, num_rows)
        weights = chunk_weights(sample_weight, num_rows)
        weights = np.ones(num_rows) if weights is None else weights
        unlabeled = int(np.sum(codes < 0))
        with precision(self._dtype):
            if e_step:
                row_weights = _em._row_weights(codes, float(self.unlabeled_weight), weights, xp=np)
                # sparse rows as the estimator scores them in compiled code (BCOO)
                stats, objective = execution.em_statistics(
                    self.story_, self._params_jax(), self._as_array(Xv), codes, row_weights
                )
                objective, context = float(objective), {}
            else:
                stats = execution.labeled_statistics(
                    self.story_, self._as_features(Xv), codes, len(self.classes_), weights
                )
                objective, context = 0.0, probe._chunk_context(Xv)
            stats = tree_map(np.asarray, stats)
        return ChunkStatistics(
            self.story_, self._dtype, stats, objective, num_rows, unlabeled, context
        )

    def parameters_from_statistics(self, stats) -> dict:
        """The closed-form parameters of ``stats`` under ``story_`` and the estimator's class
        prior settings: the M-step of EM over chunks. The estimator is not changed."""
        class_prior, fit_prior = self._class_prior_argument()
        with precision(self._dtype):
            stats = tree_map(self._as_array, stats)
            params = execution.parameters(self.story_, stats, class_prior, fit_prior)
            return {k: np.asarray(v) for k, v in params.items()}

    def fit_statistics(self, stats, *, params=None, context=None):
        """Finish a fit from statistics added over chunks (docs/scaling.md); returns self.

        Args:
            stats: ``{"class_counts": ..., "emission": ...}`` in the layout of ``stats_`` (None:
                a story without closed form, whose parameters ``params`` gives).
            params: the parameters to keep (EM's), or None for the closed form of ``stats``.
            context: the chunks' added contexts, which the story is rebuilt from.

        Raises:
            ValueError: the statistics do not determine the parameters, naming why.
        """
        if context:
            self.story_ = self._story_for_context(context, self.n_features_in_)
        stats = tree_map(np.asarray, stats)
        if params is None:
            params = self.parameters_from_statistics(stats)
        self.params_ = {k: np.asarray(v) for k, v in params.items()}
        self._set_fitted_attributes(stats)
        try:
            self.story_.check_parameters(
                self.params_,
                class_names=self.classes_,
                feature_names=getattr(self, "feature_names_in_", None),
            )
        except ValueError:  # a failed fit leaves no parameters behind
            self.__dict__.pop("params_", None)
            self.__dict__.pop("story_", None)
            raise
        if stats is not None:  # None: a story without closed form (EM's)
            self.stats_ = stats
        return self

    # -- missing labels (EM) ---------------------------------------------------------------------
    def _em_options(self) -> dict:
        """EM controls, read from the estimator's parameters (the defaults when it has none)."""
        return {
            "unlabeled_weight": getattr(self, "unlabeled_weight", 1.0),
            "max_iter": getattr(self, "max_iter", 100),
            "tol": getattr(self, "em_tol", 1e-12),
            "n_init": getattr(self, "n_init", 1),
            "seed": int(check_random_state(getattr(self, "random_state", None)).randint(2**31 - 1)),
        }

    def _em_data_arguments(self, sample_weight) -> dict:
        """Classes, class prior and row weights of an EM fit (``classes_`` set)."""
        class_prior, fit_prior = self._class_prior_argument()
        return {
            "num_classes": len(self.classes_),
            "class_prior": class_prior,
            "fit_prior": fit_prior,
            "sample_weight": sample_weight,
        }

    def _label_codes(self, y):
        """Codes 0..K-1 of labels in ``classes_`` and -1 on unlabeled rows; unknown labels raise.
        Numeric labels are coded vectorized (a million in milliseconds)."""
        classes = self.classes_
        if y.dtype.kind in "iuf" and classes.dtype.kind in "iuf":
            unlabeled = self._unlabeled_rows(y)
            codes = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
            if np.all((classes[codes] == y) | unlabeled):
                return np.where(unlabeled, -1, codes).astype(np.int32)
        return encode_partial_labels(  # else it names the unknown labels
            y, classes=self.classes_, unlabeled_label=self._unlabeled_label
        )[0]

    def _row_codes(self, y, num_rows):
        """:meth:`_label_codes` of the labels ``y`` of ``num_rows`` checked rows."""
        y = np.asarray(y)
        if y.shape != (num_rows,):
            raise ValueError(f"y has shape {y.shape}; expected ({num_rows},) to match X.")
        return self._label_codes(y)

    def _encode_classes(self, y, unlabeled, classes):
        """Set ``classes_`` (the labeled rows', or ``classes``); the codes of ``y`` (-1: none)."""
        if classes is None and not unlabeled.any():
            if not is_integer_labels(y):
                check_classification_targets(y)
            self.classes_, codes = encode_labels(y)
            check_num_classes(self.classes_, self._min_classes)
            return codes
        self._set_classes(y, unlabeled, classes)
        return self._label_codes(y)

    def _set_classes(self, y, unlabeled, classes):
        """``classes_`` of partly labeled ``y``: the labeled rows', or ``classes``."""
        labeled_y = y[~unlabeled]
        if labeled_y.size:
            check_classification_targets(labeled_y)
        if classes is None:
            if labeled_y.size == 0:
                raise ValueError(
                    f"every row is unlabeled (y = {self._unlabeled_label!r}) and the classes are "
                    f"unknown: pass classes=[...] to fit so that the classes are known."
                )
            self.classes_, _ = encode_labels(labeled_y)
        else:
            self.classes_ = check_classes(classes, self._unlabeled_label)
        if len(self.classes_) < 2:
            marker = self._unlabeled_label
            raise ValueError(
                f"need at least 2 classes; the labeled rows (y != {marker!r}) hold only "
                f"{self.classes_.tolist()}. {marker!r} marks unlabeled rows (unlabeled_label, "
                f"scikit-learn's semi-supervised convention by default); if {marker!r} is a real "
                f"class, pass unlabeled_label=None, or pass classes= to name the classes of the "
                f"unlabeled rows."
            )

    def _fit_partly_labeled(self, X, y, unlabeled, sample_weight, classes):
        """Fit with unlabeled rows by λ-weighted EM (:func:`genprob.fit_em`)."""
        self._set_classes(y, unlabeled, classes)
        X = self._validate_X(X, fitting=True)
        story = self._make_story(X)
        options = self._em_options()
        with precision(self._dtype):
            Xj = self._as_array(X)
            self._validate_story(story, Xj)
            # the labels themselves, encoded there once, so that EM's messages name the classes
            labels = {"classes": self.classes_, "unlabeled_label": self._unlabeled_label}
            arguments = {**labels, **self._em_data_arguments(sample_weight), **options}
            result = _em.fit_em(story, Xj, y, **arguments)
            stats = None  # a story without closed form has no statistics
            if has_closed_form(story):
                # on the host, and the statistics on padded rows: no program compiled per row count
                weights = _em._row_weights(
                    np.where(unlabeled, -1, 0),
                    float(options["unlabeled_weight"]),
                    sample_weight,
                    xp=np,
                )
                R = np.asarray(result.responsibilities) * weights[:, None]
                stats = execution.statistics(story, Xj, R.astype(Xj.dtype), pad=True)
        return self._keep_em(story, result, stats, options, iterated=True, labels=True)

    def _keep_em(self, story, result, stats, options, *, iterated, labels, what="EM"):
        """An EM fit's attributes, then :meth:`fit_statistics`; a warning if it hit max_iter."""
        self.story_ = story
        if iterated:
            self.n_iter_ = result.n_iter
            self.converged_ = result.converged
            self.log_likelihood_trace_ = np.asarray(result.log_likelihood)
        if labels:
            self.label_distributions_ = np.asarray(result.responsibilities)
            self.transduction_ = self.classes_[np.argmax(self.label_distributions_, axis=1)]
        self.fit_statistics(stats, params=result.params)
        if not result.converged and result.n_iter >= options["max_iter"]:  # else EM said why
            warn_max_iter(options["max_iter"], options["tol"], what)
        return self

    def log_likelihood(self, X, y=None, pointwise: bool = False):
        """Log-likelihood of ``X`` with partly known labels ``y``: labeled rows
        ``log pi_y + log p(x | y)``, unlabeled ones ``log sum_k pi_k p(x | k)``.

        Args:
            X: features (n, D).
            y: labels in ``classes_`` or -1; None for all unlabeled.
            pointwise: return the per-row values (n,) instead of their sum.

        Returns:
            A float, or an array (n,) when ``pointwise``.
        """
        if _is_dask(X):
            return _dask_predict(self, "log_likelihood", X, y, pointwise=pointwise)
        X = self._check_X(X)
        if y is None:
            codes = np.full(X.shape[0], -1, dtype=np.int32)
        else:
            codes = self._row_codes(y, X.shape[0])
        values = execution.rows_log_likelihood(self._joint_log_proba(X), codes)
        return values if pointwise else float(values.sum())

    # -- posterior (Bayesian counterpart of the fit) ---------------------------------------------
    def posterior(
        self,
        X,
        y,
        method="nuts",
        num_samples=1000,
        num_warmup=1000,
        num_chains=2,
        random_state=None,
        progress_bar=False,
        prior=None,
        init="mle",
        priors="data",
        sampler="numpyro",
        predictive_draws=None,
        **nuts_settings,
    ):
        """Posterior of the story's parameters as an ArviZ result, the MLE alongside
        (docs/howto/posterior.md). An unfitted estimator is first fitted on ``(X, y)``.

        Args:
            X: features (n_samples, n_features) the posterior conditions on.
            y: labels in ``classes_``; -1 marks an unlabeled row (its class is summed out).
            method: ``"nuts"`` (any story, unlabeled rows allowed) or ``"exact"`` (conjugate
                stories on fully labeled data: independent draws from the closed form).
            num_samples: draws per chain.
            num_warmup: NUTS warm-up iterations per chain (unused by ``"exact"``).
            num_chains: chains (run vectorized, in lockstep, when more than one).
            random_state: seed, ``numpy.random.RandomState`` or None.
            progress_bar: show NumPyro's progress bar.
            prior: optional dict of story settings overriding the prior, e.g.
                ``{"class_concentration": 2.0}`` or ``{"mean_prior_scale": 5.0}``.
            init: where NUTS chains start: ``"mle"`` (a small jitter around ``params_``),
                ``"uniform"`` (random points) or a dict of parameter values.
            priors: ``"data"`` (weakly informative scales from each feature's location and
                spread, :meth:`Story.scaled_to_data`) or ``"fixed"`` (the story's own).
            sampler: ``"numpyro"`` (default) or ``"blackjax"`` (``pip install
                'genprob[blackjax]'``).
            predictive_draws: posterior draws replicated for ``posterior_predictive`` and draws
                of ``prior``; None: 500 (fewer on large data sets); 0 leaves both groups out.
            **nuts_settings: NUTS settings (:data:`genprob.inference.mcmc.KERNEL_SETTINGS`:
                ``dense_mass``, ``target_accept_prob``, ``max_tree_depth`` ...); an unknown name
                is a ``TypeError``, a value out of range a ``ValueError``, before any work.

        Returns:
            ``arviz.InferenceData`` (ArviZ 0.x) or ``xarray.DataTree`` (ArviZ 1.x) with the
            groups ``posterior``, ``posterior_predictive``, ``log_likelihood``,
            ``sample_stats``, ``observed_data``, ``prior`` and ``mle``; failed convergence
            checks after NUTS warn (:class:`genprob.inference.mcmc.SamplingWarning`).
        """
        from genprob.estimators._posterior import estimator_posterior

        return estimator_posterior(
            self,
            X,
            y,
            method=method,
            num_samples=num_samples,
            num_warmup=num_warmup,
            num_chains=num_chains,
            random_state=random_state,
            progress_bar=progress_bar,
            prior=prior,
            init=init,
            priors=priors,
            sampler=sampler,
            predictive_draws=predictive_draws,
            **nuts_settings,
        )

    # -- prediction (all from the joint log-probability) -----------------------------------------
    def predict_joint_log_proba(self, X):
        """Joint log-probabilities ``log p(x, y = k) = log pi_k + log p(x | k)``, (n, K)."""
        if _is_dask(X):
            return _dask_predict(self, "predict_joint_log_proba", X)
        return self._joint_log_proba(self._check_X(X))

    def _joint_log_proba(self, X):
        """:meth:`predict_joint_log_proba` of checked rows."""
        with precision(self._dtype):
            story, params = self._scoring_story(X), self._params_jax()
            return np.asarray(execution.joint_log_prob(story, params, self._as_features(X)))

    def predict_log_proba(self, X, method="plugin", prior=None):
        """Log class posteriors ``log p(y = k | x)`` (n, K), computed with a log-sum-exp; see
        :meth:`predict_proba` for ``method`` and ``prior``."""
        if _is_dask(X):
            return _dask_predict(self, "predict_log_proba", X, method=method, prior=prior)
        return self._posteriors(X, "log", method, prior)

    def predict_proba(self, X, method="plugin", prior=None):
        """Class posteriors ``p(y = k | x)`` (n, K); rows sum to one.

        Args:
            X: features (n, D).
            method: ``"plugin"`` (default, scikit-learn's): Bayes' rule at the fitted
                parameters. ``"predictive"``: ``p(y = k | x, data)``, the parameters integrated
                out under the story's conjugate prior (docs/bayes.md). ``"debiased"``: MASS's
                debiased rule (LDA only).
            prior: for ``"predictive"``, a dict of story settings overriding the prior, as in
                :meth:`posterior`.

        Raises:
            ValueError: an unknown method, a story without a conjugate prior, or a fit with
                unlabeled rows or missing entries (no closed-form posterior).
        """
        if _is_dask(X):
            return _dask_predict(self, "predict_proba", X, method=method, prior=prior)
        return self._posteriors(X, "proba", method, prior)

    def predict(self, X, method="plugin", prior=None):
        """Most probable class of each row (Bayes' rule; ``method`` and ``prior`` as in
        :meth:`predict_proba`); lazy on a Dask collection."""
        if _is_dask(X):
            return _dask_predict(self, "predict", X, method=method, prior=prior)
        values = self._posteriors(X, "scores", method, prior)  # first: unfitted is NotFitted
        return self.classes_[np.argmax(values, axis=1)]

    def _posteriors(self, X, kind, method="plugin", prior=None):
        """Class scores, log posteriors or posteriors (``kind``: "scores", "log", "proba")."""
        if method != "plugin" or prior is not None:
            from genprob.estimators._posterior import predictive_log_joint

            scores = predictive_log_joint(self, X, method, prior)
            log_proba = scores - logsumexp(scores, axis=1, keepdims=True)
            return {"scores": scores, "log": log_proba, "proba": np.exp(log_proba)}[kind]
        X = self._check_X(X)
        with precision(self._dtype):
            story, params = self._scoring_story(X), self._params_jax()
            return execution.class_posteriors(story, params, self._as_features(X), kind)

    # -- the generative direction ----------------------------------------------------------------
    def sample(self, n_samples: int = 1, random_state=None):
        """Draw ``(X, y)`` from the fitted two-step generative process.

        Args:
            n_samples: number of draws.
            random_state: seed, ``numpy.random.RandomState`` or None.

        Returns:
            ``X`` (n_samples, n_features) and labels ``y`` (n_samples,) in ``classes_``.
        """
        check_is_fitted(self, "params_")
        n_samples = check_count(n_samples, "n_samples")
        key = jax.random.PRNGKey(check_random_state(random_state).randint(0, 2**31 - 1))
        with precision(self._dtype):
            X, codes = core.sample(self.story_, self._params_jax(), n_samples, key)
            return np.asarray(X), self.classes_[np.asarray(codes)]

    def num_parameters(self) -> int:
        """Number of free parameters of the fitted story (class prior included)."""
        check_is_fitted(self, "params_")
        return self.story_.num_parameters(len(self.classes_), self.n_features_in_)

    # -- persistence -----------------------------------------------------------------------------
    def save(self, path):
        """Write the fitted estimator to ``path`` (``.npz``, no pickle); returns the path
        written (:mod:`genprob.io.persistence`)."""
        from genprob.io.persistence import save

        return save(self, path)

    # -- optimizer cross-check -------------------------------------------------------------------
    def crosscheck(self, X, y, **kwargs):
        """Check the fit against numerical maximization (:func:`genprob.crosscheck`): a closed
        form against L-BFGS, an optimizer fit against a restart. An unfitted estimator is first
        fitted on a clone (this one stays unfitted).

        Args:
            X: features (n_samples, n_features).
            y: labels in ``classes_`` (every row labeled).
            **kwargs: passed to :func:`genprob.crosscheck` (``sample_weight``, ``seed``,
                ``max_iter``, ``data_name``...).

        Returns:
            A :class:`genprob.inference.crosscheck.CrosscheckResult`.
        """
        from sklearn.base import clone

        from genprob.inference.crosscheck import crosscheck

        if hasattr(self, "params_"):
            fitted = self
        else:
            fitted = clone(self).fit(X, y, sample_weight=kwargs.get("sample_weight"))
        X = fitted._check_X(X)
        codes = fitted._row_codes(y, X.shape[0])
        if np.any(codes < 0):
            raise ValueError(
                f"crosscheck compares supervised fits: y must not contain "
                f"{fitted._unlabeled_label!r} (unlabeled_label)."
            )
        absent = fitted.classes_[np.bincount(codes, minlength=len(fitted.classes_)) == 0]
        if absent.size:
            raise ValueError(
                f"crosscheck fits the story on (X, y) both ways, but y has no rows of class(es) "
                f"{', '.join(map(str, absent.tolist()))} of the fitted classes_: their parameters "
                f"are not estimable. Pass data holding every class, or an unfitted estimator."
            )
        class_prior, fit_prior = fitted._class_prior_argument()
        kwargs.setdefault("label", type(self).__name__)
        if not has_closed_form(fitted.story_):  # check the fit made, against a restart
            kwargs.setdefault("params", fitted.params_)
        return crosscheck(
            fitted.story_,
            X,
            codes,
            num_classes=len(fitted.classes_),
            class_prior=class_prior,
            fit_prior=fit_prior,
            dtype=fitted._dtype,
            **kwargs,
        )
