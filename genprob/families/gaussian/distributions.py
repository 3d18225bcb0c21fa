"""Gaussian class scores and the factorization of full covariances, one implementation each,
written against the array namespace of their inputs (NumPy in, NumPy out; JAX under ``jit``).

The derivations (retained-subspace density, the linear scores of a shared spread) are in
docs/gaussian.md.
"""

from __future__ import annotations

import math

import numpy as np

from genprob._arrays import namespace
from genprob._lazy import LazyModule, lazy_attribute

normals = LazyModule("genprob.families.gaussian.normals")
jax = LazyModule("jax")


__all__ = [
    "class_constant",
    "diagonal_log_normalizer",
    "full_factors",
    "full_gaussian",
    "linear_scores",
    "linear_terms",
    "quadratic_scores",
    "row_factors",
    "whiten_twice",
]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
NUMPYRO_CLASSES = {
    "DiagonalNormal": "genprob.families.gaussian.normals",
    "WhitenedNormal": "genprob.families.gaussian.normals",
}
__getattr__ = lazy_attribute(__name__, NUMPYRO_CLASSES)

_LOG_2PI = math.log(2.0 * math.pi)


def whiten_twice(vectors, whitening):
    """``P v = W W^T v`` for rows ``vectors`` (K, D) and the precision ``P = W W^T`` of a
    whitening (D, r), as two thin products, never the (D, D) precision."""
    return (vectors @ whitening) @ whitening.T


def diagonal_log_normalizer(variances):
    """``-1/2 sum_j log(2 pi var_kj)`` (K,) of per-feature variances."""
    xp = namespace(variances)
    return -0.5 * xp.sum(xp.log(2.0 * np.pi * variances), axis=-1)


def class_constant(rank, log_normalizer):
    """The log density's constant of each class: ``-rank/2 log 2 pi`` plus the log normalizer."""
    return -0.5 * rank * _LOG_2PI + log_normalizer


def linear_terms(loc, whitening, constant) -> dict:
    """What :func:`linear_scores` needs of K classes sharing a spread: the center ``c`` (mean of
    the class means), ``directions = P (mu_k - c)`` (D, K) and the class ``offset`` (K,).

    Args:
        loc: means (K, D). whitening: ``W`` (D, r) with ``W W^T = P``, or the inverse standard
            deviations (D,) of shared variances. constant: the class constant (scalar or (K,)).
    """
    xp = namespace(loc, whitening)
    center = xp.mean(loc, axis=0)
    if whitening.ndim == 1:
        mw = (loc - center) * whitening
        directions = (mw * whitening).T
    else:
        mw = (loc - center) @ whitening
        directions = whitening @ mw.T
    offset = -0.5 * xp.sum(mw * mw, axis=-1) + constant
    return {"center": center, "directions": directions, "offset": offset}


def linear_scores(rows, center, directions, offset):
    """``log p(x | k) + (x - c)^T P (x - c) / 2`` (n, K) of classes sharing the precision ``P``:
    ``(x - c) . directions_k + offset_k``, linear in the rows (terms of :func:`linear_terms`).
    Centering keeps the digits that separate the classes."""
    return (rows - center) @ directions + offset


def quadratic_scores(rows, loc, whitening, constant):
    """``log p(x | k)`` (n, K) of per-class spreads, each class's rows less its mean whitened
    directly (exact near the class), one class at a time (no (n, K, D) temporary).

    Args:
        rows: (n, D). loc: (K, D). whitening: (K, D, r) whitenings, or (K, D) variances of
            diagonal spreads (scored as scikit-learn's Gaussian NB, ``(x - mu)^2 / var``).
        constant: (K,) class constants.
    """
    xp, num_classes = namespace(rows, loc, whitening), loc.shape[0]
    if whitening.ndim == 2:
        # classes in blocks of (n, classes, D) temporaries of about 2 MB on the host, one fused
        # block under jit; squares before scaling: rows whose squares overflow are refused
        step = max(1, (1 << 18) // max(1, rows.size)) if xp is np else num_classes
        blocks = []
        for start in range(0, num_classes, step):
            centered = rows[:, None, :] - loc[None, start : start + step]
            blocks.append(xp.sum(centered * centered / whitening[start : start + step], axis=-1))
        return -0.5 * xp.concatenate(blocks, axis=-1) + constant

    def one_class(args):
        z = (rows - args[0]) @ args[1]
        return xp.einsum("ij,ij->i", z, z)  # row norms without a squared copy

    if xp is np:
        quadratic = np.stack([one_class(a) for a in zip(loc, whitening, strict=True)], axis=-1)
    else:  # one compiled loop: the program does not grow with the number of classes
        quadratic = jax.lax.map(one_class, (loc, whitening)).T
    return -0.5 * quadratic + constant


def _linalg(xp):
    """``(cholesky, solve_triangular, eigh, stop_gradient)`` of the namespace: a Cholesky
    factor that is NaN where the matrix is not positive definite, as in JAX."""
    if xp is np:

        def cholesky(matrix):
            try:
                return np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                return np.full(matrix.shape, np.nan, matrix.dtype)

        def solve(a, b, lower):
            # every class at once; SciPy's triangular solve starts BLAS threads even for 4 x 4
            # systems, and on a busy machine it waits for one that is descheduled
            return np.linalg.solve(a, b)

        return cholesky, solve, np.linalg.eigh, lambda a: a
    return (
        xp.linalg.cholesky,
        jax.scipy.linalg.solve_triangular,
        xp.linalg.eigh,
        jax.lax.stop_gradient,
    )


def full_factors(covariance, rank_tol) -> dict:
    """The factorization of full covariances (..., D, D) that scoring needs (once per fit).

    Returns:
        ``whitening`` W, ``log_normalizer`` and ``rank`` (see :class:`WhitenedNormal`), plus the
        Cholesky factor as ``coloring`` when ``rank_tol`` is None (the retained-subspace
        coloring ``Sigma W`` is left to :func:`full_gaussian`, which scoring does not need).
        A covariance that is not positive definite (without ``rank_tol``) gives NaN factors.
    """
    xp = namespace(covariance)
    cholesky, solve, eigh, stop_gradient = _linalg(xp)
    num_features = covariance.shape[-1]
    identity = xp.eye(num_features, dtype=covariance.dtype)
    if rank_tol is None:
        chol = cholesky(covariance)
        inverse_chol = solve(chol, xp.broadcast_to(identity, chol.shape), lower=True)
        log_normalizer = -xp.sum(xp.log(xp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        return {
            "whitening": xp.swapaxes(inverse_chol, -1, -2),
            "coloring": chol,
            "log_normalizer": log_normalizer,
            "rank": xp.full(log_normalizer.shape, float(num_features), covariance.dtype),
        }
    variances = xp.diagonal(covariance, axis1=-2, axis2=-1)
    scale = _feature_scale(xp, variances)
    correlation = covariance / (scale[..., :, None] * scale[..., None, :])
    eigenvalues, eigenvectors = eigh(stop_gradient(correlation))
    return _retained_factors(
        xp, eigenvalues, eigenvectors, variances, scale, rank_tol,
        lambda basis: xp.swapaxes(basis, -1, -2) @ covariance @ basis,
    )  # fmt: skip


def row_factors(rows, rank_tol) -> dict:
    """:func:`full_factors` of the covariance ``rows^T rows`` given by its rows (m, D), m < D,
    without forming it: the correlation's eigenpairs are the thin SVD of the standardized rows,
    so the work is O(m^2 D) and the whitening is (D, m). With ``coloring`` ``Sigma W`` (D, m).
    """
    xp = namespace(rows)
    _, _, _, stop_gradient = _linalg(xp)
    variances = xp.sum(rows * rows, axis=0)
    scale = _feature_scale(xp, variances)
    _, singular, right = xp.linalg.svd(stop_gradient(rows / scale), full_matrices=False)
    factors = _retained_factors(
        xp, singular * singular, right.T, variances, scale, rank_tol,
        lambda basis: (rows @ basis).T @ (rows @ basis),
    )  # fmt: skip
    return {**factors, "coloring": rows.T @ (rows @ factors["whitening"])}


def _feature_scale(xp, variances):
    """The features' sds, 1 where a variance is 0."""
    return xp.where(variances > 0, xp.sqrt(xp.where(variances > 0, variances, 1.0)), 1.0)


def _retained_factors(xp, eigenvalues, eigenvectors, variances, scale, rank_tol, inner_of):
    """Whitening, log normalizer and rank of the subspace of correlation eigenvalues above
    ``rank_tol^2`` (eigenvectors (..., D, m)); ``inner_of(B)`` is ``B^T Sigma B``."""
    cholesky, solve, _, stop_gradient = _linalg(xp)
    keep = eigenvalues > rank_tol**2
    # a zero-variance coordinate is exactly 0 in every kept eigenvector: drop its rounding-level
    # entries, which the other coordinates' 1/scale would otherwise let dominate the basis
    varies = (variances > 0)[..., :, None]
    basis = stop_gradient(eigenvectors / scale[..., :, None] * varies * keep[..., None, :])
    identity = xp.eye(eigenvalues.shape[-1], dtype=variances.dtype)
    dropped = xp.where(keep, 0.0, 1.0).astype(variances.dtype)[..., :, None] * identity
    basis_t = xp.swapaxes(basis, -1, -2)
    inner = inner_of(basis)
    chol = cholesky(0.5 * (inner + xp.swapaxes(inner, -1, -2)) + dropped)
    gram_chol = cholesky(basis_t @ basis + dropped)
    inverse_chol = solve(chol, xp.broadcast_to(identity, chol.shape), lower=True)
    log_normalizer = xp.sum(
        xp.log(xp.diagonal(gram_chol, axis1=-2, axis2=-1))
        - xp.log(xp.diagonal(chol, axis1=-2, axis2=-1)),
        axis=-1,
    )
    return {
        "whitening": basis @ xp.swapaxes(inverse_chol, -1, -2),
        "log_normalizer": log_normalizer,
        "rank": xp.sum(keep, axis=-1).astype(variances.dtype),
    }


def full_gaussian(means, covariance, rank_tol, factors=None) -> normals.WhitenedNormal:
    """Emission of full covariances: Cholesky whitening, or the retained-subspace Gaussian.

    Args:
        factors: :func:`full_factors` of ``covariance`` computed earlier (a fitted estimator
            keeps them), or None to factorize here.
    """
    if factors is None:
        factors = full_factors(covariance, rank_tol)
    whitening = factors["whitening"]
    coloring = factors.get("coloring")
    if coloring is None:
        coloring = covariance @ whitening
    return normals.WhitenedNormal(
        means, whitening, coloring, factors["log_normalizer"], factors["rank"]
    )
