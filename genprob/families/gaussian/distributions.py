"""Gaussian class scores, factorizations, observed-coordinate densities and conditional fills,
in their inputs' array namespace (derivations: docs/gaussian.md, docs/howto/missing.md)."""

from __future__ import annotations

import math

import numpy as np

from genprob._lazy import LazyModule, lazy_attribute
from genprob.engine._arrays import namespace, row_blocks

normals = LazyModule("genprob.families.gaussian.normals")
jax = LazyModule("jax")


__all__ = [
    "class_constant",
    "conditional_fill",
    "diagonal_log_normalizer",
    "full_factors",
    "full_gaussian",
    "linear_scores",
    "linear_terms",
    "observed_factors",
    "observed_log_density",
    "observed_patterns",
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
#: Largest feature count whose traced patterns are coded as integers (beyond it, one per row).
_MAX_CODED_FEATURES = 30


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
    """The ``center``, ``directions`` (D, K) and ``offset`` (K,) of :func:`linear_scores` from
    means (K, D), a whitening (D, r) or inverse sds (D,), and the class constant."""
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
    """``log p(x | k) + (x - c)^T P (x - c) / 2`` (n, K) of classes sharing a spread."""
    return (rows - center) @ directions + offset


def quadratic_scores(rows, loc, whitening, constant):
    """``log p(x | k)`` (n, K) of per-class spreads: whitenings (K, D, r) or variances (K, D),
    one class at a time (no (n, K, D) temporary)."""
    xp, num_classes = namespace(rows, loc, whitening), loc.shape[0]
    if whitening.ndim == 2:
        # host blocks of ~2 MB (one fused block under jit); squares first: overflows are refused
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
    """``(cholesky, solve_triangular, eigh, stop_gradient)``; NumPy's Cholesky NaN as JAX's."""
    if xp is np:

        def cholesky(matrix):
            try:
                return np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                return np.full(matrix.shape, np.nan, matrix.dtype)

        def solve(a, b, lower):
            # every class at once: SciPy's triangular solve waits on BLAS threads even at 4 x 4
            return np.linalg.solve(a, b)

        return cholesky, solve, np.linalg.eigh, lambda a: a
    return (
        xp.linalg.cholesky,
        jax.scipy.linalg.solve_triangular,
        xp.linalg.eigh,
        jax.lax.stop_gradient,
    )


def full_factors(covariance, rank_tol) -> dict:
    """``whitening``, ``log_normalizer``, ``rank`` (:class:`WhitenedNormal`) of full covariances
    (..., D, D), and the Cholesky ``coloring`` without ``rank_tol``; NaN if not definite."""
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
    """:func:`full_factors` of ``rows^T rows`` from its rows (m, D) by a thin SVD, O(m^2 D)."""
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
    """Factors on correlation eigenvalues above ``rank_tol^2``; ``inner_of(B) = B^T Sigma B``."""
    cholesky, solve, _, stop_gradient = _linalg(xp)
    keep = eigenvalues > rank_tol**2
    # zero-variance coordinates: drop rounding-level entries that 1/scale would blow up
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
    """Emission of full covariances, from their :func:`full_factors` (computed if None)."""
    if factors is None:
        factors = full_factors(covariance, rank_tol)
    whitening = factors["whitening"]
    coloring = factors.get("coloring")
    if coloring is None:
        coloring = covariance @ whitening
    return normals.WhitenedNormal(
        means, whitening, coloring, factors["log_normalizer"], factors["rank"]
    )


# -- missing coordinates -------------------------------------------------------------------------
def observed_patterns(observed):
    """``(patterns (P, D), index (n,))``: the distinct rows of the mask ``observed`` (n, D) and
    each row's pattern (JAX: ``P = min(n, 2^D)`` static slots, or one per row past 30 features)."""
    xp = namespace(observed)
    num_rows, num_features = observed.shape
    if num_features > _MAX_CODED_FEATURES:
        if xp is not np:
            return observed, xp.arange(num_rows)
        unique, index = np.unique(observed, axis=0, return_inverse=True)
        return unique, index.reshape(-1)
    # each row's pattern as one integer: a 1-D unique (sorting rows of a mask is much slower)
    bits = xp.arange(num_features, dtype=xp.int32)
    code = observed.astype(xp.int32) @ (xp.int32(1) << bits)
    if xp is np:
        unique, index = np.unique(code, return_inverse=True)
    else:
        size = min(num_rows, 2**num_features)
        unique, index = xp.unique(code, size=size, fill_value=code[0], return_inverse=True)
    return ((unique[:, None] >> bits) & 1).astype(bool), index.reshape(-1)


def observed_factors(covariance, pattern_mask) -> dict:
    """:func:`full_factors` (P, K) of ``P Sigma P + (I - P)`` per pattern ``P`` (P, D)."""
    xp = namespace(covariance, pattern_mask)
    mask = xp.asarray(pattern_mask).astype(covariance.dtype)
    outer = mask[:, :, None] * mask[:, None, :]
    eye = xp.eye(covariance.shape[-1], dtype=covariance.dtype)
    embedded = covariance[None] * outer[:, None] + (eye * (1.0 - mask)[:, None, :])[:, None]
    return full_factors(embedded, None)


def _by_pattern(vectors, matrices, index, transpose=False):
    """``v_i W_p(i)`` (or ``W_p(i) v_i``) (n, K, D) with each row's pattern's matrices."""
    xp = namespace(vectors, matrices)
    if xp is not np:
        subscripts = "nke,nkde->nkd" if transpose else "nkd,nkde->nke"
        return xp.einsum(subscripts, vectors, matrices[index])
    if transpose:
        matrices = np.swapaxes(matrices, -1, -2)
    if matrices.shape[0] == 1:  # every row alike (all observed): EM's E-step, no sort
        return _per_class_product(vectors, matrices[0])
    out = np.empty(vectors.shape, np.result_type(vectors, matrices))
    order = np.argsort(index, kind="stable")  # each pattern's rows as one slice of the order
    bounds = np.searchsorted(index[order], np.arange(matrices.shape[0] + 1))
    for p in range(matrices.shape[0]):
        rows = order[bounds[p] : bounds[p + 1]]
        out[rows] = _per_class_product(vectors[rows], matrices[p])
    return out


#: a BLAS product's rows x D x E at most this: OpenBLAS runs it on one thread (its threads
#: would wait for cores other work uses); docs/benchmarks.md measures where they start
_ONE_THREAD_SIZE = 2**18


def _per_class_product(vectors, matrices):
    """``v_ik W_k`` (n, K, E) of ``vectors`` (n, K, D), ``matrices`` (K, D, E): a BLAS product
    per class (einsum's loop is ~13x slower at n=180, K=56, D=10), in blocks of rows."""
    step = max(1, _ONE_THREAD_SIZE // (matrices.shape[-2] * matrices.shape[-1]))
    out = np.empty(vectors.shape[:-1] + matrices.shape[-1:], np.result_type(vectors, matrices))
    for rows, block in row_blocks(step, vectors):
        np.matmul(np.swapaxes(block, 0, 1), matrices, out=np.swapaxes(out[rows], 0, 1))
    return out


def observed_log_density(rows, observed, loc, factors, patterns):
    """``log N(x_o; mu_k,o, Sigma_k,oo)`` (n, K) of the observed coordinates (NaN if singular)."""
    pattern_mask, index = patterns
    xp = namespace(rows, loc, factors["whitening"])
    count = xp.sum(xp.asarray(pattern_mask), axis=-1).astype(rows.dtype)[:, None]  # (P, 1)
    constant = class_constant(count, factors["log_normalizer"])  # (P, K)
    centered = rows[:, None, :] - loc
    if xp is not np or not np.all(pattern_mask):  # all observed (EM's E-step): nothing to mask
        centered = xp.where(observed[:, None, :], centered, 0.0)
    z = _by_pattern(centered, factors["whitening"], index)
    return -0.5 * xp.sum(z * z, axis=-1) + constant[index]


def conditional_fill(rows, observed, loc, covariance, factors, patterns):
    """``(filled (n, K, D), conditional (P, K, D, D))``: rows with missing blocks at their
    conditional means under each class, and each pattern's conditional covariance."""
    pattern_mask, index = patterns
    xp = namespace(rows, loc, covariance)
    whitening = factors["whitening"]  # W W^T = Sigma~^-1
    deviation = xp.where(observed[:, None, :], rows[:, None, :] - loc, 0.0)
    solved = _by_pattern(_by_pattern(deviation, whitening, index), whitening, index, True)
    predicted = loc + xp.einsum("kde,nke->nkd", covariance, solved)
    filled = xp.where(observed[:, None, :], rows[:, None, :], predicted)
    # Sigma P Sigma~^-1 P Sigma, with P Sigma~^-1 P = Sigma~^-1 less the identity's missing block
    eye = xp.eye(rows.shape[-1], dtype=covariance.dtype)
    missing = (1.0 - xp.asarray(pattern_mask).astype(covariance.dtype))[:, None, :]  # (P, 1, D)
    inner = whitening @ xp.swapaxes(whitening, -1, -2) - eye * missing[..., None, :]
    explained = covariance[None] @ inner @ covariance[None]
    block = missing[..., :, None] * missing[..., None, :]
    return filled, (covariance[None] - explained) * block
