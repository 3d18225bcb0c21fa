"""The Gaussian story (LDA, QDA, Gaussian and shared-variance naive Bayes); each covariance
structure is a strategy object (:mod:`~.structures`); derivations in docs/gaussian.md."""

from __future__ import annotations

import numpy as np

from genprob._lazy import LazyModule
from genprob.engine._arrays import (
    class_sums,
    column_sums,
    namespace,
    row_sums,
    tree_leaves,
    tree_map,
)
from genprob.engine._validation import all_concrete, check_feature_width, is_concrete
from genprob.families.gaussian.distributions import (
    class_constant,
    conditional_fill,
    diagonal_log_normalizer,
    linear_scores,
    linear_terms,
    observed_factors,
    observed_log_density,
    observed_patterns,
    quadratic_scores,
    row_factors,
    whiten_twice,
)
from genprob.families.gaussian.mclust import STRUCTURES, num_covariance_parameters
from genprob.families.gaussian.moments import (
    COVARIANCE_ROWS,
    about,
    centering_floor,
    covariance_of,
    feature_moments,
    ledoit_wolf_shrinkage,
    per_group,
    reference_point,
    snap_constant_features,
    standardizing_scale,
    symmetrize,
    varying_features,
)
from genprob.families.gaussian.structures import (
    NAMED_STRUCTURES,
    CovarianceStructure,
    check_variances,
    named_structure,
    pseudo_scatter,
    structure_of,
)
from genprob.story import (
    ROOT_WEIGHTS,
    ROWS,
    Story,
    Unsupported,
    gram_form,
    keeps_rows,
    observed_scales,
)

jnp = LazyModule("jax.numpy")
numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")


__all__ = ["GaussianStory", "FACTORS", "COVARIANCE_ROWS", "covariance_of"]

#: Optional entry of ``params``: the spread's factorization (:meth:`GaussianStory.factorize`).
FACTORS = "factorization"
#: Entry of ``params[FACTORS]`` of a shared full covariance: the linear scores' terms.
LINEAR_TERMS = "linear_terms"


class GaussianStory(Story):
    """Gaussian class-conditional features.

    Args:
        covariance: ``"full"`` or ``"diag"``.
        shared: one covariance for all classes (True) or one per class (False).
        estimator: ``"mle"`` (divide by N) or ``"unbiased"`` (N - K pooled, N_k - 1 per class).
        reg_param: QDA-style regularization ``(1 - r) Sigma + r I``, in [0, 1].
        shrinkage: LDA-style shrinkage towards a scaled identity, a float in [0, 1], or
            ``"auto"`` (Ledoit–Wolf per class on standardized features).
        var_smoothing: Gaussian-NB-style variance floor, as a fraction of the largest variance.
        mean_prior_scale: sd of the Normal prior on the means (used by NUTS only); a float or
            one value per feature.
        covariance_prior_scale: scale of the inverse-Wishart / inverse-Gamma prior on the
            spreads (NUTS only); a float or one value per feature.
        rank_tol: None (full-rank covariances, Cholesky) or tau >= 0: a shared full covariance is
            used on the subspace of correlation eigenvalues > tau^2 (docs/gaussian.md).
        covariance_weights: None, or weights w_k (K,) of the per-class MLE covariances in the
            shared covariance ``sum_k w_k S_k / sum_k w_k`` (scikit-learn's lsqr/eigen solvers
            weight by the class priors); None is the pooled MLE (weights N_k).
        mean_prior_loc: center of the Normal prior on the means (NUTS only); a float or one
            value per feature (:meth:`scaled_to_data` sets the features' means).
        conjugate_prior: None (independent priors), ``"data"`` or ``"fixed"``: the conjugate
            normal-inverse-Wishart (-gamma) prior with closed-form posteriors (docs/bayes.md);
            ``"data"`` centers it at the features' means, scales in units of their sds.
        mean_prior_rows: kappa0 >= 0 of the conjugate prior (rows its means are worth).
        covariance_prior_dof: nu0 of the conjugate prior; None: D + 2 (full) or 4 (diagonal),
            the weakest with a finite mean (that mean is ``diag(covariance_prior_scale^2)``).

    Parameters (``params`` keys): ``means`` (K, D) and ``covariance`` ((D, D) shared or
    (K, D, D)) for ``"full"``; ``means`` and ``variances`` ((D,) shared or (K, D)) for ``"diag"``.
    """

    name = "gaussian"
    #: mclust's name of the structure when given (``structure=``), else None
    structure = None
    #: the conjugate prior's settings (class defaults: set on an instance only when given)
    conjugate_prior = None
    mean_prior_rows = 0.01
    covariance_prior_dof = None
    # the public home of the class, which is also the name saved model files know it by
    __module__ = "genprob.families.gaussian"

    def __init__(
        self,
        covariance: str | None = None,
        shared: bool | None = None,
        estimator: str = "mle",
        reg_param: float = 0.0,
        shrinkage=0.0,
        var_smoothing: float = 0.0,
        mean_prior_scale: float = 10.0,
        covariance_prior_scale: float = 1.0,
        rank_tol=None,
        covariance_weights=None,
        mean_prior_loc=0.0,
        structure: str | None = None,
        conjugate_prior: str | None = None,
        mean_prior_rows: float = 0.01,
        covariance_prior_dof: float | None = None,
    ):
        covariance, shared = _resolve_structure(structure, covariance, shared)
        if structure in NAMED_STRUCTURES and (
            estimator != "mle" or shrinkage or reg_param or var_smoothing or rank_tol is not None
            or covariance_weights is not None
        ):  # fmt: skip
            raise ValueError(
                f"structure={structure!r} is fitted by maximum likelihood only: estimator, "
                "shrinkage, reg_param, var_smoothing, rank_tol and covariance_weights apply to "
                "EEE, VVV, EEI and VVI."
            )
        if covariance not in ("full", "diag"):
            raise ValueError(f"covariance must be 'full' or 'diag', got {covariance!r}.")
        if estimator not in ("mle", "unbiased"):
            raise ValueError(f"estimator must be 'mle' or 'unbiased', got {estimator!r}.")
        if shrinkage is None:
            shrinkage = 0.0
        if isinstance(shrinkage, str):
            if shrinkage != "auto":
                raise ValueError(
                    f"shrinkage must be a float in [0, 1] or 'auto', got {shrinkage!r}."
                )
        elif not 0.0 <= float(shrinkage) <= 1.0:
            raise ValueError(f"shrinkage must lie in [0, 1], got {shrinkage!r}.")
        if not 0.0 <= float(reg_param) <= 1.0:
            raise ValueError(f"reg_param must lie in [0, 1], got {reg_param!r}.")
        if float(var_smoothing) < 0:
            raise ValueError(f"var_smoothing must be >= 0, got {var_smoothing!r}.")
        if covariance == "diag" and (shrinkage == "auto" or float(shrinkage) or reg_param):
            raise ValueError(
                "shrinkage and reg_param act on full covariances; with covariance='diag' use "
                "var_smoothing."
            )
        if rank_tol is not None:
            if covariance != "full" or not shared:
                raise ValueError(
                    "rank_tol applies to a shared full covariance (LDA) only: per-class "
                    "subspaces would make class densities incomparable."
                )
            if float(rank_tol) < 0:
                raise ValueError(f"rank_tol must be >= 0, got {rank_tol!r}.")
            rank_tol = float(rank_tol)
        if covariance_weights is not None:
            if covariance != "full" or not shared:
                raise ValueError("covariance_weights applies to a shared full covariance only.")
            if estimator != "mle":
                raise ValueError("covariance_weights requires estimator='mle'.")
            covariance_weights = tuple(float(w) for w in np.ravel(covariance_weights))
            if any(w < 0 for w in covariance_weights) or sum(covariance_weights) <= 0:
                raise ValueError(
                    f"covariance_weights must be non-negative with a positive sum, got "
                    f"{covariance_weights}."
                )
        self.covariance = covariance
        self.shared = bool(shared)
        self.estimator = estimator
        self.reg_param = float(reg_param)
        self.shrinkage = shrinkage if isinstance(shrinkage, str) else float(shrinkage)
        self.var_smoothing = float(var_smoothing)
        self.mean_prior_scale = _prior_setting("mean_prior_scale", mean_prior_scale, positive=True)
        if conjugate_prior not in (None, "data", "fixed"):
            raise ValueError(
                f"conjugate_prior must be None, 'data' or 'fixed', got {conjugate_prior!r}."
            )
        if conjugate_prior is not None and structure in NAMED_STRUCTURES:
            raise ValueError(
                f"structure={structure!r} has no conjugate prior: it applies to EEE, VVV, EEI "
                "and VVI (LDA, QDA and the naive Bayes stories)."
            )
        self.covariance_prior_scale = _prior_setting(
            "covariance_prior_scale", covariance_prior_scale, positive=conjugate_prior is None
        )
        # only when given: saved files and compiled-code keys of the default story unchanged
        if conjugate_prior is not None:
            self.conjugate_prior = conjugate_prior
        if float(mean_prior_rows) != 0.01:
            if not (np.isfinite(float(mean_prior_rows)) and float(mean_prior_rows) >= 0):
                raise ValueError(f"mean_prior_rows must be >= 0, got {mean_prior_rows!r}.")
            self.mean_prior_rows = float(mean_prior_rows)
        if covariance_prior_dof is not None:
            if not np.isfinite(float(covariance_prior_dof)):
                raise ValueError(
                    f"covariance_prior_dof must be a finite number, got {covariance_prior_dof!r}."
                )
            self.covariance_prior_dof = float(covariance_prior_dof)
        self.rank_tol = rank_tol
        self.covariance_weights = covariance_weights
        self.mean_prior_loc = _prior_setting("mean_prior_loc", mean_prior_loc, positive=False)
        if structure is not None:
            # only when given: files saved before the setting existed still load
            self.structure = structure

    @property
    def covariance_structure(self) -> CovarianceStructure:
        """The covariance structure's strategy object (:mod:`~.structures`)."""
        if self.structure in NAMED_STRUCTURES:
            return named_structure(self.structure)
        return structure_of(self.covariance, self.shared)

    @property
    def structure_name(self) -> str:
        """mclust's name of the structure (``"EEE"`` for LDA's shared full covariance, ...)."""
        if self.structure is not None:
            return self.structure
        return _NAME_OF_KIND[(self.covariance, self.shared)]

    @property
    def spread_name(self) -> str:
        """Name of the spread parameter: ``"covariance"`` (full) or ``"variances"`` (diag)."""
        return self.covariance_structure.spread_name

    @property
    def _auto_shrinkage(self) -> bool:
        return self.shrinkage == "auto"

    @property
    def capabilities(self):
        """Moments combine over chunks, except Ledoit–Wolf's (``shrinkage="auto"``)."""
        adds = True
        if self._auto_shrinkage:
            adds = Unsupported(
                "with shrinkage='auto' the Ledoit–Wolf statistics depend on each chunk's class "
                "means and scales and do not add up over chunks (use a fixed shrinkage in [0, 1])"
            )
        return {
            "array_api": True,
            "adds_over_rows": adds,
            "supports_missing": True,
            "missing_needs_em": self.covariance_structure.full,
            "exact_conjugate": self.conjugate_prior is not None,
        }

    def parameter_dims(self, name, shape, num_classes, num_features):
        """``means`` (class, feature); the spread's feature dims, after ``class`` when per class."""
        spread = {
            "covariance": ("feature", "feature2"),
            "variances": ("feature",),
            COVARIANCE_ROWS: ("row", "feature"),
        }
        if name in _LATENT_DIMS:
            return (("class",) if len(shape) > len(_LATENT_DIMS[name]) else ()) + _LATENT_DIMS[name]
        if name in spread:
            dims = spread[name] if self.shared else ("class", *spread[name])
            if len(dims) == len(shape):
                return dims
        return super().parameter_dims(name, shape, num_classes, num_features)

    def align_parameters(self, params, reference):
        """A named structure's free parameters recomputed canonically from the covariance."""
        if self.structure not in NAMED_STRUCTURES or "covariance" not in params:
            return params
        return {**params, **self.covariance_structure.latent_of(params["covariance"])}

    @property
    def _needs_class_scatter(self) -> bool:
        """Per-class full scatter matrices are needed (QDA, or LDA with auto / weights)."""
        return self.covariance_structure.full and (
            not self.shared or self._auto_shrinkage or self.covariance_weights is not None
        )

    # -- the generative story --------------------------------------------------------------------
    def prior(self, num_classes, num_features):
        structure, scale = self.covariance_structure, self.covariance_prior_scale
        if self.conjugate_prior is None:
            means = dist.Normal(self.mean_prior_loc, self.mean_prior_scale)
            means = numpyro.sample("means", means.expand([num_classes, num_features]).to_event(2))
            spread = structure.prior(num_classes, num_features, scale)
        else:
            dof = self.conjugate_dof(num_features)
            spread = structure.prior(num_classes, num_features, scale, dof)
            means = structure.conditional_means(
                self.mean_prior_loc, spread, self.mean_prior_rows, num_classes, num_features
            )
            means = numpyro.sample("means", means)
        return {"means": means, self.spread_name: spread}

    def scaled_to_data(self, X):
        """Prior on the data's scale (docs/bayes.md); per-feature settings are kept as given."""
        return self if self.conjugate_prior == "fixed" else scaled_prior(self, X)

    def emission(self, params):
        spread = None if _has_rows(params) else params[self.spread_name]
        # held rows: their factors hold the coloring, no (D, D) covariance is formed
        factors = params.get(FACTORS) or (self._factorized(params) if spread is None else None)
        return self.covariance_structure.emission(params["means"], spread, self.rank_tol, factors)

    def factorize(self, params) -> dict:
        """The full spread's factorization, passed back as ``params[FACTORS]`` (no O(D^3) redo)."""
        if not self.covariance_structure.full:
            return {}  # diagonal spreads score from their variances
        factors = self._factorized(params)
        if self.shared:
            # the class scores' (D, K) directions: predictions skip the (D, D) whitening
            constant = class_constant(factors["rank"], factors["log_normalizer"])
            terms = linear_terms(params["means"], factors["whitening"], constant)
            factors = {**factors, LINEAR_TERMS: terms}
        return factors

    def discriminant(self, params, X):
        """``log p(x | k)`` less a row term, linear for a shared spread (docs/gaussian.md)."""
        means = params["means"]
        check_feature_width(X, np.shape(means)[-1])
        if isinstance(X, np.ndarray) and all_concrete(params):
            params = tree_map(np.asarray, params)
        factors = params.get(FACTORS) or {}
        # an overflow gives -inf or NaN, refused below (NumPy) or by the caller (compiled)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.shared:
                terms = factors.get(LINEAR_TERMS)
                if terms is None:
                    terms = linear_terms(params["means"], *self._whitening_and_constant(params))
                scores = linear_scores(X, **terms)
            else:
                whitening, constant = self._whitening_and_constant(params)
                scores = quadratic_scores(X, params["means"], whitening, constant)
        # NumPy: finite rows whose class score overflowed become NaN rows, which the caller refuses
        if isinstance(scores, np.ndarray) and not np.isfinite(scores.sum()):
            scores[~np.isfinite(scores).all(axis=-1) & np.isfinite(X).all(axis=-1)] = np.nan
        return scores

    def log_density(self, params, X):
        """NumPy rows: the discriminant plus the term of the row a shared spread leaves out."""
        if not isinstance(X, np.ndarray):
            return super().log_density(params, X)
        scores = self.discriminant(params, X)
        if not self.shared:
            return scores  # the per-class log density itself
        params = tree_map(np.asarray, params)
        terms = (params.get(FACTORS) or {}).get(LINEAR_TERMS)
        center = np.mean(params["means"], axis=0) if terms is None else terms["center"]
        whitening = self._whitening_and_constant(params)[0]
        with np.errstate(over="ignore", invalid="ignore"):
            z = (X - center) * whitening if whitening.ndim == 1 else (X - center) @ whitening
            return scores - 0.5 * np.einsum("ij,ij->i", z, z)[:, None]

    def _whitening_and_constant(self, params):
        """``(W, c)``: whitening (inverse sds or variances when diagonal) and class constants."""
        if not self.covariance_structure.full:
            spread = params[self.spread_name]
            xp = namespace(spread)
            constant = diagonal_log_normalizer(xp.broadcast_to(spread, params["means"].shape))
            return (1.0 / xp.sqrt(spread) if self.shared else spread), constant
        factors = params.get(FACTORS) or self._factorized(params)
        return factors["whitening"], class_constant(factors["rank"], factors["log_normalizer"])

    def _factorized(self, params) -> dict:
        """The full spread's factorization, from its rows when the parameters hold them."""
        if _has_rows(params):
            return row_factors(params[COVARIANCE_ROWS], self.rank_tol)
        return self.covariance_structure.factorize(params[self.spread_name], self.rank_tol)

    @property
    def _keeps_rows(self) -> bool:
        """A fit from fewer rows than features keeps them (:data:`ROWS`), not D x D moments."""
        return (
            self.covariance_structure.full
            and self.shared
            and self.structure in (None, "EEE")
            and self.rank_tol is not None
            and not self._needs_class_scatter
            and self.estimator == "mle"
            and self.conjugate_prior is None
            and _known_zero(self.shrinkage)
            and _known_zero(self.reg_param)
        )

    def conjugate_dof(self, num_features: int) -> float:
        """nu0 of the conjugate prior: ``covariance_prior_dof``, else D + 2 (full) or 4."""
        if self.covariance_prior_dof is not None:
            return float(self.covariance_prior_dof)
        return num_features + 2.0 if self.covariance_structure.full else 4.0

    def conjugate_factors(self, stats, offset):
        """The joint normal-inverse-Wishart posterior of means and spread; no ``offset``."""
        from genprob.families.gaussian.conjugate import conjugate_posterior

        # a fit's statistics kept as rows: the posterior's scale matrix needs their D x D form
        stats = gram_form(stats, force=True)
        return {("means", self.spread_name): conjugate_posterior(self, stats)}

    # -- closed form -----------------------------------------------------------------------------
    def sufficient_statistics(self, X, R):
        """Counts and moments about a reference point ``shift`` (docs/gaussian.md)."""
        shift = reference_point(X)
        if self._keeps_rows and keeps_rows(*X.shape):
            # the weighted rows about the shift, whose Gram matrix is the second moments
            Z = about(X, shift)
            root = namespace(Z, R).sqrt(row_sums(R))
            moments = {"sums": class_sums(R, Z), ROWS: Z * root[:, None], ROOT_WEIGHTS: root}
        else:
            moments = self.covariance_structure.moments(X, R, shift, self._needs_class_scatter)
        stats = {"counts": column_sums(R), "shift": shift, **moments}
        if self._auto_shrinkage:
            stats["fourth_moments"] = self._fourth_moments(X, R, stats)
        return stats

    def combine_statistics(self, stats_a, stats_b):
        """Two chunks' statistics moved to their weighted reference point and added."""
        if self._auto_shrinkage:
            raise ValueError(
                "shrinkage='auto' (Ledoit–Wolf) statistics are not additive over data chunks: "
                "the fourth moments depend on each chunk's class means and scales. Fit on all "
                "the data at once, or use a fixed shrinkage in [0, 1]."
            )
        xp = namespace(*tree_leaves((stats_a, stats_b)))
        total_a, total_b = stats_a["counts"].sum(), stats_b["counts"].sum()
        total = total_a + total_b
        fraction = xp.where(total > 0, total_b / xp.where(total > 0, total, 1.0), 0.5)
        shift = stats_a["shift"] + fraction * (stats_b["shift"] - stats_a["shift"])
        if (ROWS in stats_a) != (ROWS in stats_b):  # rows and second moments: both as the latter
            stats_a, stats_b = gram_form(stats_a, force=True), gram_form(stats_b, force=True)
        moved_a, moved_b = self._recenter(stats_a, shift), self._recenter(stats_b, shift)
        stacked = {}
        if ROWS in moved_a:  # rows add by stacking (the engine turns many into their Gram matrix)
            stacked = {
                name: xp.concatenate([moved_a.pop(name), moved_b.pop(name)])
                for name in (ROWS, ROOT_WEIGHTS)
            }
        combined = tree_map(lambda a, b: a + b, moved_a, moved_b)
        combined.update(stacked, shift=shift)
        return combined

    def _recenter(self, stats, shift):
        """The statistics' moments about ``shift`` instead of ``stats["shift"]``."""
        offset = stats["shift"] - shift
        counts, sums = stats["counts"], stats["sums"]
        structure = self.covariance_structure
        moved = dict(stats)
        moved["sums"] = sums + counts[:, None] * offset
        if ROWS in stats:  # each row moves by its root weight times the offset
            moved[ROWS] = stats[ROWS] + stats[ROOT_WEIGHTS][:, None] * offset
            return moved
        moved["squares"] = structure.move(
            stats["squares"], structure.group(sums), structure.group(counts), offset
        )
        if "class_squares" in stats:
            moved["class_squares"] = structure.move(stats["class_squares"], sums, counts, offset)
        return moved

    def _class_scatter(self, stats):
        """Per-class MLE covariances S_k (K, D, D) and centered means from the statistics."""
        counts, sums = stats["counts"], stats["sums"]
        centered_means = sums / counts[:, None]
        squares = stats["class_squares" if self.shared else "squares"]
        between = sums[:, :, None] * centered_means[:, None, :]
        floor = centering_floor(counts, centered_means + stats["shift"])
        scatter = snap_constant_features(symmetrize(squares - between), squares, floor=floor)
        return scatter / counts[:, None, None], centered_means

    def _fourth_moments(self, X, R, stats):
        """``sum_i R_ik ||(x_i - m_k) / s_k||^4`` per class (the Ledoit–Wolf beta statistic)."""
        xp = namespace(X, R)
        covariances, centered_means = self._class_scatter(stats)
        variances = xp.diagonal(covariances, axis1=-2, axis2=-1)
        scale = standardizing_scale(variances, stats["counts"], centered_means + stats["shift"])
        Z = X - stats["shift"]
        moments = []
        for k in range(R.shape[1]):  # class by class: no (n, K, D) temporary
            z = (Z - centered_means[k]) / scale[k]
            norms = xp.sum(z * z, axis=-1)
            moments.append(xp.sum(R[:, k] * norms * norms))
        return xp.stack(moments)

    def _spread_terms(self, stats):
        """``means``, ``spread``, ``mle``, ``group_counts`` and ``dof`` per covariance group."""
        counts, sums = stats["counts"], stats["sums"]
        settings = (self.reg_param, self.shrinkage, self.var_smoothing)  # traced ones: JAX
        xp = namespace(*tree_leaves(stats), *(v for v in settings if not isinstance(v, str)))
        num_features = sums.shape[1]
        centered_means = sums / counts[:, None]
        means = centered_means + stats["shift"]
        structure = self.covariance_structure
        full = structure.full
        total = counts.sum()
        scatter = structure.scatter(stats["squares"], sums, centered_means, counts)
        group_counts = structure.group(counts)
        denominator = structure.denominator(counts, self.estimator == "unbiased")
        floor = structure.group(centering_floor(counts, means))
        scatter = snap_constant_features(scatter, stats["squares"], full, floor)
        mle = scatter / per_group(group_counts, scatter)
        spread = scatter / per_group(denominator, scatter)
        kept = xp.ones_like(xp.asarray(group_counts, dtype=scatter.dtype))
        if full:
            identity = xp.eye(num_features, dtype=scatter.dtype)
            if self._needs_class_scatter and self.shared:
                class_cov, _ = self._class_scatter(stats)
                alphas = xp.zeros_like(counts)
                if self._auto_shrinkage:
                    class_cov, alphas = self._ledoit_wolf(class_cov, stats)
                if self.covariance_weights is not None:
                    weights = xp.asarray(self.covariance_weights, dtype=counts.dtype)
                    if weights.shape != counts.shape:
                        raise ValueError(
                            f"covariance_weights has {weights.shape[0]} entries for "
                            f"{counts.shape[0]} classes."
                        )
                    weights = weights / weights.sum()
                else:
                    weights = counts / denominator
                spread = xp.einsum("k,kde->de", weights, class_cov)
                if self.covariance_weights is None:
                    weights = weights * denominator / total
                kept = kept * (1.0 - xp.sum(weights * alphas))
            elif self._auto_shrinkage:
                shrunk, alphas = self._ledoit_wolf(mle, stats)
                spread = shrunk * (group_counts / denominator)[:, None, None]
                kept = kept * (1.0 - alphas)
            if not self._auto_shrinkage:
                # linear, so equal to scikit-learn's per-class shrinking; traced even at 0
                mean_variance = xp.trace(spread, axis1=-2, axis2=-1) / num_features
                spread = (1.0 - self.shrinkage) * spread + self.shrinkage * (
                    mean_variance[..., None, None] * identity
                )
                kept = kept * (1.0 - self.shrinkage)
            spread = (1.0 - self.reg_param) * spread + self.reg_param * identity
            kept = kept * (1.0 - self.reg_param)
        else:
            spread = spread + self.smoothing_variance(stats)
        return {
            "means": means,
            "spread": spread,
            "mle": mle,
            "group_counts": group_counts,
            "dof": denominator / kept,
        }

    def _covariance_rows(self, stats) -> dict:
        """Pooled MLE ``means`` and :data:`COVARIANCE_ROWS` from weighted rows (O(m^2 D))."""
        counts, sums, rows = stats["counts"], stats["sums"], stats[ROWS]
        xp = namespace(*tree_leaves(stats))
        centered_means = sums / counts[:, None]
        means = centered_means + stats["shift"]
        between = centered_means * xp.sqrt(counts)[:, None]
        _, singular, right = xp.linalg.svd(rows, full_matrices=False)
        projected = between @ right.T
        inner = symmetrize(xp.diag(singular * singular) - projected.T @ projected)
        values, vectors = xp.linalg.eigh(inner)
        # rounding noise where the class means' directions were: an exact 0, as the rank says
        noise = inner.shape[-1] * np.finfo(inner.dtype).eps * xp.max(singular) ** 2
        values = xp.where(values > noise, values, 0.0) / counts.sum()
        covariance_rows = xp.sqrt(values)[:, None] * (vectors.T @ right)
        # features constant within their classes get an exact 0, as the D x D path snaps them
        magnitude = xp.sum(rows * rows, axis=0)
        diagonal = magnitude - xp.sum(between * between, axis=0)
        floor = centering_floor(counts, means).sum(axis=0)
        live = varying_features(diagonal, magnitude, floor)
        return {"means": means, COVARIANCE_ROWS: covariance_rows * live}

    def _ledoit_wolf(self, class_covariances, stats):
        """Ledoit–Wolf shrunk per-class covariances and their coefficients alpha_k."""
        counts = stats["counts"]
        means = stats["sums"] / counts[:, None] + stats["shift"]
        variances = namespace(class_covariances).diagonal(class_covariances, axis1=-2, axis2=-1)
        scale = standardizing_scale(variances, counts, means)
        return ledoit_wolf_shrinkage(class_covariances, stats["fourth_moments"], counts, scale)

    def smoothing_variance(self, stats):
        """``var_smoothing * max_j Var(x_j)``: the variance added by Gaussian-NB smoothing."""
        squares = self.covariance_structure.diagonal(stats["squares"])
        # an overflow gives inf, which the fit refuses by name (check_overflow)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.var_smoothing * feature_moments(stats, squares)[1].max()

    def maximize(self, stats):
        if np.ndim(stats["counts"]) == 2:  # per-feature counts: observed entries only
            return self._maximize_observed_diagonal(stats)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if ROWS in stats:
                return self._covariance_rows(stats)
            terms = self._spread_terms(stats)
        params = {"means": terms["means"], self.spread_name: terms["spread"]}
        if self.structure in NAMED_STRUCTURES:
            counts = terms["group_counts"]
            params.update(
                self.covariance_structure.maximize(terms["mle"] * counts[:, None, None], counts)
            )
        return params

    def log_penalty(self, params, stats):
        """Log density of the prior whose MAP is the regularized closed form (docs/gaussian.md)."""
        if not (
            self._auto_shrinkage
            or self.estimator == "unbiased"
            or self.covariance_weights is not None
            or not all(_known_zero(v) for v in (self.reg_param, self.shrinkage, self.var_smoothing))
        ):
            return 0.0
        ones = [self.reg_param] + ([] if self._auto_shrinkage else [self.shrinkage])
        if any(is_concrete(v) and float(v) == 1.0 for v in ones):
            raise ValueError(
                "reg_param = 1 or shrinkage = 1 fixes the covariance whatever the data: the "
                "equivalent prior is a point mass with no finite log density."
            )
        terms = self._spread_terms(stats)
        extra = terms["dof"] - terms["group_counts"]
        pseudo = pseudo_scatter(terms)
        spread = params[self.spread_name]
        xp = namespace(spread, pseudo)
        if not self.covariance_structure.full:
            extra = per_group(extra, spread)
            return xp.sum(-0.5 * extra * xp.log(spread) - 0.5 * pseudo / spread)
        factors = self.covariance_structure.factorize(spread, self.rank_tol)
        whitening = factors["whitening"]
        # tr(Sigma^-1 Psi) = tr(W^T Psi W); -1/2 log det Sigma = log_normalizer
        trace = xp.trace(xp.swapaxes(whitening, -1, -2) @ pseudo @ whitening, axis1=-2, axis2=-1)
        return xp.sum(extra * factors["log_normalizer"] - 0.5 * trace)

    # -- missing entries (docs/reference/families.md) ---------------------------------------------
    def _observed_factors(self, params, observed):
        """``(means, covariances (K, D, D), patterns, their factors)`` of a full spread."""
        means = params["means"]
        # rows with missing entries need the covariance's blocks: formed here, when they come
        shape = means.shape + means.shape[-1:]
        covariance = namespace(means).broadcast_to(covariance_of(params), shape)
        patterns = observed_patterns(observed)
        return means, covariance, patterns, observed_factors(covariance, patterns[0])

    def observed_log_prob(self, params, X, observed):
        """``log N(x_o; mu_k,o, Sigma_k,oo)`` of every row and class, (n, K)."""
        if not self.covariance_structure.full:
            means, variances = params["means"], params[self.spread_name]
            by_feature = -0.5 * (
                (X[:, None, :] - means) ** 2 / variances + jnp.log(2.0 * jnp.pi * variances)
            )
            return jnp.sum(jnp.where(observed[:, None, :], by_feature, 0.0), axis=-1)
        means, _, patterns, factors = self._observed_factors(params, observed)
        return observed_log_density(X, observed, means, factors, patterns)

    def observed_statistics(self, X, R, observed, params=None):
        """Statistics of the observed entries (diagonal) or expected complete-data ones (full)."""
        xp = namespace(X, R)
        # the moments' reference point: each feature's mean of observed entries
        shift = xp.where(observed, X, 0.0).sum(axis=0) / xp.maximum(observed.sum(axis=0), 1)
        weights = observed.astype(R.dtype)
        centered = xp.where(observed, X - shift, 0.0)
        structure = self.covariance_structure
        if not structure.full:
            return {
                "counts": R.T @ weights,
                "shift": shift,
                "sums": R.T @ centered,
                "squares": structure.group(R.T @ (centered * centered)),
            }
        if self._auto_shrinkage:
            raise ValueError(
                "shrinkage='auto' cannot be fitted with missing entries (its Ledoit–Wolf "
                "statistics need complete rows); use a fixed shrinkage in [0, 1]."
            )
        num_features = X.shape[-1]
        if params is None:
            # first iteration: each class's observed means stand in for its missing entries
            seen = R.T @ weights
            class_means = xp.where(seen > 0, (R.T @ centered) / xp.where(seen > 0, seen, 1.0), 0.0)
            completed = xp.where(observed[:, None, :], centered[:, None, :], class_means[None])
            conditional = xp.zeros((R.shape[1], num_features, num_features), dtype=R.dtype)
        else:
            means, covariance, patterns, factors = self._observed_factors(params, observed)
            completed, per_pattern = conditional_fill(
                X, observed, means, covariance, factors, patterns
            )
            completed = completed - shift
            # each pattern's total responsibility (P, K), by a one-hot product in either namespace
            which = patterns[1][None, :] == xp.arange(patterns[0].shape[0])[:, None]
            conditional = xp.einsum("pk,pkde->kde", which.astype(R.dtype) @ R, per_pattern)
        sums = xp.einsum("nk,nkd->kd", R, completed)
        class_squares = xp.einsum("nk,nkd,nke->kde", R, completed, completed) + conditional
        stats = {
            "counts": R.sum(axis=0),
            "shift": shift,
            "sums": sums,
            "squares": structure.group(class_squares),
        }
        if self.shared and self._needs_class_scatter:
            stats["class_squares"] = class_squares
        return stats

    def _maximize_observed_diagonal(self, stats):
        """Observed-data MLE of diagonal Gaussians, per class and feature."""
        counts, sums, squares = stats["counts"], stats["sums"], stats["squares"]
        structure = self.covariance_structure
        safe = jnp.where(counts > 0, counts, 1.0)
        centered = sums / safe
        means = jnp.where(counts > 0, centered + stats["shift"], jnp.nan)
        scatter = snap_constant_features(squares - structure.group(sums * centered), squares, False)
        denominator = structure.denominator(counts, self.estimator == "unbiased")
        smoothing = self.smoothing_variance(stats)  # of the observed entries, per feature
        return {"means": means, "variances": scatter / denominator + smoothing}

    def num_parameters(self, num_classes, num_features):
        covariances = num_covariance_parameters(self.structure_name, num_classes, num_features)
        return (num_classes - 1) + num_classes * num_features + covariances

    def check_scale(self, params) -> None:
        """Refuse variances so small that the features' squares lose their precision."""
        spread, variances = self._variances(params)
        if spread.dtype.kind != "f" or spread.size == 0:
            return
        largest = float(np.max(np.abs(variances)))
        info = np.finfo(spread.dtype)
        floor = info.tiny / info.eps
        # variances that underflowed to zero, with means that are not zero: data on a tiny scale
        means = np.asarray(params["means"])
        location = float(np.max(np.abs(means))) if means.size else 0.0
        if 0 < largest < floor or (largest == 0 and 0 < location < np.sqrt(floor)):
            raise ValueError(
                f"the features' scale is too small for {spread.dtype} (largest variance "
                f"{largest:.3g}, below {info.tiny / info.eps:.3g}): their squares lose their "
                f"precision. Rescale the features (e.g. standardize them) before fitting."
            )

    def _variances(self, params) -> tuple:
        """``(spread, variances)`` on the host (from the covariance rows when held)."""
        if _has_rows(params):
            rows = np.asarray(params[COVARIANCE_ROWS])
            variances = np.einsum("ij,ij->j", rows, rows)
            return variances, variances
        spread = np.asarray(params[self.spread_name])
        full = self.covariance_structure.full
        return spread, (np.diagonal(spread, axis1=-2, axis2=-1) if full else spread)

    def check_parameters(self, params, class_names=None, feature_names=None):
        """A zero variance or singular covariance is an error naming where and the regularizer."""
        self.check_overflow(params, feature_names)
        super().check_parameters(params, class_names, feature_names)
        num_features = np.shape(params["means"])[-1]
        self.check_scale(params)
        classes = list(class_names) if class_names is not None else None
        features = list(feature_names) if feature_names is not None else None

        def where(k=None, j=None):
            parts = []
            if j is not None:
                parts.append(f"feature '{features[j]}'" if features else f"feature {j}")
            if k is not None:
                parts.append(f"in class {classes[k] if classes else k}")
            return " ".join(parts)

        if not self.covariance_structure.full:
            bad = check_variances(params["variances"], params["means"])
            if bad.size:
                k, j = bad[0]
                scope = self.covariance_structure.scope(k, where)
                raise ValueError(
                    f"{where(j=j)} has zero variance {scope} with var_smoothing="
                    f"{self.var_smoothing:g}: its Gaussian is degenerate. Set var_smoothing > 0 "
                    f"(e.g. the default 1e-9 adds that fraction of the largest feature variance), "
                    f"or drop constant features."
                )
            return
        if self.rank_tol is not None:
            return  # singular covariances are scored on their retained subspace
        covariance = np.asarray(params["covariance"]).reshape(-1, num_features, num_features)
        try:
            np.linalg.cholesky(covariance)  # every class in one call; on failure, find which
            return
        except np.linalg.LinAlgError:
            pass
        for k, matrix in enumerate(covariance):
            try:
                np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                scope = self.covariance_structure.scope(k, where)
                knob = "shrinkage" if self.shared else "reg_param"
                raise ValueError(
                    f"the {scope} is singular ({num_features} features): its Gaussian is "
                    f"degenerate. Set {knob} > 0 (e.g. 0.1) to regularize it."
                ) from None

    def check_overflow(self, params, feature_names=None) -> None:
        """Refuse, by feature, means or variances that overflowed or exceed ``max * eps``."""
        means = np.asarray(params["means"])
        spread, variances = self._variances(params)
        variances = np.broadcast_to(variances, means.shape)
        # a class without (weighted) rows has undefined moments: its own check names it
        if "class_prior" in params:
            present = np.asarray(params["class_prior"]) > 0
        else:  # a block of a mixed story: a class without rows has 0/0 = NaN means throughout
            present = ~np.all(np.isnan(means), axis=-1)
        if spread.dtype.kind != "f":
            return
        info = np.finfo(spread.dtype)
        # headroom of 1 / eps: scatter, Cholesky sums and quadratic forms stay finite
        limit = info.max * info.eps
        finite = np.isfinite(means) & np.isfinite(variances) & (variances <= limit)
        bad = np.flatnonzero(~np.all(finite[present], axis=0))
        if not bad.size:
            return
        # smoothing spreads one overflow to other features: name the largest
        size = np.nan_to_num(np.max(np.abs(means[:, bad]), axis=0), nan=np.inf)
        j = int(bad[np.argmax(size)])
        name = (
            f"feature '{list(feature_names)[j]}'" if feature_names is not None else f"feature {j}"
        )
        kind = "to square" if np.all(np.isfinite(means[:, j])) else "to hold"
        overflows = (
            "overflows"
            if not np.all(np.isfinite(variances[:, j]))
            else "comes within a factor 1/eps of overflowing"
        )
        raise ValueError(
            f"{name} has values too large {kind} in {spread.dtype} (beyond about "
            f"{np.sqrt(limit) if kind == 'to square' else info.max:.2g}): its "
            f"{'variance ' + overflows if kind == 'to square' else 'mean overflows'}. Rescale the "
            "features (e.g. standardize them) before fitting."
        )

    # -- decision boundaries ---------------------------------------------------------------------
    def emission_summary(self, params) -> dict:
        """Quadratic-form view of the emission (docs/gaussian.md): ``precision`` (K, D, D),
        ``linear`` (K, D), ``normalizer`` and ``intercept`` (K,), ``whitening`` (shared only)."""
        means = params["means"]
        factors = params.get(FACTORS)
        if _has_rows(params):
            spread, factors = params[COVARIANCE_ROWS], factors or self._factorized(params)
        else:
            spread = params[self.spread_name]
        xp = namespace(means, spread)
        precision, normalizer, whitening = self.covariance_structure.summary(
            means, spread, self.rank_tol, factors
        )
        linear = xp.einsum("kde,ke->kd", precision, means)
        linear, intercept = _linear_and_intercept(linear, params)
        return {
            "precision": precision,
            "linear": linear,
            "normalizer": normalizer,
            "intercept": intercept,
            "whitening": whitening,
        }

    def linear_discriminants(self, params):
        """``(coef (K, D), intercept (K,))`` of a shared covariance (docs/gaussian.md)."""
        if not self.shared:
            raise ValueError(
                "per-class covariances give quadratic log-odds (QDA, Gaussian NB): there is no "
                "linear boundary; use genprob.boundaries.quadratic_boundary."
            )
        means = params["means"]
        if self.covariance_structure.full:
            linear = whiten_twice(means, self._whitening_and_constant(params)[0])
        else:
            linear = means / params["variances"]
        return _linear_and_intercept(linear, params)

    def linear_boundary(self, params, k: int, l: int):  # noqa: E741
        """``(w, b)``: the log-odds of ``k`` and ``l`` (docs/reference/boundaries.md)."""
        coef, intercept = self.linear_discriminants(params)
        return coef[k] - coef[l], intercept[k] - intercept[l]

    def quadratic_boundary(self, params, k: int, l: int):  # noqa: E741
        """``(Q, L, C)``: the log-odds of ``k`` and ``l`` (docs/reference/boundaries.md)."""
        summary = self.emission_summary(params)
        precision, linear = summary["precision"], summary["linear"]
        offset = summary["intercept"] + summary["normalizer"]
        return -0.5 * (precision[k] - precision[l]), linear[k] - linear[l], offset[k] - offset[l]

    def shared_whitening(self, params):
        """``W`` (D, D) with ``W^T Sigma W = I`` on the retained subspace (shared spread only)."""
        if not self.shared:
            raise ValueError("a whitening common to all classes needs a shared covariance.")
        whitening = self._whitening_and_constant(params)[0]  # inverse sds when diagonal
        return whitening if self.covariance_structure.full else namespace(whitening).diag(whitening)


def scaled_prior(story, X):
    """A Gaussian or mixture ``story``'s prior on the scale of ``X``'s observed cells (their means
    and sds); the story itself when a setting is per feature."""
    settings = (story.mean_prior_scale, story.covariance_prior_scale, story.mean_prior_loc)
    if any(np.ndim(v) for v in settings):
        return story
    location, spread = observed_scales(X)
    if getattr(story, "conjugate_prior", None) == "data":  # the spread's mean: each variance
        return story.replace(
            conjugate_prior="fixed",
            mean_prior_loc=location,
            covariance_prior_scale=story.covariance_prior_scale * spread,
        )
    return story.replace(
        mean_prior_loc=location,
        mean_prior_scale=story.mean_prior_scale * spread,
        covariance_prior_scale=story.covariance_prior_scale * spread / 10.0,
    )


def _has_rows(params) -> bool:
    """Parameters holding their covariance as :data:`COVARIANCE_ROWS` (and not as a matrix)."""
    return COVARIANCE_ROWS in params and "covariance" not in params


def _linear_and_intercept(linear, params):
    """``(P m_k, -1/2 m_k^T P m_k + log pi_k)`` from ``linear = P m_k`` (NumPy or JAX)."""
    intercept = -0.5 * (linear * params["means"]).sum(axis=-1)
    if "class_prior" in params:
        xp = namespace(linear, params["class_prior"])
        with np.errstate(divide="ignore"):  # a class of prior 0: -inf, as in JAX
            intercept = intercept + xp.log(params["class_prior"])
    return linear, intercept


def _known_zero(value) -> bool:
    """True when ``value`` is concretely 0 (a traced hyperparameter is not known to be)."""
    return is_concrete(value) and float(value) == 0.0


def _prior_setting(name, value, *, positive: bool):
    """A prior setting: a float, or a 1-D float array (one value per feature)."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim > 1 or not np.all(np.isfinite(array)) or (positive and np.any(array <= 0)):
        condition = "> 0" if positive else "finite"
        raise ValueError(f"{name} must be a {condition} number or one per feature, got {value!r}.")
    return float(array) if array.ndim == 0 else array


#: Dimension names of the free parameters of a named structure (a leading ``class`` when V).
_LATENT_DIMS = {"log_volume": (), "log_shape": ("shape",), "orientation": ("rotation",)}

#: The four structures with their own strategies, by mclust name and by (covariance, shared).
_KIND_OF_NAME = {
    "EEE": ("full", True),
    "VVV": ("full", False),
    "EEI": ("diag", True),
    "VVI": ("diag", False),
}
_NAME_OF_KIND = {kind: name for name, kind in _KIND_OF_NAME.items()}


def _resolve_structure(structure, covariance, shared):
    """``(covariance, shared)`` of a structure name, checked against the ones given."""
    if structure is None:
        return ("full" if covariance is None else covariance), (True if shared is None else shared)
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {', '.join(STRUCTURES)}, got {structure!r}.")
    kind = _KIND_OF_NAME.get(structure, ("full", False))
    if (covariance is not None and covariance != kind[0]) or (
        shared is not None and bool(shared) != kind[1]
    ):
        raise ValueError(
            f"structure={structure!r} stores covariance={kind[0]!r}, shared={kind[1]}; got "
            f"covariance={covariance!r}, shared={shared!r}. Give the structure alone."
        )
    return kind
