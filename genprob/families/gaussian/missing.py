"""Missing entries in the Gaussian story: marginal densities and the statistics EM needs.

With ``o`` the observed coordinates of a row and ``m`` the missing ones (derivations in
docs/howto/missing.md):

* scoring: ``x_o | k ~ N(mu_k,o, Sigma_k,oo)``. Each missingness pattern ``p`` gets one Cholesky
  factor of ``Sigma~ = P Sigma P + (I - P)`` (``P = diag(o)``), which equals ``Sigma_oo`` on the
  observed block and the identity on the missing one, so ``det Sigma~ = det Sigma_oo`` and
  ``Sigma~^-1`` holds ``Sigma_oo^-1``; patterns are found inside the compiled code, at most
  ``min(n, 2^D)`` of them;
* diagonal covariances: the missing terms drop out of the sum over features, and the
  observed-data MLE is closed form, per class and feature over the observed entries;
* full covariances (EM, Little & Rubin ch. 11): the E-step replaces a missing block by its
  conditional mean ``mu_m + Sigma_mo Sigma_oo^-1 (x_o - mu_o)`` and adds the conditional
  covariance ``Sigma_mm - Sigma_mo Sigma_oo^-1 Sigma_om`` to the second moments; the statistics
  then have the complete-data layout and the usual closed form is the M-step.
"""

from __future__ import annotations

import math

from genprob._lazy import LazyModule
from genprob.families.gaussian.moments import covariance_of, snap_constant_features

__all__ = ["observed_log_prob", "observed_statistics", "maximize_observed_diagonal"]

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
linalg = LazyModule("jax.scipy.linalg")

_LOG_2PI = math.log(2.0 * math.pi)
#: Largest feature count whose patterns are coded as integers (beyond it, one per row).
_MAX_CODED_FEATURES = 30


def patterns(observed):
    """``(patterns (P, D), index (n,))``: the distinct rows of the mask and each row's pattern.

    ``P = min(n, 2^D)`` is static; unused slots repeat a real pattern (they get no rows).
    """
    num_rows, num_features = observed.shape
    if num_features > _MAX_CODED_FEATURES:
        return observed, jnp.arange(num_rows)
    bits = jnp.arange(num_features, dtype=jnp.int32)
    code = observed.astype(jnp.int32) @ (jnp.int32(1) << bits)
    size = min(num_rows, 2**num_features)
    unique, index = jnp.unique(code, size=size, fill_value=code[0], return_inverse=True)
    return ((unique[:, None] >> bits) & 1).astype(bool), index.reshape(-1)


def _embedded(covariance, pattern_mask):
    """``Sigma~`` (P, K, D, D): the observed block of each class covariance, identity elsewhere."""
    mask = pattern_mask.astype(covariance.dtype)  # (P, D)
    outer = mask[:, :, None] * mask[:, None, :]
    eye = jnp.eye(covariance.shape[-1], dtype=covariance.dtype)
    return covariance[None] * outer[:, None] + (eye * (1.0 - mask)[:, None, :])[:, None]


def _class_covariances(story, params):
    means = params["means"]
    shape = means.shape + means.shape[-1:]
    if not story.covariance_structure.full:
        return means, None, jnp.broadcast_to(params[story.spread_name], means.shape)
    # rows with missing entries need the covariance's blocks: formed here, when they come
    return means, jnp.broadcast_to(covariance_of(params), shape), None


def observed_log_prob(story, params, X, observed):
    """``log N(x_o; mu_k,o, Sigma_k,oo)`` of every row and class, (n, K)."""
    means, covariance, variances = _class_covariances(story, params)
    if covariance is None:
        by_feature = -0.5 * (
            (X[:, None, :] - means) ** 2 / variances + jnp.log(2.0 * jnp.pi * variances)
        )
        return jnp.sum(jnp.where(observed[:, None, :], by_feature, 0.0), axis=-1)
    pattern_mask, index = patterns(observed)
    chol = jnp.linalg.cholesky(_embedded(covariance, pattern_mask))  # (P, K, D, D)
    half_log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)  # (P, K)
    centered = jnp.where(observed[:, None, :], X[:, None, :] - means, 0.0)  # (n, K, D)
    z = linalg.solve_triangular(chol[index], centered[..., None], lower=True)[..., 0]
    count = observed.sum(axis=-1).astype(X.dtype)[:, None]
    return -0.5 * jnp.sum(z * z, axis=-1) - half_log_det[index] - 0.5 * count * _LOG_2PI


def _shift(X, observed):
    """Mean of the observed entries of each feature: the reference point of the moments."""
    counts = observed.sum(axis=0).astype(X.dtype)
    return jnp.where(observed, X, 0.0).sum(axis=0) / jnp.maximum(counts, 1.0)


def observed_statistics(story, X, R, observed, params=None):
    """Statistics of the observed entries (diagonal) or expected complete-data ones (full)."""
    shift = _shift(X, observed)
    weights = observed.astype(R.dtype)
    centered = jnp.where(observed, X - shift, 0.0)
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
        class_means = jnp.where(seen > 0, (R.T @ centered) / jnp.where(seen > 0, seen, 1.0), 0.0)
        completed = jnp.where(observed[:, None, :], centered[:, None, :], class_means[None])
        conditional = jnp.zeros((R.shape[1], num_features, num_features), R.dtype)
    else:
        means, covariance, _ = _class_covariances(story, params)
        pattern_mask, index = patterns(observed)
        chol = jnp.linalg.cholesky(_embedded(covariance, pattern_mask))
        deviation = jnp.where(observed[:, None, :], X[:, None, :] - means, 0.0)
        solved = linalg.cho_solve((chol[index], True), deviation[..., None])[..., 0]  # Sigma~^-1 d
        predicted = means + jnp.einsum("kde,nke->nkd", covariance, solved)
        completed = jnp.where(observed[:, None, :], X[:, None, :], predicted) - shift
        # Sigma - Sigma P Sigma~^-1 P Sigma on the missing block, per pattern and class
        eye = jnp.eye(num_features, dtype=X.dtype)
        inverse = linalg.cho_solve((chol, True), jnp.broadcast_to(eye, chol.shape))
        missing = (1.0 - pattern_mask.astype(X.dtype))[:, None, :]  # (P, 1, D)
        inner = inverse - eye * missing[..., None, :]
        explained = covariance[None] @ inner @ covariance[None]
        block = missing[..., :, None] * missing[..., None, :]
        per_pattern = (covariance[None] - explained) * block  # (P, K, D, D)
        pattern_weights = jax.ops.segment_sum(R, index, num_segments=pattern_mask.shape[0])
        conditional = jnp.einsum("pk,pkde->kde", pattern_weights, per_pattern)
    sums = jnp.einsum("nk,nkd->kd", R, completed)
    class_squares = jnp.einsum("nk,nkd,nke->kde", R, completed, completed) + conditional
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
    """Observed-data MLE of diagonal Gaussians: per class and feature, observed entries only.

    ``estimator="unbiased"`` divides by ``N_kj - 1`` (``N_j - K`` shared) and ``var_smoothing``
    adds that fraction of the largest observed feature variance, as with complete data.
    """
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
