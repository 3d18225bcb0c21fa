"""GaussianNB, LinearDiscriminantAnalysis and QuadraticDiscriminantAnalysis as scikit-learn 1.9
has them; the deliberate differences are listed in docs/reference/estimators.md."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from genprob import core
from genprob._lazy import LazyModule, jitted
from genprob.engine._arrays import placed, tree_map
from genprob.engine._dtype import numpy_dtype, precision
from genprob.engine._validation import NumberInterval, check_rows, validate_params
from genprob.engine._warnings import warn_user
from genprob.engine.masking import has_missing
from genprob.estimators._base import GenerativeClassifierBase, keep_parameters
from genprob.families.gaussian import (
    COVARIANCE_ROWS,
    FACTORS,
    GaussianStory,
    covariance_of,
    lda_projection,
)
from genprob.families.gaussian.directions import discriminant_directions, gaussian_components
from genprob.story import gram_form

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")


@jitted
def _total_fourth_moment(story, X, merged):
    """Ledoit–Wolf's ``sum_i ||z_i||^4`` of all rows ``X`` about their mean, shape (1,)."""
    return story._fourth_moments(X, jnp.ones((X.shape[0], 1), dtype=X.dtype), merged)


__all__ = [
    "DiscriminantDirections",
    "GaussianNB",
    "LinearDiscriminantAnalysis",
    "QuadraticDiscriminantAnalysis",
    "UnsupportedOptionError",
]


class UnsupportedOptionError(ValueError, NotImplementedError):
    """An option combination the estimator does not support: a ``ValueError`` and, as
    scikit-learn raises it (shrinkage with the ``svd`` solver, say), a ``NotImplementedError``."""


def _covariance_of(estimator, X):
    # scikit-learn only asks for fit and covariance_: one without get_params is refitted in place
    fitted = clone(estimator) if hasattr(estimator, "get_params") else estimator
    fitted.fit(X)  # scikit-learn reads covariance_ from the object, not from fit's return
    if not hasattr(fitted, "covariance_"):
        raise ValueError(
            f"{type(estimator).__name__} does not have a covariance_ attribute after fit."
        )
    return np.atleast_2d(np.array(fitted.covariance_, dtype=np.float64))


def _custom_class_covariances(estimator, X, y):
    """Per-class covariances from a covariance estimator (K, D, D), and of all checked rows X."""
    X = np.asarray(X, dtype=np.float64)
    classes, codes = np.unique(y, return_inverse=True)
    covariances = [_covariance_of(estimator, X[codes == k]) for k in range(len(classes))]
    return np.stack(covariances), _covariance_of(estimator, X)


class _GaussianBase(GenerativeClassifierBase):
    """Shared checks: classes with zero weight, and failing a fit without leaving it half-done."""

    def _fail(self, message: str, error=ValueError):
        for name in ("params_", "story_"):
            self.__dict__.pop(name, None)
        raise error(message)

    def _prepared_params(self):
        """The parameters and the story's factorization (cached, not saved)."""
        params = super()._prepared_params()
        with precision(self._dtype):
            factors = self.story_.factorize(params)
        return {**params, FACTORS: placed(factors)} if factors else params

    def _check_overflow(self):
        """Parameters that overflowed are refused by name before anything factorizes them."""
        try:
            self.story_.check_overflow(self.params_, getattr(self, "feature_names_in_", None))
        except ValueError as error:
            self._fail(str(error))

    def _check_class_counts(self, stats):
        counts = np.asarray(stats["class_counts"])
        empty = self.classes_[counts <= 0].tolist()
        if empty:
            self._fail(f"classes {empty} have zero total sample weight: their means are undefined.")
        return counts


class GaussianNB(_GaussianBase):
    """Gaussian naive Bayes: per-class diagonal Gaussians (scikit-learn compatible).

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        priors: fixed class prior (K,) (non-negative, summing to 1), or None to estimate class
            proportions.
        var_smoothing: fraction of the largest feature variance added to every variance.

    Attributes:
        theta_: class means (K, D).
        var_: class variances (K, D), smoothing included.
        class_prior_: class prior (K,).
        class_count_: (weighted) number of training rows per class (K,).
        epsilon_: the absolute variance added.
    """

    _parameter_constraints = {
        **_GaussianBase._parameter_constraints,
        "priors": ["array-like", None],
        "var_smoothing": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        priors=None,
        var_smoothing=1e-9,
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
        return GaussianStory(covariance="diag", shared=False, var_smoothing=self.var_smoothing)

    def _set_fitted_attributes(self, stats):
        # a zero variance (var_smoothing=0, a constant feature): the story's check_parameters
        with precision(self._dtype):
            # host arrays: the smoothing variance is a few (K, D) sums
            dtype = numpy_dtype(self._dtype)
            emission_stats = {k: np.asarray(v, dtype) for k, v in stats["emission"].items()}
            self.epsilon_ = float(self.story_.smoothing_variance(emission_stats))
        counts = np.asarray(stats["class_counts"])
        if hasattr(self, "stats_"):
            # partial_fit: a class without rows so far waits for its rows (pending state)
            counts = self._check_class_counts(stats)
        elif np.any(counts <= 0):  # scikit-learn's mean 0, variance epsilon_ and prior 0
            empty = counts <= 0
            params = {k: np.array(v) for k, v in self.params_.items()}
            params["means"][empty] = 0.0
            params["variances"][empty] = self.epsilon_
            if self.priors is None:
                params["class_prior"][empty] = 0.0
            self.params_ = params
        lonely = (counts == 1) & np.any(np.asarray(self.params_["variances"]) <= 0, axis=1)
        if lonely.any():
            self._fail(
                f"y has only 1 sample in class {self.classes_[lonely][0]}: with "
                f"var_smoothing={self.var_smoothing} and no spread in X its variance is zero. "
                f"Fit more samples or raise var_smoothing."
            )
        self.class_count_ = counts
        self.theta_ = self.params_["means"]
        self.var_ = self.params_["variances"]
        self.class_prior_ = self.params_["class_prior"]


class _DiscriminantBase(_GaussianBase):
    """LDA and QDA: fit and partial_fit with scikit-learn's covariance options."""

    _renormalize_priors = True
    _min_classes = 2
    _parameter_constraints = {
        **_GaussianBase._parameter_constraints,
        "shrinkage": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both"), None],
        "priors": ["array-like", None],
        "store_covariance": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "covariance_estimator": [HasMethods("fit"), None],
    }

    #: The solvers that take shrinkage or a covariance estimator, for messages.
    _other_solvers = "solver='lsqr' or 'eigen'"
    #: scikit-learn's words (its LDA and QDA word it differently), which user code may match.
    _svd_estimator_message = (
        "covariance estimator is not supported with svd solver. Try another solver "
        "(solver='lsqr' or 'eigen')."
    )

    def _check_parameters(self):
        """Each parameter, then the checks across parameters."""
        super()._check_parameters()
        if self.solver == "svd" and self.shrinkage is not None:
            raise UnsupportedOptionError(
                f"shrinkage not supported with 'svd' solver: use {self._other_solvers}."
            )
        if self.solver == "svd" and self.covariance_estimator is not None:
            raise ValueError(self._svd_estimator_message)
        if self.covariance_estimator is not None and self.shrinkage not in (None, 0):
            raise ValueError(
                "covariance_estimator and shrinkage parameters are not None. Only one of the "
                "two can be set."
            )

    def _full_story(self, shared: bool, **settings) -> GaussianStory:
        shrinkage = 0.0 if self.shrinkage is None else self.shrinkage
        return GaussianStory(covariance="full", shared=shared, shrinkage=shrinkage, **settings)

    def _fit_rows(self, X, y, sample_weight, classes):
        """A covariance estimator's fit, then the story's, the rows kept for LDA's eigen solver."""
        unit_rows = sample_weight is None and classes is None
        unit_rows = unit_rows and not np.any(self._unlabeled_rows(y))
        self._custom = None
        if self.covariance_estimator is not None:
            if sample_weight is not None:
                raise ValueError("sample_weight is not supported with covariance_estimator.")
            if not unit_rows:
                raise ValueError(
                    f"covariance_estimator needs fully labeled data (no y = "
                    f"{self._unlabeled_label!r})."
                )
            self._custom = _custom_class_covariances(self.covariance_estimator, X, y)
        self._fit_X = (X, unit_rows)  # unit_rows: no weights, every row labeled
        try:
            return super()._fit_rows(X, y, sample_weight, classes)
        finally:
            del self._fit_X

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """:meth:`GenerativeClassifierBase.partial_fit`; not with ``covariance_estimator`` or
        ``shrinkage="auto"``, whose statistics do not add up."""
        self._check_parameters()
        if self.covariance_estimator is not None:
            raise ValueError(
                "partial_fit is not available with covariance_estimator: a covariance "
                "estimator is fitted on all rows of a class at once. Use fit()."
            )
        self._custom = None
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)


class LinearDiscriminantAnalysis(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, _DiscriminantBase
):
    """Linear discriminant analysis: Gaussian classes sharing one covariance.

    Parameters (plus ``dtype``) and fitted attributes follow scikit-learn 1.9: ``classes_``,
    ``priors_``, ``means_``, ``covariance_``, ``coef_``, ``intercept_``, ``scalings_``, ``xbar_``,
    ``explained_variance_ratio_``, ``n_features_in_``.

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Attributes:
        params_: the story's named parameters (``means``, ``covariance``, ``class_prior``).
    """

    _parameter_constraints = {
        **_DiscriminantBase._parameter_constraints,
        "solver": [StrOptions({"svd", "lsqr", "eigen"})],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        solver="svd",
        shrinkage=None,
        priors=None,
        n_components=None,
        store_covariance=False,
        tol=1e-4,
        covariance_estimator=None,
        *,
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
        if X.shape[0] <= len(self.classes_):
            raise ValueError("The number of samples must be more than the number of classes.")
        return self._partial_fit_story(X, None)

    def _partial_fit_story(self, X, previous):
        # A chunk may be smaller than the number of classes; the story does not depend on it.
        num_classes, num_features = len(self.classes_), X.shape[1]
        largest = min(num_classes - 1, num_features)
        if self.n_components is not None and self.n_components > largest:
            raise ValueError(
                f"n_components cannot be larger than min(n_features, n_classes - 1) = {largest}; "
                f"got {self.n_components}."
            )
        priors, _ = self._class_prior_argument()
        weights = None
        if priors is not None and self.solver != "svd":
            weights = tuple(priors)
        return self._full_story(True, rank_tol=float(self.tol), covariance_weights=weights)

    def _debiased_log_joint(self, X):
        """MASS's ``predict.lda(method = "debiased")`` scores at the fit's statistics."""
        from genprob.families.gaussian.conjugate import debiased_log_scores

        emission = gram_form(self.stats_["emission"], force=True)
        return debiased_log_scores(emission, self.params_["class_prior"], X)

    def _set_fitted_attributes(self, stats):
        self._check_class_counts(stats)
        self._check_overflow()
        if self._custom is not None:
            class_covariances, _ = self._custom
            prior = self.params_["class_prior"]
            self.params_["covariance"] = np.einsum("k,kde->de", prior, class_covariances).astype(
                self.params_["means"].dtype
            )
            self.params_.pop(COVARIANCE_ROWS, None)
        self.priors_ = self.params_["class_prior"]
        self.means_ = self.params_["means"]
        if "covariance" in self.params_:
            if self.solver != "svd" or self.store_covariance:
                self.covariance_ = self.params_["covariance"]
        elif self.store_covariance:  # asked for: the D x D matrix the rows give
            self.covariance_ = covariance_of(self.params_)
        # else (covariance rows, lsqr or eigen) covariance_ is formed on access (__getattr__)
        with precision(self._dtype):
            params = self._params_jax()
            coef, intercept = self.story_.linear_discriminants(params)
            coef, intercept = np.asarray(coef), np.asarray(intercept)
        if self.solver != "svd":
            self._warn_if_singular(int(np.max(np.asarray(params[FACTORS]["rank"]))))
        if self.solver == "svd":
            # scikit-learn's svd scores are centered at xbar (a shift posteriors do not see)
            self.xbar_ = self.priors_ @ self.means_
            shift = self.priors_ @ coef
            intercept = intercept + 0.5 * self.xbar_ @ shift
            coef = coef - shift
        if len(self.classes_) == 2:
            coef = (coef[1] - coef[0])[None, :]
            intercept = np.atleast_1d(intercept[1] - intercept[0])
        self.coef_, self.intercept_ = coef, intercept
        self._max_components = min(len(self.classes_) - 1, self.n_features_in_)
        if self.n_components is not None:
            self._max_components = self.n_components
        self._n_features_out = self._max_components

    def _warn_if_singular(self, rank: int) -> None:
        """lsqr and eigen on a singular covariance give the svd solver's posteriors: say so."""
        if rank >= self.n_features_in_:
            return
        theirs = {
            "lsqr": "takes a least-squares pseudo-inverse",
            "eigen": "solves a generalized eigenproblem that is ill-posed",
        }[self.solver]
        warn_user(
            f"the within-class covariance is singular (rank {rank} of {self.n_features_in_} "
            f"features: more features than rows, or collinear or constant features). "
            f"solver={self.solver!r} uses it on the {rank}-dimensional subspace it spans, as "
            f"solver='svd' does, and gives the svd solver's class probabilities; scikit-learn's "
            f"{self.solver!r} solver {theirs} there, so its probabilities can differ. For a "
            f"regular covariance use shrinkage (a value in (0, 1]), or use solver='svd'.",
            UserWarning,
        )

    def fit_statistics(self, stats, *, params=None, context=None):
        """:meth:`GenerativeClassifierBase.fit_statistics`, then ``scalings_`` and
        ``explained_variance_ratio_`` (the eigen solver's total covariance from ``fit``'s rows)."""
        for name in ("_derived_from", "_total_fourth_moment"):
            self.__dict__.pop(name, None)
        super().fit_statistics(stats, params=params, context=context)
        if self.solver == "lsqr":
            return self
        total, derivable = None, False
        if self.solver == "eigen":
            X, unit_rows = self.__dict__.get("_fit_X", (None, False))  # None: out of core
            total, derivable = self._total_covariance(X, self.stats_, unit_rows)
        scalings, ratio = self._projection(total)
        self.scalings_ = scalings
        self.explained_variance_ratio_ = ratio[: self._max_components]
        if derivable:
            self._derived_from = (self.params_, self.stats_, scalings)
        return self

    def _projection(self, total):
        """``(scalings, explained variance ratios)``; ``total``: the total covariance or None."""
        with precision(self._dtype), np.errstate(invalid="ignore", divide="ignore"):
            scalings, ratio = lda_projection(
                self.story_, self._params_jax(), total_covariance=total, tol=float(self.tol)
            )
        if not np.all(np.isfinite(ratio)):
            # no between-class spread (one row per class, say): no direction explains anything
            ratio = np.zeros_like(ratio)
        return scalings, ratio

    def _total_covariance(self, X, stats, unit_rows=False):
        """The eigen solver's regularized total covariance, and whether ``stats_`` derive it."""
        if self._custom is not None:
            return self._custom[1], False
        if self.story_.shrinkage != "auto":
            return self._merged_total_covariance(stats), True
        story = GaussianStory(covariance="full", shared=True, shrinkage="auto")
        with precision(self._dtype):
            Xj = self._as_array(X)  # the rows fit's one row check let through
            if unit_rows:
                merged = self._merged_total_statistics(stats, fourth_moment=0.0)
                fourth = float(np.asarray(_total_fourth_moment(story, Xj, merged))[0])
                self._total_fourth_moment = fourth
                return self._merged_total_covariance(stats, fourth), True
            ones = jnp.ones((Xj.shape[0], 1), dtype=Xj.dtype)
            row_stats = core.sufficient_statistics(story, Xj, ones)
            return np.asarray(core.maximize(story, row_stats)["covariance"]), False

    def _merged_total_statistics(self, stats, fourth_moment=None):
        """The fit's statistics as one class, with Ledoit–Wolf's ``fourth_moment`` if given."""
        emission = gram_form(stats["emission"], force=True)
        merged = {
            "counts": np.sum(emission["counts"], keepdims=True),
            "shift": emission["shift"],
            "sums": np.sum(emission["sums"], axis=0, keepdims=True),
            "squares": emission["squares"],
        }
        if fourth_moment is not None:
            merged["class_squares"] = emission["squares"][None]
            merged["fourth_moments"] = np.asarray([fourth_moment], emission["squares"].dtype)
        return tree_map(self._as_array, merged)

    def _merged_total_covariance(self, stats, fourth_moment=None):
        """The total covariance from the fit's statistics (:meth:`_total_covariance`)."""
        story = GaussianStory(covariance="full", shared=True, shrinkage=self.story_.shrinkage)
        with precision(self._dtype):
            merged = self._merged_total_statistics(stats, fourth_moment)
            return np.asarray(story.maximize(merged)["covariance"])

    # -- scalings_ derived after loading -------------------------------------------------------
    def _derivable_attributes(self) -> set:
        """Fitted attributes a model file may leave out: the eigen solver's ``scalings_``."""
        source = self.__dict__.get("_derived_from")
        if source is None or self.solver != "eigen":
            return set()
        params, stats, scalings = source
        if params is not self.__dict__.get("params_") or stats is not self.__dict__.get("stats_"):
            return set()
        if self.__dict__.get("scalings_", None) is not scalings:
            return set()
        return {"scalings_"}

    def _restore_derived_attributes(self, names) -> None:
        """After loading: ``names`` left out of the file are recomputed on first use."""
        if set(names) != {"scalings_"} or self.solver != "eigen" or "stats_" not in self.__dict__:
            raise ValueError(f"{type(self).__name__} cannot recompute the attributes {names!r}.")
        if self.story_.shrinkage == "auto" and "_total_fourth_moment" not in self.__dict__:
            raise ValueError("scalings_ with shrinkage='auto' need _total_fourth_moment.")
        self.__dict__.pop("scalings_", None)
        self._derived_from = (self.params_, self.stats_, None)

    def __getattr__(self, name):
        # a missing attribute: covariance_ of covariance rows, scalings_ of a loaded eigen model
        params = self.__dict__.get("params_")
        if (
            name == "covariance_"
            and self.__dict__.get("solver") != "svd"
            and params is not None
            and "covariance" not in params
            and COVARIANCE_ROWS in params
        ):
            return covariance_of(params)
        source = self.__dict__.get("_derived_from")
        if (
            name == "scalings_"
            and source is not None
            and source[2] is None
            and source[0] is self.__dict__.get("params_")
            and source[1] is self.__dict__.get("stats_")
        ):
            fourth = self.__dict__.get("_total_fourth_moment")
            scalings, _ = self._projection(self._merged_total_covariance(self.stats_, fourth))
            self.scalings_ = scalings
            self._derived_from = (self.params_, self.stats_, scalings)
            return scalings
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def transform(self, X):
        """Project on the discriminant directions (``svd``: centered at ``xbar_``).

        Returns:
            (n_samples, n_components) with ``n_components <= min(n_classes - 1, n_features)``.
        """
        if self.solver == "lsqr":
            raise UnsupportedOptionError(
                "transform not implemented for 'lsqr' solver (use 'svd' or 'eigen')."
            )
        X = self._check_X(X)
        if has_missing(X):
            rows = np.flatnonzero(np.isnan(X).any(axis=1))
            raise ValueError(
                f"transform projects complete rows; rows {rows[:5].tolist()} have missing "
                f"entries (NaN), which a projection cannot sum out."
            )
        if self.solver == "svd":
            projected = (X - self.xbar_) @ self.scalings_
        else:
            projected = X @ self.scalings_
        return projected[:, : self._max_components]

    def decision_function(self, X):
        """Linear scores ``X @ coef_.T + intercept_`` (softmax: :meth:`predict_proba`); the
        log-odds of class 1 when K = 2."""
        X = self._check_X(X)
        if has_missing(X):
            # a linear score needs every coordinate; the joint has the same softmax and log-odds
            scores = self._joint_log_proba(X)
            return scores[:, 1] - scores[:, 0] if len(self.classes_) == 2 else scores
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if len(self.classes_) == 2 else scores


class QuadraticDiscriminantAnalysis(_DiscriminantBase):
    """Quadratic discriminant analysis: one full Gaussian per class.

    Parameters (plus ``dtype``) and fitted attributes follow scikit-learn 1.9: ``classes_``,
    ``priors_``, ``means_``, ``rotations_`` and ``scalings_`` (computed on first use),
    ``covariance_`` (with ``store_covariance``).

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Attributes:
        params_: the story's named parameters (``means``, ``covariance`` (K, D, D),
            ``class_prior``).
    """

    _parameter_constraints = {
        **_DiscriminantBase._parameter_constraints,
        "solver": [StrOptions({"svd", "eigen"})],
        "reg_param": [Interval(Real, 0, 1, closed="both")],
    }

    def __init__(
        self,
        *,
        solver="svd",
        shrinkage=None,
        priors=None,
        reg_param=0.0,
        store_covariance=False,
        tol=1.0e-4,
        covariance_estimator=None,
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

    _other_solvers = "solver='eigen'"
    _svd_estimator_message = (
        "covariance_estimator is not supported with solver='svd'. Try solver='eigen' instead."
    )

    def _check_parameters(self):
        super()._check_parameters()
        if self.solver != "svd" and self.reg_param:
            raise ValueError(
                "reg_param is only used by solver='svd' (scikit-learn silently ignores it with "
                "'eigen'); with solver='eigen' regularize through shrinkage."
            )

    def _make_story(self, X):
        return self._full_story(False, reg_param=self.reg_param)

    def _set_fitted_attributes(self, stats):
        counts = self._check_class_counts(stats)
        self._check_overflow()
        if self._custom is not None:
            self.params_["covariance"] = self._custom[0].astype(self.params_["means"].dtype)
        num_features = self.n_features_in_
        regularized = self.reg_param > 0 or self._custom is not None
        if self.solver == "eigen" and self.shrinkage not in (None, 0):
            regularized = True
        if not regularized:
            lonely = self.classes_[counts <= 1].tolist()
            if lonely:
                self._fail(
                    f"y has only 1 sample in class {lonely[0]}, covariance is ill defined. Set "
                    f"reg_param > 0 (e.g. 0.1) to regularize it, or use "
                    f"LinearDiscriminantAnalysis (one covariance shared by all classes)."
                )
        # data on a tiny scale: say so, rather than call the underflowed covariance rank-deficient
        try:
            self.story_.check_scale(self.params_)
        except ValueError as error:
            self._fail(str(error))
        covariances = np.asarray(self.params_["covariance"])
        # every eigenvalue > tol exactly when cov - tol I is positive definite (cheaper than eigh)
        try:
            np.linalg.cholesky(covariances - self.tol * np.eye(num_features))
            eigenvalues = ()
        except np.linalg.LinAlgError:
            eigenvalues = np.linalg.eigvalsh(covariances)
        for k, values in enumerate(eigenvalues):
            rank = int(np.sum(values > self.tol))
            if rank < num_features:
                label = self.classes_[k]
                knob = "shrinkage" if self.solver == "eigen" else "reg_param"
                if self.solver == "svd" and counts[k] <= num_features:
                    advice = (
                        f"When using `solver='svd'` the number of samples in each class should be "
                        f"more than the number of features, but class {label} has "
                        f"{counts[k]:g} samples and {num_features} features. Try using "
                        f"`solver='eigen'` and setting the parameter `shrinkage` for "
                        f"regularization."
                    )
                else:
                    advice = f"Increase the value of `{knob}` to reduce the collinearity."
                # LinAlgError (a ValueError subclass) as scikit-learn raises it
                self._fail(
                    f"The covariance matrix of class {label} is not full rank. {advice} "
                    f"({num_features - rank} of its {num_features} eigenvalues are <= tol="
                    f"{self.tol}, smallest {values.min():.3g}. Increase `{knob}` (e.g. 0.1) "
                    f"to regularize it, or lower tol for data on a tiny scale.)",
                    np.linalg.LinAlgError,
                )
        # rotations_ / scalings_ of these covariances are computed on first use (__getattr__)
        self.__dict__.pop("rotations_", None)
        self.__dict__.pop("scalings_", None)
        self.priors_ = self.params_["class_prior"]
        self.means_ = self.params_["means"]
        if self.store_covariance:
            self.covariance_ = list(covariances)

    def __getattr__(self, name):
        # a missing attribute: the covariances' eigendecomposition, on first use
        if name in ("rotations_", "scalings_") and "params_" in self.__dict__:
            eigenvalues, eigenvectors = np.linalg.eigh(np.asarray(self.params_["covariance"]))
            order = np.argsort(eigenvalues, axis=1)[:, ::-1]
            self.scalings_ = [values[o] for values, o in zip(eigenvalues, order, strict=True)]
            self.rotations_ = [
                vectors[:, o] for vectors, o in zip(eigenvectors, order, strict=True)
            ]
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def decision_function(self, X):
        """``log pi_k + log p(x | k) + D/2 log(2 pi)``, scikit-learn's scores; log-odds if K = 2."""
        joint = self.predict_joint_log_proba(X) + 0.5 * self.n_features_in_ * math.log(2 * math.pi)
        return joint[:, 1] - joint[:, 0] if len(self.classes_) == 2 else joint


class DiscriminantDirections(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """The directions that carry a fitted Gaussian classifier's class structure: R mclust's
    ``MclustDR`` (Scrucca 2010, 2014; docs/howto/model_based.md), as a transformer.

    ``fit(X)`` reads the fitted ``model``'s Gaussians (a ``MixtureDiscriminantAnalysis``'s
    components, or the classes of ``LinearDiscriminantAnalysis``, ``QuadraticDiscriminantAnalysis``,
    ``GaussianNB`` or any Gaussian story) and the mean and covariance of ``X``, the rows the
    model was fitted on (mclust's ``object$data``); nothing is refitted. The directions solve
    ``M v = l Sigma v`` for mclust's kernel ``M`` of the components' means and covariances
    (:func:`genprob.families.gaussian.directions.discriminant_directions`).

    Args:
        model: a fitted Gaussian classifier. A pipeline or search that clones its steps would
            clone it unfitted: wrap it in ``sklearn.frozen.FrozenEstimator`` there.
        n_directions: directions kept by ``transform``; None: every direction whose eigenvalue
            exceeds ``sqrt(eps)`` (mclust's ``numdir``).
        mean_weight: mclust's ``lambda`` in [0, 1]: 1 (its default) finds the directions from
            the components' means alone, 0 from their covariances alone, 0.5 weighs both alike.

    Attributes:
        eigenvalues_: (n_features,) every eigenvalue, largest first (mclust's ``evalues``).
        directions_: (n_directions_, n_features) unit-length directions as rows, largest
            eigenvalue first (mclust's ``basis`` transposed; each signed so that its largest
            entry, in absolute value, is positive).
        n_directions_: the number of directions kept.
        mean_: (n_features,) the mean of ``X``, which ``transform`` subtracts.
        covariance_: (n_features, n_features) the covariance of ``X`` (divided by n).
    """

    _parameter_constraints: dict = {
        "model": "no_validation",  # checked in fit, with a message naming what is missing
        "n_directions": [None, NumberInterval(Integral, 1, None, closed="left")],
        "mean_weight": [NumberInterval(Real, 0, 1, closed="both")],
    }

    def __init__(self, model, *, n_directions=None, mean_weight=1.0):
        self.model = model
        self.n_directions = n_directions
        self.mean_weight = mean_weight

    def fit(self, X, y=None):
        """Directions from the model's Gaussians and ``X``'s moments (``y`` is ignored)."""
        validate_params(self)
        params, story = getattr(self.model, "params_", None), getattr(self.model, "story_", None)
        if params is None or story is None:
            raise NotFittedError(
                f"model: {type(self.model).__name__} is not a fitted genprob Gaussian classifier "
                "(no params_ and story_); fit it first: its parameters give the directions."
            )
        weights, means, covariances = gaussian_components(story, params)
        X = check_rows(self, X, reset=True, ensure_min_samples=2)
        if X.shape[1] != means.shape[1]:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model was fitted on {means.shape[1]}."
            )
        self.mean_ = X.mean(axis=0)
        centered = X - self.mean_
        self.covariance_ = centered.T @ centered / X.shape[0]
        eigenvalues, directions, numdir = discriminant_directions(
            weights, means, covariances, self.covariance_, self.mean_weight
        )
        if numdir == 0:
            raise ValueError(
                "X: no direction separates the model's components (every eigenvalue is below "
                "sqrt(eps)); are these the rows the model was fitted on?"
            )
        if self.n_directions is not None and self.n_directions > numdir:
            raise ValueError(
                f"n_directions={self.n_directions} exceeds the {numdir} directions with a "
                f"positive eigenvalue (eigenvalues {np.round(eigenvalues, 6).tolist()})."
            )
        self.eigenvalues_ = eigenvalues
        self.n_directions_ = numdir if self.n_directions is None else int(self.n_directions)
        self.directions_ = directions[:, : self.n_directions_].T
        self._n_features_out = self.n_directions_
        return self

    def transform(self, X):
        """``(X - mean_) @ directions_.T``, (n_samples, n_directions_): mclust's ``dir`` (the
        rows it was fitted on) and ``predict(dr, newdata = X)$dir``."""
        check_is_fitted(self, "directions_")
        X = check_rows(self, X, reset=False)
        return (X - self.mean_) @ self.directions_.T
