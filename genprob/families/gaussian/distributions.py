"""Gaussian emissions scored fast: a whitening form (full covariances) and a diagonal form.

The derivations (retained-subspace density, the diagonal form's rounding bound) are in
docs/gaussian.md.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from jax.scipy.linalg import solve_triangular

from genprob._arrays import namespace
from genprob._lazy import LazyModule, lazy_attribute

normals = LazyModule("genprob.families.gaussian.normals")


__all__ = [
    "cholesky_factors",
    "full_factors",
    "full_gaussian",
    "full_rank_factors",
    "gathered_scores",
    "linear_terms",
    "per_class_quadratic_blocks",
    "row_scale",
    "shared_linear_blocks",
    "shared_linear_scores",
    "whiten_twice",
]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(
    __name__,
    {
        "DiagonalNormal": "genprob.families.gaussian.normals",
        "WhitenedNormal": "genprob.families.gaussian.normals",
    },
)

_LOG_2PI = math.log(2.0 * math.pi)


def _less_extreme(values, extreme, scale, tolerance):
    """``values`` (n, K) less their row's ``extreme`` (min or max), exactly 0 at the extreme.

    XLA may compute ``values`` twice, in the fusion that reduces them and in the one that
    subtracts, with different rounding (FMA or not); on a row scaled by ``s ~ 1e300`` the
    nonzero difference, multiplied back by ``s``, is ~1e282 where 0 is meant. So on scaled rows
    (``s > 1``), entries within ``tolerance`` of the extreme (:func:`_rounding`: below the
    rounding error of ``values``, so no information is lost) are set to 0. Rows with ``s = 1``
    keep the plain difference.

    Args:
        scale: (n, 1) row scales. tolerance: (n, 1) rounding error of a row's ``values``.
    """
    xp = namespace(values)
    excess = values - extreme(values, axis=-1, keepdims=True)
    return xp.where((scale > 1) & (xp.abs(excess) <= tolerance), 0.0, excess)


def _rounding(num_features, magnitude):
    """``4 (D + 2) eps magnitude``: what computing a D-term sum twice can differ by, given a
    bound ``magnitude`` on the sum of its terms' absolute values."""
    return 4 * (num_features + 2) * np.finfo(magnitude.dtype).eps * magnitude


def row_scale(rows, center, gain):
    """Per-row power of two ``s >= 1`` under which whitened rows square without overflow.

    ``s = 1`` (bitwise the unscaled arithmetic) while ``max(|x|, |c|) * gain``, a bound on the
    whitened row, stays below the dtype's ``max ** (1/4)``; otherwise ``s`` is the row's binary
    exponent, so that ``|x / s| < 4``. Dividing by a power of two is exact, so ``(x - mu) / s``
    loses nothing beyond underflow (derivation in docs/gaussian.md).

    Args:
        rows: (..., D). center: (D,). gain: bound on ``|whitened| / |x|`` (a scalar).
    """
    xp = namespace(rows)
    magnitude = xp.maximum(xp.max(xp.abs(rows), axis=-1), xp.max(xp.abs(center)))
    safe = magnitude * gain <= np.finfo(rows.dtype).max ** 0.25
    _, exponent = xp.frexp(magnitude)
    # 1 / s stays a normal number: XLA may divide by multiplying with it, flushing subnormals
    exponent = xp.clip(exponent - 1, 0, -np.finfo(rows.dtype).minexp)
    scale = xp.ldexp(xp.ones_like(magnitude), exponent)
    return xp.where(safe, xp.ones_like(magnitude), scale)


def whiten_twice(vectors, whitening):
    """``P v = W W^T v`` for rows ``vectors`` (K, D) and the precision ``P = W W^T`` of a
    whitening (D, r), as two thin products (NumPy or JAX), never the (D, D) precision."""
    return (vectors @ whitening) @ whitening.T


def whitening_gain(whitening):
    """Bound on ``|x W| / |x|`` over every class: the largest column sum of ``|W|`` (NumPy or
    JAX), what :func:`row_scale` scales rows by."""
    xp = namespace(whitening)
    return xp.max(xp.sum(xp.abs(whitening), axis=-2))


def diagonal_log_normalizer(variances):
    """``-1/2 sum_j log(2 pi var_kj)`` (K,) of per-feature variances (NumPy or JAX)."""
    xp = namespace(variances)
    return -0.5 * xp.sum(xp.log(2.0 * np.pi * variances), axis=-1)


def class_constant(rank, log_normalizer):
    """The log density's constant of each class: ``-rank/2 log 2 pi`` plus the log normalizer."""
    return -0.5 * rank * _LOG_2PI + log_normalizer


def linear_terms(loc, whitening, log_normalizer, rank, xp=jnp) -> dict:
    """What :func:`shared_linear_scores` needs of K classes sharing a whitening ``W``: the
    center ``c`` (mean of the class means), the row-scale gain, ``directions = W W^T (mu_k -
    c)`` (D, K) and the class ``offset`` (K,). A fitted estimator computes them once on the
    host (``xp=numpy``: no compilation), so that scoring costs one (n, D) x (D, K) product.

    Args:
        loc: means (K, D). whitening: (D, r). log_normalizer, rank: as in
            :class:`WhitenedNormal` (scalars for a shared ``W``).
    """
    center = xp.mean(loc, axis=0)
    gain = whitening_gain(whitening)
    mw = (loc - center) @ whitening
    offset = -0.5 * xp.sum(mw * mw, axis=-1) + class_constant(rank, log_normalizer)
    return {"center": center, "gain": gain, "directions": whitening @ mw.T, "offset": offset}


def shared_linear_scores(rows, center, gain, directions, offset):
    """Scores of rows (n, D) against K classes sharing a whitening, from :func:`linear_terms`:
    ``s max-less((x - c) / s . directions_k) + offset_k``, the log density less a term of the
    row.

    Rows are scaled as for the quadratic (:func:`row_scale`), so the products stay finite for
    any finite row; on scaled rows the row's maximum is taken out (:func:`_less_extreme`)
    before multiplying back by ``s``. Host rows (NumPy) are scored on the host in blocks that
    stay in cache (:func:`shared_linear_blocks`; the terms must then be NumPy arrays too).
    """
    if not isinstance(rows, np.ndarray):
        return _linear_block(jnp, rows, center, gain, directions, offset)
    return gathered_scores(rows, shared_linear_blocks(rows, center, gain, directions, offset))


def shared_linear_blocks(rows, center, gain, directions, offset):
    """:func:`shared_linear_scores` of host rows, block by block: ``(start, scores)`` with
    ``scores`` (K, m), class-major, the scores of ``rows[start : start + m]``, a buffer the
    next block overwrites (the caller may change it in place). About one pass over the rows.

    Rows are taken less the center only where it matters: when ``|c| . |directions_k|``, what
    ``x . d_k - c . d_k`` may lose to rounding beyond ``(x - c) . d_k``, times the dtype's
    rounding stays below :data:`_UNCENTERED_ROUNDING`, the center moves into the offset and the
    product reads the rows themselves (no subtraction pass). Those blocks are checked after the
    product, not before: a product that overflowed anywhere leaves a non-finite score (IEEE
    overflow is never silent), and only then is the block scored again with scaled rows; a
    finite score carries the rounding of the scaled one (both ``eps sum_j |x_j d_jk|``).
    """
    directions_t = np.ascontiguousarray(directions.T)
    dtype = np.result_type(rows, directions)
    spill = np.max(np.abs(center) @ np.abs(directions), initial=0.0) * np.finfo(dtype).eps
    uncentered = spill <= _UNCENTERED_ROUNDING
    if uncentered:
        # no copy of the rows: blocks large enough for a multithreaded product
        blocks = _HostBlocks(
            rows, None, gain, center[None], entries=_HOST_BLOCK_ENTRIES << 2, checked=False
        )
        shifted = (offset - center @ directions)[:, None]
    else:
        blocks = _HostBlocks(rows, center[None], gain)
        shifted = offset[:, None]
    buffer = np.empty((offset.shape[-1], blocks.step), dtype)
    for start, block, centered in blocks:
        scores = buffer[:, : len(block)]
        if centered is not None:
            # rows at scale 1 (row_scale): the row maximum, a term of the row, need not be
            # taken out; unchecked (uncentered) rows may still overflow, found just below
            with np.errstate(over="ignore", invalid="ignore"):
                np.matmul(directions_t, centered[0].T, out=scores)
                scores += shifted
        # rows too large for the unscaled arithmetic: the size test failed, or (unchecked rows)
        # one sum finds an overflow or a NaN row anywhere in the block's scores
        if centered is None or (uncentered and not np.isfinite(np.add.reduce(scores, axis=None))):
            with np.errstate(over="ignore"):  # a class far from a huge row scores -inf
                scores[...] = _linear_block(np, block, center, gain, directions, offset).T
        yield start, scores


#: Rounding ``eps |c| . |d_k|`` that LDA's host scores may add to a log posterior by not
#: centering the rows (float64: ``|c| . |d_k|`` up to 2^19; float32 rows are always centered).
_UNCENTERED_ROUNDING = 2.0**-33


def gathered_scores(rows, blocks):
    """The (n, K) scores of ``rows`` from their class-major ``(start, scores)`` blocks (at least
    one)."""
    out = None
    for start, scores in blocks:
        if out is None:
            out = np.empty(rows.shape[:-1] + scores.shape[:1], scores.dtype)
        out[start : start + scores.shape[1]] = scores.T
    return out


def per_class_quadratic_blocks(rows, loc, whitening, constant):
    """Per-class Gaussian scores of host rows, up to a term of the row (as
    :meth:`WhitenedNormal.quadratic_scores` and :meth:`DiagonalNormal.quadratic_scores`):
    ``-||(x - mu_k) W_k||^2 / 2 + constant_k``, block by block, class-major (K, m), as
    :func:`shared_linear_blocks`.

    Each class whitens ``x - mu_k`` directly (exact near the class, no expansion error bound
    to check): per block, K (m, D) x (D, D) products, or K elementwise products with the
    inverse standard deviations of a diagonal spread, one class at a time so that one (m, D)
    buffer stays in cache; no compilation per row count. Blocks holding a row too large to
    square unscaled take :func:`row_scale`'s scaled path, as on the device.

    Args:
        rows: (n, D). loc: (K, D). whitening: (K, D, D), or (K, D) for diagonal spreads
            (``1 / sd``). constant: (K,) class constants.
    """
    diagonal = whitening.ndim == 2
    center = loc.mean(axis=0)
    gain = np.max(np.abs(whitening)) if diagonal else whitening_gain(whitening)
    blocks = _HostBlocks(rows, None, gain, center)
    dtype = np.result_type(rows, whitening)
    buffer = np.empty(constant.shape + (blocks.step,), dtype)
    num_features = rows.shape[-1]
    centered = np.empty(blocks.step * num_features, rows.dtype)
    whitened = np.empty(blocks.step * num_features, dtype)
    tiled_loc = blocks.tiled_like(loc)
    tiled = blocks.tiled_like(whitening) if diagonal else None
    for start, block, unscaled in blocks:
        scores = buffer[:, : len(block)]
        if unscaled is None:
            with np.errstate(over="ignore", under="ignore"):
                scores[...] = _scaled_quadratic_block(block, loc, whitening, center, gain).T
        else:
            size = len(block) * num_features
            entries = block.reshape(-1)
            d = centered[:size].reshape(len(block), num_features)
            z = whitened[:size].reshape(len(block), num_features)
            for k in range(len(loc)):
                if tiled_loc is None:
                    np.subtract(block, loc[k], out=d)
                else:
                    np.subtract(entries, tiled_loc[k, :size], out=centered[:size])
                if tiled is not None:
                    np.multiply(centered[:size], tiled[k, :size], out=whitened[:size])
                elif diagonal:
                    np.multiply(d, whitening[k], out=z)
                else:
                    np.matmul(d, whitening[k], out=z)
                np.einsum("nd,nd->n", z, z, out=scores[k])
        scores *= -0.5
        scores += constant[:, None]
        yield start, scores


def _scaled_quadratic_block(rows, loc, whitening, center, gain):
    """``q`` of :func:`per_class_quadratic_blocks` for rows that need :func:`row_scale`: the
    device's direct path in NumPy, less its row minimum (-2x the scores, before constants)."""
    scale = row_scale(rows, center, gain)[..., None]
    diagonal = whitening.ndim == 2
    quadratic = np.stack(
        [
            np.sum(
                np.square(
                    (rows / scale - mu / scale) * w if diagonal else (rows / scale - mu / scale) @ w
                ),
                axis=-1,
            )
            for mu, w in zip(loc, whitening, strict=True)
        ],
        axis=-1,
    )
    lowest = np.min(quadratic, axis=-1, keepdims=True)
    excess = _less_extreme(quadratic, np.min, scale, _rounding(rows.shape[-1], lowest))
    return (excess * scale) * scale


class _HostBlocks:
    """Blocks of host rows (n, D) that stay in cache, each with its rows less each of
    ``centers`` (C, D) (the rows themselves, (1, m, D), for ``centers=None``), or None where a
    row is too large for the unscaled arithmetic (``max(|x|, |c|) gain`` above the dtype's
    ``max ** (1/4)``, ``c`` the ``reference`` centers: :func:`row_scale` then applies).

    A block passes when its sum of squares (one BLAS dot, in cache) bounds every entry below
    the limit; only a block that fails it is searched for its largest entry. Over several
    blocks the subtraction runs on flat buffers against the centers tiled to a block
    (:meth:`tiled_like`): a broadcast over rows of D entries runs NumPy's inner loop D entries
    at a time, 2-3x slower. Fewer rows are broadcast, not worth a tiled copy. With
    ``checked=False`` no block is tested (its rows come back unscaled): the caller tests what it
    computed from them instead.
    """

    def __init__(self, rows, centers, gain, reference=None, entries=None, checked=True):
        num_features = rows.shape[-1]
        self.rows = rows
        self.checked = checked  # False: the caller checks its results (rows are never scaled)
        self.centers = None if centers is None else centers.astype(rows.dtype, copy=False)
        entries = _HOST_BLOCK_ENTRIES if entries is None else entries
        self.step = max(64, entries // max(num_features, 1))
        self.tiling = len(rows) > 2 * self.step
        self.step = min(self.step, max(len(rows), 1))
        reference = centers if reference is None else reference
        self.limit = np.finfo(rows.dtype).max ** 0.25 / gain if gain > 0 else np.inf
        self.center_magnitude = np.max(np.abs(reference), initial=0.0)
        if self.centers is None:
            self.tiled = self.buffer = None
        else:
            self.tiled = self.tiled_like(self.centers)
            self.buffer = np.empty((len(centers), self.step * num_features), rows.dtype)

    def tiled_like(self, values):
        """``values`` (C, D) repeated over a block's rows, flat (C, step D); None without
        tiling."""
        if not self.tiling:
            return None
        return np.tile(values.astype(self.rows.dtype, copy=False), (1, self.step))

    def _fits(self, block, entries):
        """Whether every row of ``block`` (flat ``entries``) takes the unscaled arithmetic."""
        if self.center_magnitude > self.limit:
            return False
        with np.errstate(over="ignore"):
            squares = float(np.dot(entries, entries))
        if squares < np.inf and squares <= self.limit * self.limit:  # |x| <= sqrt(squares)
            return True
        peak = max(block.max(initial=0.0), -block.min(initial=0.0))  # no |x| temporary
        return peak <= self.limit

    def __iter__(self):
        num_features = self.rows.shape[-1]
        # several blocks: C order, so that each block's flat view is not a copy
        rows = np.ascontiguousarray(self.rows) if self.tiling else self.rows
        for start in range(0, max(len(rows), 1), self.step):  # no rows: one empty block
            block = rows[start : start + self.step]
            size = len(block) * num_features
            entries = block.reshape(-1)
            if self.checked and not self._fits(block, entries):
                yield start, block, None
                continue
            if self.centers is None:
                yield start, block, block[None]
                continue
            centered = self.buffer[:, :size].reshape(len(self.buffer), len(block), num_features)
            if self.tiled is None:
                np.subtract(block, self.centers[:, None, :], out=centered)
            else:
                np.subtract(
                    entries, self.tiled[:, :size], out=centered.reshape(len(self.buffer), -1)
                )
            yield start, block, centered


#: Entries of one block of host rows scored at a time (1 MiB of float64: in cache; 4 MiB where
#: the rows are read but not copied, so that OpenBLAS runs the product on several threads).
_HOST_BLOCK_ENTRIES = 1 << 17


def _linear_block(xp, rows, center, gain, directions, offset):
    scale = row_scale(rows, center, gain)[..., None]
    centered = rows / scale - center / scale
    dots = centered @ directions
    # Cauchy-Schwarz: sum_d |x_d directions_dk| <= ||x|| max_k ||directions_k||
    magnitude = xp.linalg.norm(centered, axis=-1, keepdims=True) * xp.max(
        xp.linalg.norm(directions, axis=0)
    )
    excess = _less_extreme(dots, xp.max, scale, _rounding(rows.shape[-1], magnitude))
    return excess * scale + offset


def _elementwise_quadratic(value, loc, variances):
    """``sum_j (x_j - mu_j)^2 / s_j`` term by term (scikit-learn's Gaussian NB arithmetic)."""
    return jnp.sum((value - loc) ** 2 / variances, axis=-1)


def full_factors(covariance, rank_tol) -> dict:
    """The factorization of full covariances that scoring needs (computed once per fit).

    Returns:
        ``whitening`` W, ``log_normalizer`` and ``rank`` (see :class:`WhitenedNormal`), plus the
        Cholesky factor as ``coloring`` when ``rank_tol`` is None (the retained-subspace
        coloring ``Sigma W`` is left to :func:`full_gaussian`, which scoring does not need).
    """
    num_features = covariance.shape[-1]
    identity = jnp.eye(num_features, dtype=covariance.dtype)
    if rank_tol is None:
        chol = jnp.linalg.cholesky(covariance)
        inverse_chol = solve_triangular(chol, jnp.broadcast_to(identity, chol.shape), lower=True)
        whitening = jnp.swapaxes(inverse_chol, -1, -2)
        log_normalizer = -jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        rank = jnp.full(log_normalizer.shape, float(num_features), covariance.dtype)
        return {
            "whitening": whitening,
            "coloring": chol,
            "log_normalizer": log_normalizer,
            "rank": rank,
        }
    variances = jnp.diagonal(covariance, axis1=-2, axis2=-1)
    scale = jnp.where(variances > 0, jnp.sqrt(jnp.where(variances > 0, variances, 1.0)), 1.0)
    correlation = covariance / (scale[..., :, None] * scale[..., None, :])
    eigenvalues, eigenvectors = jnp.linalg.eigh(jax.lax.stop_gradient(correlation))
    keep = eigenvalues > rank_tol**2
    # a zero-variance coordinate is exactly 0 in every kept eigenvector: drop its rounding-level
    # entries, which the other coordinates' 1/scale would otherwise let dominate the basis
    varies = (variances > 0)[..., :, None]
    basis = eigenvectors / scale[..., :, None] * varies * keep[..., None, :]
    basis = jax.lax.stop_gradient(basis)
    dropped = jnp.where(keep, 0.0, 1.0).astype(covariance.dtype)
    dropped = dropped[..., :, None] * identity
    basis_t = jnp.swapaxes(basis, -1, -2)
    inner = basis_t @ covariance @ basis
    chol = jnp.linalg.cholesky(0.5 * (inner + jnp.swapaxes(inner, -1, -2)) + dropped)
    gram_chol = jnp.linalg.cholesky(basis_t @ basis + dropped)
    inverse_chol = solve_triangular(chol, jnp.broadcast_to(identity, chol.shape), lower=True)
    whitening = basis @ jnp.swapaxes(inverse_chol, -1, -2)
    log_normalizer = jnp.sum(
        jnp.log(jnp.diagonal(gram_chol, axis1=-2, axis2=-1))
        - jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)),
        axis=-1,
    )
    rank = jnp.sum(keep, axis=-1).astype(covariance.dtype)
    return {"whitening": whitening, "log_normalizer": log_normalizer, "rank": rank}


#: Shared covariances at least this wide try :func:`low_rank_factors` first (wide data, n < D).
LOW_RANK_MIN_FEATURES = 512
#: First subspace size of the range finder without a rank bound (doubled while too small).
_FIRST_PROBES = 256
#: Probes beyond a caller's rank bound: the sketch then spans the range with margin.
_OVERSAMPLING = 10


def low_rank_factors(covariance, rank_tol, seed: int = 0, rank_bound=None) -> dict | None:
    """:func:`full_factors` of one shared (D, D) covariance whose numerical rank r is low, in
    O(D^2 r) on the host instead of the O(D^3) eigendecomposition; None when the rank is not low.

    A randomized range finder (Halko, Martinsson & Tropp 2011, SIAM Review 53(2), alg. 4.1)
    sketches the correlation matrix C with k Gaussian probes and orthonormalizes the sketch (Q).
    The subspace is accepted when the a posteriori bound of their section 4.3, ``10 sqrt(2/pi)``
    times the largest residual ``(I - Q Q^T) C w`` of 10 fresh probes w (it bounds the norm of
    ``(I - Q Q^T) C`` with probability at least 1 - 1e-10), is below 1% of the retention
    threshold ``rank_tol**2``: every eigenvalue left out would have been dropped by the full
    eigendecomposition too. Otherwise the subspace grows by as many probes again (k doubles) up
    to D / 2, then None. The kept eigenvectors span the same subspace and the whitening agrees on
    it, so scores agree to rounding. The whitening is (D, r): scoring costs O(n D r).

    Args:
        rank_bound: the rank the caller expects at most (a fit of n rows: n), or None. It sizes
            the first sketch (``rank_bound + 10`` probes); a wrong bound costs time, not accuracy.
    """
    covariance = np.asarray(covariance)
    if rank_tol is None or covariance.ndim != 2 or covariance.shape[0] < LOW_RANK_MIN_FEATURES:
        return None
    num_features = covariance.shape[0]
    threshold = float(rank_tol) ** 2
    if not threshold > 0:
        return None
    probes = _FIRST_PROBES
    if rank_bound is not None and 0 < rank_bound + _OVERSAMPLING <= num_features // 2:
        probes = max(int(rank_bound) + _OVERSAMPLING, 2 * _OVERSAMPLING)
    variances = np.diagonal(covariance)
    varies = variances > 0
    scale = np.where(varies, np.sqrt(np.where(varies, variances, 1.0)), 1.0)
    correlation = covariance / scale[:, None] / scale[None, :]
    rng = np.random.default_rng(seed)
    tests = correlation @ rng.standard_normal((num_features, 10))
    Q = scipy.linalg.qr(
        correlation @ rng.standard_normal((num_features, probes)),
        mode="economic",
        check_finite=False,
    )[0]
    while True:
        residual = np.linalg.norm(tests - Q @ (Q.T @ tests), axis=0).max()
        if 10.0 * math.sqrt(2.0 / math.pi) * residual <= 0.01 * threshold:
            break
        more = min(Q.shape[1], num_features // 2 - Q.shape[1])
        if more <= 0:  # past D / 2 the eigendecomposition is as cheap
            return None
        block = correlation @ rng.standard_normal((num_features, more))
        # Householder QR of [Q, block] stays orthonormal when the block adds nothing new
        # (Gram-Schmidt against Q would normalize rounding noise into skewed columns)
        Q = scipy.linalg.qr(
            np.concatenate([Q, block], axis=1), mode="economic", check_finite=False
        )[0]
    small = Q.T @ (correlation @ Q)
    small = 0.5 * (small + small.T)
    eigenvalues, vectors = scipy.linalg.eigh(small, check_finite=False)
    keep = eigenvalues > threshold
    vectors = vectors[:, keep]
    basis = (Q @ vectors) / scale[:, None] * varies[:, None]  # (D, r)
    # basis^T Sigma basis = V^T (Q^T C Q) V: the (r, r) matrix without another D^2 r product
    inner = vectors.T @ small @ vectors
    chol = np.linalg.cholesky(0.5 * (inner + inner.T))
    gram_chol = np.linalg.cholesky(basis.T @ basis)
    inverse_chol = _triangular_inverse(chol)
    if inverse_chol is None:
        return None
    log_normalizer = np.sum(np.log(np.diagonal(gram_chol)) - np.log(np.diagonal(chol)))
    return {
        "whitening": basis @ inverse_chol.T,
        "log_normalizer": np.asarray(log_normalizer, covariance.dtype),
        "rank": np.asarray(float(basis.shape[1]), covariance.dtype),
    }


def full_rank_factors(covariance, rank_tol) -> dict | None:
    """:func:`full_factors` of one shared (D, D) covariance that keeps all D directions, by a
    host Cholesky factorization (O(D^3 / 3)) instead of the eigendecomposition; None unless
    every correlation eigenvalue is certainly above the retention threshold ``rank_tol**2``.

    A regularized covariance (shrinkage, ``reg_param``) is of full rank: there the
    eigendecomposition keeps every direction, and the whitening ``W = diag(1/s) L^-T``
    (``L L^T = C``, the correlation matrix, ``s`` the standard deviations) has the same ``W W^T
    = Sigma^-1`` and log normalizer ``-1/2 log det Sigma``, so scores agree to rounding. The
    smallest eigenvalue of C is at least ``1 / tr(C^-1) = 1 / ||L^-1||_F^2``; when that bound
    does not clear twice the margin (twice the threshold plus the rounding of Cholesky and of
    the eigendecomposition, ``4 D eps ||C||``, with ``||C||_2 <= ||C||_inf``, the largest
    absolute row sum), a second Cholesky of ``C - margin I`` decides. At any width: on the
    host, a small covariance costs microseconds where a compiled eigendecomposition costs a
    compilation in each new process.
    """
    covariance = np.asarray(covariance)
    if rank_tol is None or covariance.ndim != 2 or covariance.shape[0] == 0:
        return None
    if covariance.dtype.kind != "f" or not np.all(np.isfinite(covariance)):
        return None
    num_features = covariance.shape[0]
    variances = np.diagonal(covariance)
    if not np.all(variances > 0):  # a constant feature: not of full rank
        return None
    scale = np.sqrt(variances)
    correlation = covariance / scale[:, None] / scale[None, :]
    eps = float(np.finfo(covariance.dtype).eps)
    norm = float(np.max(np.sum(np.abs(correlation), axis=1)))
    margin = 2.0 * float(rank_tol) ** 2 + 4.0 * num_features * eps * norm
    try:
        chol = scipy.linalg.cholesky(correlation, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    inverse_chol, info = scipy.linalg.lapack.get_lapack_funcs("trtri", (chol,))(chol, lower=1)
    if info != 0 or not np.all(np.isfinite(inverse_chol)):
        return None
    inverse_chol = np.tril(inverse_chol)
    if not 1.0 / float(np.sum(inverse_chol * inverse_chol)) > 2.0 * margin:
        shifted = correlation - margin * np.eye(num_features, dtype=covariance.dtype)
        try:
            scipy.linalg.cholesky(shifted, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return None
    log_normalizer = -np.sum(np.log(scale)) - np.sum(np.log(np.diagonal(chol)))
    return {
        "whitening": (inverse_chol.T / scale[:, None]).astype(covariance.dtype, copy=False),
        "log_normalizer": np.asarray(log_normalizer, covariance.dtype),
        "rank": np.asarray(float(num_features), covariance.dtype),
    }


def _triangular_inverse(chol):
    """Inverse of a lower-triangular ``chol`` by LAPACK's ``trtri``, or None when singular or
    not finite. (SciPy's ``solve_triangular`` against the identity took 8 ms per 4 x 4 matrix
    in a fresh process, most of a first QDA fit, against microseconds here.)"""
    inverse, info = scipy.linalg.lapack.get_lapack_funcs("trtri", (chol,))(chol, lower=1)
    if info != 0 or not np.all(np.isfinite(inverse)):
        return None
    return np.tril(inverse)


def cholesky_factors(covariance) -> dict | None:
    """:func:`full_factors` with ``rank_tol=None`` (Cholesky whitening) of covariances
    (..., D, D) on the host, or None when one is not positive definite (then the compiled
    version decides, as before)."""
    covariance = np.asarray(covariance)
    if covariance.dtype.kind != "f" or not np.all(np.isfinite(covariance)):
        return None
    try:
        chol = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        return None
    inverse = [_triangular_inverse(c) for c in chol.reshape(-1, *chol.shape[-2:])]
    if any(matrix is None for matrix in inverse):
        return None
    whitening = np.swapaxes(np.reshape(inverse, chol.shape), -1, -2)
    log_normalizer = -np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return {
        "whitening": whitening,
        "coloring": chol,
        "log_normalizer": log_normalizer,
        "rank": np.full(log_normalizer.shape, float(covariance.shape[-1]), covariance.dtype),
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
