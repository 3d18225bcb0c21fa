"""Moments and shrinkage of Gaussian statistics: blocked sums, constant-feature snapping,
Ledoit–Wolf."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from genprob._arrays import namespace

__all__ = [
    "ClassBlocks",
    "block_rows",
    "centered",
    "chunked_sum",
    "class_rows",
    "host_row_blocks",
    "host_row_spans",
    "ledoit_wolf_shrinkage",
    "reference_point",
    "snap_constant_features",
    "standardizing_scale",
]

#: Rows per block of the chunked statistics pass (fits in cache; see ``chunked_sum``).
CHUNK = 4096
#: scikit-learn detects constant features with float64 rounding bounds whatever the data dtype.
_EPS64 = float(np.finfo(np.float64).eps)


def chunked_sum(fn, X, R, chunk: int = CHUNK):
    """``sum over row blocks of fn(X_block, R_block)`` (a pytree), one cache-friendly pass.

    Working on blocks keeps the centered copies and products of each block in cache instead of
    materializing (n, D) temporaries. Blocks are read in place with ``dynamic_slice`` inside a
    ``fori_loop``: reshaping the rows into a scanned (blocks, chunk, D) array first makes XLA
    copy the data and measured about 2x slower on CPU.
    """
    num_blocks = X.shape[0] // chunk
    tail = num_blocks * chunk
    # no remainder: start from the first block (an empty block breaks the per-class reshape)
    first = int(tail == X.shape[0] and num_blocks > 0)
    total = fn(X[:chunk], R[:chunk]) if first else fn(X[tail:], R[tail:])
    if num_blocks <= first:
        return total

    def body(index, acc):
        start = index * chunk
        block = (
            jax.lax.dynamic_slice_in_dim(X, start, chunk),
            jax.lax.dynamic_slice_in_dim(R, start, chunk),
        )
        return jax.tree_util.tree_map(jnp.add, acc, fn(*block))

    return jax.lax.fori_loop(first, num_blocks, body, total)


#: Bytes of one block of rows in the host statistics pass: the block and its centered copy
#: fit a core's L2 cache (512 KiB here); with a centered copy, larger blocks measured slower
#: (Gaussian NB moments at 1e5 x 50: 8.7 ms at 1 MiB against 8.0). Passes that make no copy
#: or gain from longer products take a multiple of it.
HOST_BLOCK_BYTES = 1 << 19
#: The reference point of the moments is estimated from at most this many rows, spread over X.
_REFERENCE_ROWS = 1024
#: ... and it is the origin when every feature's mean is within this many sds of 0.
_ORIGIN_SDS = 4.0


def block_rows(X, block_bytes: int) -> int:
    """Rows of ``X`` in a block of about ``block_bytes`` (at least 256)."""
    return max(256, block_bytes // max(1, X.shape[1] * X.itemsize))


def host_row_blocks(*arrays, block_bytes: int = HOST_BLOCK_BYTES):
    """Views of the same rows of NumPy arrays (X first), in blocks of X of about
    ``block_bytes`` (cache-sized), for statistics computed eagerly on the host."""
    X = arrays[0]
    rows = block_rows(X, block_bytes)
    for start in range(0, X.shape[0], rows):
        yield tuple(array[start : start + rows] for array in arrays)


def host_row_spans(span, shift, *rows, block_bytes: int = HOST_BLOCK_BYTES):
    """``span(shift, *rows, block_bytes=block_bytes)``: one serial pass over NumPy ``rows``
    (X first), BLAS threading its own products."""
    return span(shift, *rows, block_bytes=block_bytes)


def centered(x, shift) -> np.ndarray:
    """``x - shift`` of a block of rows, a new array."""
    return np.subtract(x, shift)


def class_rows(R) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Per class, the indices of the rows of non-zero responsibility and those
    responsibilities (None where each is 1), in row order; ``R`` a NumPy array."""
    # the transposed mask of R != 0 is contiguous (and 8x smaller than R): flatnonzero does
    # not walk a strided column of R per class
    present = np.ascontiguousarray((R != 0).T)
    result = []
    for k, mask in enumerate(present):
        rows = np.flatnonzero(mask)
        weights = R[rows, k]
        result.append((rows, None if np.all(weights == 1) else weights))
    return result


class ClassBlocks:
    """Each class's rows of NumPy rows ``X``, block by block: iterating yields ``(k, Z_k,
    w_k)``, ``Z_k`` the rows of class k in a block of about ``block_bytes`` of ``X`` less
    ``shift``, copied into one buffer (valid until the next item), ``w_k``
    their responsibilities (None where each is 1). ``counts``: each class's ``R^T 1``.

    Each class's rows and weights are found once (:func:`class_rows`), not per block; a block's
    rows of a class are copied by ``np.take`` of their indices, at about memory speed in cache
    (a boolean index takes 2x as long, ``np.compress`` 9x at D = 50). Rows of zero weight are
    left out, and rows in several classes (soft R) are copied once per class.
    """

    def __init__(self, X, R, shift, block_bytes: int):
        self.X, self.shift, self.block_bytes = X, shift, block_bytes
        self.found = class_rows(R)
        self.counts = np.array(
            [rows.size if w is None else w.sum() for rows, w in self.found], np.float64
        )

    def __iter__(self):
        X, shift = self.X, self.shift
        origin = not np.any(shift)
        block = block_rows(X, self.block_bytes)
        # one buffer for every class's copy: no allocation per copy
        buffer = np.empty((block, X.shape[1]), X.dtype)
        first = [0] * len(self.found)  # each class's first member not yet yielded
        for stop in range(block, X.shape[0] + block, block):
            for k, (members, weights) in enumerate(self.found):
                start = first[k]
                end = start + int(np.searchsorted(members[start : start + block], stop))
                if end == start:
                    continue
                first[k] = end
                # mode="clip" (the indices are in range): with out=, "raise" copies twice
                z_k = np.take(X, members[start:end], axis=0, out=buffer[: end - start], mode="clip")
                if not origin:
                    z_k -= shift
                yield k, z_k, None if weights is None else weights[start:end]


def reference_point(X):
    """The point the moments of ``X`` are taken about: the origin when every feature's mean is
    within ``_ORIGIN_SDS`` sds of 0, else the mean; both estimated from the rows, or from at
    most ``_REFERENCE_ROWS`` rows evenly spread over them.

    It only has to lie near the data's center: the sums about it are then ``n (mean - shift)``,
    and "second moment minus squared mean" loses to cancellation a relative
    ``eps (1 + (mean - shift)^2 / var)``: about ``eps`` for the sample mean of 1024 rows
    (within about sd / 32 of the mean), at most ``17 eps`` for the origin of data within 4 sds
    of it. The origin spares subtracting the shift from every row (on the host, products read
    the rows in place); sampling spares a pass over large inputs.
    """
    step = -(-X.shape[0] // _REFERENCE_ROWS)
    rows = X if step <= 1 else X[::step]
    if isinstance(X, np.ndarray):
        # a contiguous copy of the sampled rows, centered in place: faster than mean and var
        # of the strided view, which read it twice more
        rows = np.array(rows, copy=True, order="C")
        mean = rows.mean(axis=0)
        rows -= mean
        variance = np.einsum("ij,ij->j", rows, rows) / rows.shape[0]
        near = (mean * mean <= _ORIGIN_SDS**2 * variance).all()
        return np.where(near, 0.0, mean).astype(mean.dtype)
    mean = rows.mean(axis=0)
    near = (mean * mean <= _ORIGIN_SDS**2 * rows.var(axis=0)).all()
    return jnp.where(near, jnp.zeros_like(mean), mean)


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
    r"""Ledoit–Wolf shrinkage of covariances on the standardized scale (batched over classes).

    With ``C = S / (s s^T)`` the covariance of the standardized data ``z = (x - m) / s`` (n rows),
    ``mu = tr C / D``::

        delta = ||C - mu I||_F^2 / D
        beta  = min(delta, (sum_i ||z_i||^4 / n - ||C||_F^2) / (D n))
        alpha = beta / delta                      (0 when beta = 0, or D = 1)

    and the shrunk covariance is ``s [(1 - alpha) C + alpha mu I] s^T``.

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
    eps = np.finfo(scatter.dtype).eps
    if full:
        diagonal = xp.diagonal(scatter, axis1=-2, axis2=-1)
        magnitude = xp.diagonal(squares, axis1=-2, axis2=-1)
    else:
        diagonal, magnitude = scatter, squares
    noise = diagonal <= 64 * eps * magnitude
    if floor is not None:  # per-feature centering floor of the group (:func:`centering_floor`)
        noise = noise | (diagonal <= floor)
    # an overflowed moment (inf, or inf - inf) is kept, for the overflow check to name it
    live = ~noise | ~xp.isfinite(diagonal) | ~xp.isfinite(magnitude)
    live = live.astype(scatter.dtype)
    if full:
        return scatter * live[..., :, None] * live[..., None, :]
    return scatter * live
