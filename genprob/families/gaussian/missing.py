"""Missing entries in the Gaussian story: marginal densities and the statistics EM needs."""

from __future__ import annotations

from genprob._lazy import LazyModule
from genprob.engine._arrays import namespace
from genprob.families.gaussian.distributions import (
    conditional_fill,
    observed_factors,
    observed_log_density,
    observed_patterns,
)
from genprob.families.gaussian.moments import covariance_of, snap_constant_features

__all__ = ["observed_log_prob", "observed_statistics", "maximize_observed_diagonal"]

jnp = LazyModule("jax.numpy")


def _class_covariances(story, params):
    means = params["means"]
    xp = namespace(means)
    shape = means.shape + means.shape[-1:]
    if not story.covariance_structure.full:
        return means, None, xp.broadcast_to(params[story.spread_name], means.shape)
    # rows with missing entries need the covariance's blocks: formed here, when they come
    return means, xp.broadcast_to(covariance_of(params), shape), None


def observed_log_prob(story, params, X, observed):
    """``log N(x_o; mu_k,o, Sigma_k,oo)`` of every row and class, (n, K)."""
    means, covariance, variances = _class_covariances(story, params)
    if covariance is None:
        by_feature = -0.5 * (
            (X[:, None, :] - means) ** 2 / variances + jnp.log(2.0 * jnp.pi * variances)
        )
        return jnp.sum(jnp.where(observed[:, None, :], by_feature, 0.0), axis=-1)
    patterns = observed_patterns(observed)
    factors = observed_factors(covariance, patterns[0])
    return observed_log_density(X, observed, means, factors, patterns)


def observed_statistics(story, X, R, observed, params=None):
    """Statistics of the observed entries (diagonal) or expected complete-data ones (full)."""
    xp = namespace(X, R)
    # the moments' reference point: each feature's mean of observed entries
    shift = xp.where(observed, X, 0.0).sum(axis=0) / xp.maximum(observed.sum(axis=0), 1)
    weights = observed.astype(R.dtype)
    centered = xp.where(observed, X - shift, 0.0)
    structure = story.covariance_structure
    if not structure.full:
        return {
            "counts": R.T @ weights,
            "shift": shift,
            "sums": R.T @ centered,
            "squares": structure.group(R.T @ (centered * centered)),
        }
    if story._auto_shrinkage:
        raise ValueError(
            "shrinkage='auto' cannot be fitted with missing entries (its Ledoit–Wolf statistics "
            "need complete rows); use a fixed shrinkage in [0, 1]."
        )
    num_features = X.shape[-1]
    if params is None:
        # first iteration: each class's observed means stand in for its missing entries
        seen = R.T @ weights
        class_means = xp.where(seen > 0, (R.T @ centered) / xp.where(seen > 0, seen, 1.0), 0.0)
        completed = xp.where(observed[:, None, :], centered[:, None, :], class_means[None])
        conditional = xp.zeros((R.shape[1], num_features, num_features), dtype=R.dtype)
    else:
        means, covariance, _ = _class_covariances(story, params)
        patterns = observed_patterns(observed)
        factors = observed_factors(covariance, patterns[0])
        completed, per_pattern = conditional_fill(X, observed, means, covariance, factors, patterns)
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
    if story.shared and story._needs_class_scatter:
        stats["class_squares"] = class_squares
    return stats


def maximize_observed_diagonal(story, stats):
    """Observed-data MLE of diagonal Gaussians, per class and feature."""
    counts, sums, squares = stats["counts"], stats["sums"], stats["squares"]
    structure = story.covariance_structure
    safe = jnp.where(counts > 0, counts, 1.0)
    centered = sums / safe
    means = jnp.where(counts > 0, centered + stats["shift"], jnp.nan)
    scatter = snap_constant_features(squares - structure.group(sums * centered), squares, False)
    group_counts = structure.group(counts)
    unbiased = story.estimator == "unbiased"
    if story.shared:
        denominator = group_counts - counts.shape[0] if unbiased else group_counts
    else:
        denominator = counts - 1.0 if unbiased else counts
    smoothing = story.smoothing_variance(stats)  # of the observed entries, per feature
    return {"means": means, "variances": scatter / denominator + smoothing}
