"""Moments and shrinkage of Gaussian statistics (NumPy or JAX): the reference point,
constant-feature snapping, Ledoit–Wolf."""

from __future__ import annotations

import numpy as np

from genprob.engine._arrays import namespace
from genprob.story import PARAMETER_ROWS, as_sample_sites

__all__ = [
    "COVARIANCE_ROWS",
    "covariance_of",
    "feature_moments",
    "ledoit_wolf_shrinkage",
    "about",
    "reference_point",
    "snap_constant_features",
    "standardizing_scale",
    "varying_features",
]

#: scikit-learn detects constant features with float64 rounding bounds whatever the data dtype.
_EPS64 = float(np.finfo(np.float64).eps)
#: The reference point of the moments is estimated from at most this many rows, spread over X.
_REFERENCE_ROWS = 64
#: ... and it is the origin when every feature's mean is within this many sds of 0.
_ORIGIN_SDS = 4.0


def reference_point(X):
    """The point the moments of ``X`` are taken about: the origin or a sampled mean."""
    xp = namespace(X)
    step = -(-X.shape[0] // _REFERENCE_ROWS)
    rows = X if step <= 1 else X[::step]
    mean = rows.mean(axis=0)
    near = xp.all(mean * mean <= _ORIGIN_SDS**2 * rows.var(axis=0))
    return xp.where(near, xp.zeros_like(mean), mean)


def about(X, shift):
    """``X - shift``, or ``X`` itself for a host origin: that copy was a fifth of a 1e6-row fit."""
    if type(shift) is np.ndarray and not shift.any():
        return X
    return X - shift


def feature_moments(stats, squares):
    """Each feature's mean (about ``shift``) and variance over all rows (``squares``: diagonal)."""
    total = stats["counts"].sum(axis=0)  # per feature when counts are (K, D) (missing entries)
    if squares.ndim == 2:
        squares = squares.sum(axis=0)
    mean = stats["sums"].sum(axis=0) / total
    return mean, squares / total - mean**2


def standardizing_scale(variances, counts, means):
    """Feature sds, 1 within the two-pass rounding bound (Chan, Golub & LeVeque) of a variance."""
    xp = namespace(variances, counts, means)
    counts = counts[..., None]
    bound = counts * _EPS64 * variances + (counts * xp.abs(means) * _EPS64) ** 2
    constant = variances <= bound
    return xp.where(constant, 1.0, xp.sqrt(xp.where(constant, 1.0, variances)))


def ledoit_wolf_shrinkage(covariance, fourth_moment, counts, scale):
    """``(shrunk covariances, alpha)``: Ledoit–Wolf on the scale ``scale`` (docs/gaussian.md)."""
    xp = namespace(covariance, fourth_moment, counts, scale)
    num_features = covariance.shape[-1]
    correlation = covariance / (scale[..., :, None] * scale[..., None, :])
    trace = xp.trace(correlation, axis1=-2, axis2=-1)
    mu = trace / num_features
    frobenius = xp.sum(correlation**2, axis=(-2, -1))
    beta = (fourth_moment / counts - frobenius) / (num_features * counts)
    delta = (frobenius - 2.0 * mu * trace + num_features * mu**2) / num_features
    beta = xp.minimum(beta, delta)
    alpha = xp.where(beta == 0, 0.0, beta / xp.where(delta == 0, 1.0, delta))
    if num_features == 1:
        alpha = xp.zeros_like(alpha)
    identity = xp.eye(num_features, dtype=covariance.dtype)
    shrunk = (1.0 - alpha)[..., None, None] * correlation + (alpha * mu)[..., None, None] * identity
    return shrunk * scale[..., :, None] * scale[..., None, :], alpha


def per_group(values, like):
    """Broadcast per-group scalars (a scalar, or (K,) per class) against ``like``."""
    values = namespace(values, like).asarray(values)
    if values.ndim == 0:
        return values
    return values.reshape(values.shape + (1,) * (like.ndim - values.ndim))


def symmetrize(matrix):
    return 0.5 * (matrix + namespace(matrix).swapaxes(matrix, -1, -2))


def centering_floor(counts, means):
    """``N_k (8 eps m_k)^2`` (K, D): the rounding of centering rows at ``|m_k|``."""
    eps = np.finfo(means.dtype).eps
    return counts[:, None] * (8.0 * eps * means) ** 2


def snap_constant_features(scatter, squares, full: bool = True, floor=None):
    """Zero the scatter of features whose variance is rounding noise or below ``floor``."""
    xp = namespace(scatter, squares)
    if full:
        diagonal = xp.diagonal(scatter, axis1=-2, axis2=-1)
        magnitude = xp.diagonal(squares, axis1=-2, axis2=-1)
    else:
        diagonal, magnitude = scatter, squares
    live = varying_features(diagonal, magnitude, floor)
    if full:
        return scatter * live[..., :, None] * live[..., None, :]
    return scatter * live


def varying_features(diagonal, magnitude, floor=None):
    """1 where a feature's scatter is above its rounding noise and ``floor``, else 0."""
    xp = namespace(diagonal, magnitude)
    eps = np.finfo(diagonal.dtype).eps
    noise = diagonal <= 64 * eps * magnitude
    if floor is not None:  # per-feature centering floor of the group (:func:`centering_floor`)
        noise = noise | (diagonal <= floor)
    # an overflowed moment (inf, or inf - inf) is kept, for the overflow check to name it
    live = ~noise | ~xp.isfinite(diagonal) | ~xp.isfinite(magnitude)
    return live.astype(diagonal.dtype)


#: Parameter in place of ``covariance`` fitted from fewer rows than features: ``G^T G = Sigma``.
COVARIANCE_ROWS = "covariance" + PARAMETER_ROWS


def covariance_of(params):
    """``params["covariance"]``, or ``G^T G`` of their :data:`COVARIANCE_ROWS` (on demand)."""
    return as_sample_sites(params)["covariance"]
