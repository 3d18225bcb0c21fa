"""Discrete naive Bayes estimators: BernoulliNB, MultinomialNB, CategoricalNB, PoissonNB.

Sparse input stays sparse (``BCOO``); the deliberate differences from scikit-learn are listed in
docs/reference/estimators.md.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse
from sklearn.utils._param_validation import Interval

from genprob._lazy import LazyModule
from genprob.engine._arrays import without_duplicates
from genprob.engine._dtype import numpy_dtype
from genprob.engine._validation import FeatureValueError, check_alpha
from genprob.estimators._base import GenerativeClassifierBase, keep_parameters
from genprob.families._discrete import check_non_negative_values, check_values, stored_values
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory, check_table_size
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory

jnp = LazyModule("jax.numpy")
jsparse = LazyModule("jax.experimental.sparse")

__all__ = ["BernoulliNB", "MultinomialNB", "CategoricalNB", "PoissonNB"]


def to_bcoo(X, dtype) -> jsparse.BCOO:
    """A SciPy sparse matrix as a BCOO matrix with canonical (sorted, unique) indices."""
    X = scipy.sparse.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    rows = np.repeat(np.arange(X.shape[0], dtype=np.int32), np.diff(X.indptr))
    indices = np.stack([rows, X.indices.astype(np.int32)], axis=1)
    return jsparse.BCOO(
        (jnp.asarray(X.data, dtype=dtype), jnp.asarray(indices)),
        shape=X.shape,
        indices_sorted=True,
        unique_indices=True,
    )


def _total(X) -> float:
    """Sum of all entries (a sparse matrix's stored values: SciPy's ``sum`` is a product)."""
    return float(X.data.sum() if scipy.sparse.issparse(X) else X.sum())


class _DiscreteNB(GenerativeClassifierBase):
    """Shared face: additive smoothing, class prior options, sparse input, class attributes."""

    _accepts_sparse = False
    _alpha_per_feature = True
    _prior_parameter = "class_prior"
    _parameter_constraints = {
        **GenerativeClassifierBase._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left"), "array-like"],
        "force_alpha": ["boolean"],
        "fit_prior": ["boolean"],
        "class_prior": ["array-like", None],
    }

    def _validate_story(self, story, X):
        try:
            return super()._validate_story(story, X)
        except ValueError as error:
            raise self._in_sklearn_words(error, X) from None

    def _in_sklearn_words(self, error, X):
        """``error`` led by scikit-learn's "Negative values in data passed to ..." if X has any."""
        if not self._input_tags.get("positive_only") or not (stored_values(X) < 0).any():
            return error
        message = f"Negative values in data passed to {type(self).__name__} (input X). {error}"
        return FeatureValueError(message, getattr(error, "feature", None))

    def _check_before_story(self, X, *checks):
        """Checks of the values a story is made from (before it can check them itself)."""
        try:
            for check in checks:
                check(X)
        except ValueError as error:
            raise self._in_sklearn_words(self._named(error), X) from None
        return X

    #: scikit-learn input tags of the family's support (non-negative, integer codes)
    _input_tags: dict = {}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._accepts_sparse
        for name, value in self._input_tags.items():
            setattr(tags.input_tags, name, value)
        tags.classifier_tags.poor_score = True
        return tags

    @property
    def _validate_kwargs(self):
        return {"accept_sparse": "csr"} if self._accepts_sparse else {}

    def _as_array(self, X):
        if scipy.sparse.issparse(X):
            return to_bcoo(X, numpy_dtype(self._dtype))
        return super()._as_array(X)

    def _as_features(self, X):
        # SciPy products on the host beat JAX's sparse ones on CPU; the story takes the matrix
        if scipy.sparse.issparse(X):  # CSR in the dtype, no copy when it is one already
            return scipy.sparse.csr_matrix(X, dtype=numpy_dtype(self._dtype), copy=False)
        return super()._as_features(X)

    def _checked_alpha(self, num_features: int):
        """``alpha`` as a float or a per-feature tuple, with scikit-learn's checks and floor."""
        return check_alpha(
            self.alpha,
            num_features,
            force_alpha=self.force_alpha,
            per_feature=self._alpha_per_feature,
        )

    def _set_fitted_attributes(self, stats):
        self.class_count_ = stats["class_counts"]
        with np.errstate(divide="ignore"):
            self.class_log_prior_ = np.log(self.params_["class_prior"])
        if "feature_counts" in stats["emission"]:  # Bernoulli and multinomial
            self.feature_count_ = stats["emission"]["feature_counts"]
            with np.errstate(divide="ignore"):  # alpha = 0 may leave zero probabilities
                self.feature_log_prob_ = np.log(self.params_["probs"])


class BernoulliNB(_DiscreteNB):
    """Naive Bayes for binary features (multivariate Bernoulli), scikit-learn compatible.

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        alpha: additive smoothing, a number or one per feature: ``(count + alpha) / (N_k +
            2 alpha)``, the MAP under a Beta(alpha + 1, alpha + 1) prior (alpha = 1: Laplace).
        binarize: threshold (values ``> t`` become 1, the rest 0, as in scikit-learn), or None
            when the input is already binary (then anything but 0/1 raises ``ValueError``).

    Attributes:
        feature_count_: (weighted) number of rows with feature j on, per class (K, D).
        feature_log_prob_: ``log P(x_j = 1 | y = k)`` (K, D).
        params_: the story's parameters (``probs``, ``class_prior``).
    """

    _accepts_sparse = True

    _parameter_constraints = {
        **_DiscreteNB._parameter_constraints,
        "binarize": [None, Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        force_alpha=True,
        binarize=0.0,
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

    def _validate_X(self, X, *, fitting):
        if scipy.sparse.issparse(X):
            X = without_duplicates(X)  # a value stored twice is binary only once summed
        if self.binarize is None:
            return X  # the story refuses values other than 0 and 1
        threshold = float(self.binarize)
        if scipy.sparse.issparse(X):  # CSR, as the row check gives it
            # new values on the caller's indices (never changed in place); stored zeros stay
            binary = (X.data > threshold).astype(X.dtype)
            return type(X)((binary, X.indices, X.indptr), shape=X.shape, copy=False)
        return (X > threshold).astype(X.dtype)

    def _make_story(self, X):
        return BernoulliStory(alpha=self._checked_alpha(X.shape[1]))

    def _validate_story(self, story, X):
        if self.binarize is not None and type(story) is BernoulliStory:
            return X  # binarized rows: no pass over the values
        return super()._validate_story(story, X)


class MultinomialNB(_DiscreteNB):
    """Naive Bayes for counts (multinomial bag of words), scikit-learn compatible; its
    :meth:`predict_joint_log_proba` includes the multinomial coefficient (a real log density).

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        alpha: additive smoothing, a number or one per feature: ``(c_kj + alpha) /
            sum_j (c_kj + alpha)``, the MAP under Dirichlet(alpha + 1) (alpha = 1: Laplace).

    Attributes:
        feature_count_: (weighted) total count of feature j per class (K, D).
        feature_log_prob_: ``log P(word j | y = k)`` (K, D).
        params_: the story's parameters (``probs``, ``class_prior``).
    """

    _accepts_sparse = True
    _input_tags = {"positive_only": True}
    # its own count check is the story's, in scikit-learn's words

    def __init__(
        self,
        *,
        alpha=1.0,
        force_alpha=True,
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

    def _validate_X(self, X, *, fitting):
        # before the story, which is made from the counts' total
        return self._check_before_story(
            X, lambda X: check_non_negative_values(X, "non-negative counts")
        )

    def _validate_story(self, story, X):
        if type(story) is MultinomialStory:
            return X  # its check is _validate_X's
        return super()._validate_story(story, X)

    def _partial_fit_story(self, X, previous):
        rows, length = X.shape[0], _total(X)
        if previous is not None:
            rows, length = self._rows_seen + rows, self._length_seen + length
        return self._story_for_context({"rows": rows, "length": length}, X.shape[1])

    def _chunk_context(self, X):
        return {"rows": int(X.shape[0]), "length": _total(X)}

    def _story_for_context(self, context, num_features):
        self._rows_seen, self._length_seen = context["rows"], context["length"]
        # Sampled documents get the mean training length; the density conditions on each row's.
        mean_length = self._length_seen / max(self._rows_seen, 1)
        return MultinomialStory(
            alpha=self._checked_alpha(num_features), total_count=int(round(mean_length))
        )


class CategoricalNB(_DiscreteNB):
    """Naive Bayes for categorical features (integer codes), scikit-learn compatible.

    Feature j takes codes ``0 .. k_j - 1`` (e.g. from ``OrdinalEncoder``), with
    ``k_j = max(max_i x_ij + 1, min_categories_j)``; a code ``>= n_categories_[j]`` at
    prediction raises ``ValueError``.

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        alpha: additive smoothing (one number): ``(c_kjm + alpha) / (N_k + alpha k_j)``.
        min_categories: None, an int, or one int per feature: the least number of categories.

    Attributes:
        category_count_: list over features of (K, k_j) (weighted) counts.
        feature_log_prob_: list over features of (K, k_j) log probabilities.
        n_categories_: ``k_j`` per feature (int64).
        params_: the story's parameters (``probs`` as a padded (K, D, max k_j) table,
            ``class_prior``).
    """

    _alpha_per_feature = False
    _input_tags = dict(categorical=True, positive_only=True)  # scikit-learn's tag names

    _parameter_constraints = {
        **_DiscreteNB._parameter_constraints,
        "min_categories": [None, "array-like", Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        force_alpha=True,
        fit_prior=True,
        class_prior=None,
        min_categories=None,
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

    def _validate_X(self, X, *, fitting):
        if fitting:  # the story is made from the codes (at predict the fitted one checks them)
            expected = (
                "non-negative integer category codes for CategoricalNB (encode categories as "
                "0..k-1, e.g. with OrdinalEncoder)"
            )
            return self._check_before_story(
                X,
                lambda X: check_non_negative_values(X, expected),
                lambda X: check_values(X, lambda v: v != np.round(v), expected),
            )
        return X

    def _n_categories(self, X) -> np.ndarray:
        check_table_size(X.max(axis=0) + 1.0)  # before the int cast: a code of 1e300 would wrap
        observed = X.max(axis=0).astype(np.int64) + 1
        if self.min_categories is None:
            return observed
        minimum = np.asarray(self.min_categories)
        if not np.issubdtype(minimum.dtype, np.integer):
            raise ValueError(
                f"min_categories must be an int or an array of ints, got {self.min_categories!r}."
            )
        if minimum.ndim not in (0, 1) or (minimum.ndim == 1 and minimum.shape != observed.shape):
            raise ValueError(
                f"'min_categories' should have shape ({X.shape[1]},) when an array-like is "
                f"provided. Got {minimum.shape} instead. (min_categories is a number or one "
                f"int per feature.)"
            )
        if np.any(minimum < 1):
            raise ValueError(f"min_categories must be >= 1, got {self.min_categories!r}.")
        return np.maximum(observed, minimum).astype(np.int64)

    def _partial_fit_story(self, X, previous):
        # A chunk may show codes not seen before: the tables grow (as scikit-learn's do).
        n_categories = self._n_categories(X)
        if previous is not None:
            n_categories = np.maximum(n_categories, previous.n_categories)
        return CategoricalStory(
            n_categories=tuple(int(k) for k in n_categories),
            alpha=self._checked_alpha(X.shape[1]),
        )

    def _extend_statistics(self, stats, story):
        counts = stats["emission"]["category_counts"]
        missing = story.max_categories - counts.shape[-1]
        if missing:
            counts = jnp.pad(counts, ((0, 0), (0, 0), (0, missing)))
        return {**stats, "emission": {**stats["emission"], "category_counts": counts}}

    def _set_fitted_attributes(self, stats):
        super()._set_fitted_attributes(stats)
        self.n_categories_ = np.asarray(self.story_.n_categories, dtype=np.int64)
        counts = stats["emission"]["category_counts"]
        with np.errstate(divide="ignore"):  # the padding cells hold exact zeros
            log_probs = np.log(self.params_["probs"])
        self.category_count_ = [counts[:, j, :k] for j, k in enumerate(self.n_categories_)]
        self.feature_log_prob_ = [log_probs[:, j, :k] for j, k in enumerate(self.n_categories_)]


class PoissonNB(_DiscreteNB):
    """Naive Bayes for counts with independent Poisson features.

    ``rate[k, j] = (S_kj + alpha) / (N_k + beta)`` with ``S_kj`` the (weighted) total of feature
    j in class k (:class:`genprob.families.poisson.PoissonStory`); ``alpha = beta = 0`` is
    maximum likelihood.

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        alpha: pseudo-counts (>= 0).
        beta: pseudo-rows (>= 0).

    Attributes:
        feature_count_: (weighted) total count of feature j per class (K, D).
        rates_: fitted Poisson rates (K, D).
        params_: the story's parameters (``rates``, ``class_prior``).
    """

    # scikit-learn has no "counts" tag; "categorical" makes its checks feed non-negative integers
    _input_tags = dict(positive_only=True, categorical=True)

    _parameter_constraints = {
        **{k: v for k, v in _DiscreteNB._parameter_constraints.items() if k != "force_alpha"},
        "beta": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        beta=1.0,
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

    def _make_story(self, X):
        return PoissonStory(alpha=self.alpha, beta=self.beta)

    def _set_fitted_attributes(self, stats):
        super()._set_fitted_attributes(stats)
        self.feature_count_ = stats["emission"]["feature_sums"]
        self.rates_ = self.params_["rates"]
