"""Moments and shrinkage of Gaussian statistics (NumPy or JAX): the reference point,
constant-feature snapping, Ledoit–Wolf."""

from __future__ import annotations

import numpy as np

from genprob.engine._arrays import namespace
from genprob.story import PARAMETER_ROWS, as_sample_sites

__all__ = [
    "COVARIANCE_ROWS",
    "covariance_of",
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
    """The point the moments of ``X`` are taken about (NumPy or JAX): the origin when every
    feature's mean is within ``_ORIGIN_SDS`` sds of 0, else the mean; both estimated from the
    rows, or from at most ``_REFERENCE_ROWS`` rows evenly spread over them.

    It only has to lie near the data's center: the sums about it are then ``n (mean - shift)``,
    and "second moment minus squared mean" loses to cancellation a relative
    ``eps (1 + (mean - shift)^2 / var)``: about ``eps (1 + 1/64)`` for the sample mean of 64
    rows (within about sd / 8 of the mean), at most ``17 eps`` for the origin of data within 4 sds
    of it. Sampling spares a pass over large inputs.
    """
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


def standardizing_scale(variances, counts, means):
    """Feature sds with near-constant features set to 1, as scikit-learn's ``StandardScaler``.

    A feature is constant when its variance is within the rounding bound of a two-pass variance,
    ``var <= n eps var + (n |mean| eps)^2`` (Chan, Golub & LeVeque), with float64 ``eps``.
    """
    xp = namespace(variances, counts, means)
    counts = counts[..., None]
    bound = counts * _EPS64 * variances + (counts * xp.abs(means) * _EPS64) ** 2
    constant = variances <= bound
    return xp.where(constant, 1.0, xp.sqrt(xp.where(constant, 1.0, variances)))


def ledoit_wolf_shrinkage(covariance, fourth_moment, counts, scale):
    """Ledoit–Wolf shrinkage of covariances on the standardized scale (batched over classes;
    the formula is in docs/gaussian.md).

    Args:
        covariance: MLE covariances S (..., D, D).
        fourth_moment: ``sum_i R_i ||z_i||^4`` (...,).
        counts: total weights n (...,).
        scale: feature scales s (..., D).

    Returns:
        (shrunk covariance (..., D, D), alpha (...,)).
    """
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
    """``N_k (8 eps m_k)^2`` (K, D): below this a class scatter is the rounding of centering
    rows at ``|m_k|`` (a spread of a few ulps of the mean), whatever the reference point."""
    eps = np.finfo(means.dtype).eps
    return counts[:, None] * (8.0 * eps * means) ** 2


def snap_constant_features(scatter, squares, full: bool = True, floor=None):
    """Zero the scatter of features whose variance is rounding noise of its own computation.

    The scatter is ``squares - between``; a feature that is constant within the group leaves a
    difference of order ``eps * squares`` instead of an exact 0. Left alone it would be whitened
    into a huge weight (LDA), count as a real direction in Ledoit–Wolf, or blow up a tiny
    smoothed variance (Gaussian NB); scikit-learn's two-pass moments give the exact 0. With
    ``floor`` (the group's :func:`centering_floor`), scatter within a few ulps of the means
    is zeroed too: when the rows sit far from the reference point relative to their spread,
    the squares are themselves rounding noise, and which noise depends on the summation order.
    """
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
    """1 where a feature's scatter ``diagonal`` is more than the rounding noise of computing it
    from second moments ``magnitude`` (and above the centering ``floor``), else 0 (the test of
    :func:`snap_constant_features`), in the scatter's dtype."""
    xp = namespace(diagonal, magnitude)
    eps = np.finfo(diagonal.dtype).eps
    noise = diagonal <= 64 * eps * magnitude
    if floor is not None:  # per-feature centering floor of the group (:func:`centering_floor`)
        noise = noise | (diagonal <= floor)
    # an overflowed moment (inf, or inf - inf) is kept, for the overflow check to name it
    live = ~noise | ~xp.isfinite(diagonal) | ~xp.isfinite(magnitude)
    return live.astype(diagonal.dtype)


#: Parameter of a shared full covariance fitted from fewer rows than features
#: (:func:`~genprob.story.keeps_rows`), in place of ``covariance``: rows ``G`` (m, D) with
#: ``covariance = G^T G`` (:func:`covariance_of` forms it on demand).
COVARIANCE_ROWS = "covariance" + PARAMETER_ROWS


def covariance_of(params):
    """The full covariance of ``params``: ``params["covariance"]``, or ``G^T G`` of their
    :data:`COVARIANCE_ROWS` (a D x D matrix formed on demand, which scoring never needs)."""
    return as_sample_sites(params)["covariance"]
