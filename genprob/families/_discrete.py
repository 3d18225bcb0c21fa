"""Helpers of the discrete families: validation and linear scoring of dense, SciPy sparse and
BCOO rows (a sparse bag of words is never densified), floored logarithms."""

from __future__ import annotations

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule
from genprob.engine._arrays import class_sums, namespace
from genprob.engine._validation import FeatureValueError, is_bcoo
from genprob.story import CLASS_PRIOR, Story

jnp = LazyModule("jax.numpy")
jax_special = LazyModule("jax.scipy.special")


def stored_values(X) -> np.ndarray:
    """Host copy of the stored values: a dense array's entries, a sparse one's data."""
    return np.asarray(X.data if is_bcoo(X) or scipy.sparse.issparse(X) else X)


def _position(X, flat_index: int) -> tuple[int, int]:
    """(row, column) of the ``flat_index``-th stored value of a 2-D matrix."""
    if is_bcoo(X):
        row, col = np.asarray(X.indices[flat_index])[-2:]
        return int(row), int(col)
    if scipy.sparse.issparse(X):
        coo = X.tocoo()  # CSR -> COO keeps the storage order of ``data``
        return int(coo.row[flat_index]), int(coo.col[flat_index])
    shape = np.shape(X)
    if len(shape) == 1:
        return 0, int(flat_index)
    row, col = np.unravel_index(flat_index, (-1, shape[-1]) if len(shape) > 2 else shape)
    return int(row), int(col)


def check_values(X, is_bad, expected: str) -> None:
    """``FeatureValueError`` naming the first stored entry where ``is_bad`` holds or not finite."""
    values = stored_values(X)
    # fast path: a finite sum means finite values (the full mask is built only on failure)
    if not np.asarray(is_bad(values)).any() and np.isfinite(values.sum()):
        return
    bad = np.asarray(is_bad(values)) | ~np.isfinite(values)
    if bad.any():
        flat = np.flatnonzero(bad.ravel())
        row, col = _position(X, int(flat[0]))
        found = values.ravel()[flat[0]].item()
        raise FeatureValueError(  # the column's position, which an estimator names
            f"expected {expected}; found {found!r} at row {row}, column {col} "
            f"({flat.size} such entries).",
            col,
        )


def check_non_negative_values(X, expected: str) -> None:
    """:func:`check_values` for ``v < 0``, with two reductions when every value is fine."""
    values = stored_values(X)
    if values.size == 0 or (values.min() >= 0 and np.isfinite(values.max())):
        return
    check_values(X, lambda v: v < 0, expected)


def special_functions(*arrays):
    """SciPy's special functions for host arrays (no JAX import), JAX's for the others."""
    if namespace(*arrays) is np:
        import scipy.special

        return scipy.special
    return jax_special


def floor_log(p):
    """``log p`` floored at the smallest normal number: ``0 * log 0 = 0`` in matrix products."""
    xp = namespace(p)  # NumPy for host scoring
    return xp.log(xp.maximum(p, np.finfo(p.dtype).tiny))


def floor_log1m(p):
    """``log(1 - p)``, accurate for small ``p`` and floored like :func:`floor_log` at ``p = 1``."""
    xp = namespace(p)
    return xp.maximum(xp.log1p(-p), np.log(np.finfo(p.dtype).tiny))


def linear_log_prob(value, weights, offset):
    """``value . weights[k] + offset[k]`` (..., K): ``value`` (..., 1, D), (..., K, D) or (D,)."""
    if scipy.sparse.issparse(value):  # (n, D) rows, scored on the host
        return scipy_linear_scores(value, weights, offset)
    if value.ndim >= 2 and value.shape[-2] == 1:
        return (value @ weights.T)[..., 0, :] + offset
    if is_bcoo(value):
        raise ValueError(
            f"a sparse value must have shape (n, 1, D) (one row against every class); got "
            f"{value.shape}."
        )
    if value.ndim == 1:
        return weights @ value + offset
    return jnp.sum(value * weights, axis=-1) + offset


def row_counts(counts):
    """Rows per class and feature (K, D) or (K, 1), from per-feature or per-class counts."""
    return counts if np.ndim(counts) == 2 else counts[:, None]


def observed_sums(X, R, observed):
    """``(R^T observed, R^T X)`` (``X`` filled with 0 where missing)."""
    return class_sums(R, observed.astype(R.dtype)), class_sums(R, X)


def weighted_sums(X, R):
    """``R^T X`` (K, D), a SciPy sparse ``X`` by SciPy on the host (never densified)."""
    if scipy.sparse.issparse(X):
        return np.asarray(X.T @ np.asarray(R, dtype=X.dtype)).T
    return class_sums(R, X)


def scipy_linear_scores(X, weights, offset) -> np.ndarray:
    """``X W^T + b`` (n, K) for a SciPy sparse ``X`` (n, D), by SciPy's sparse product."""
    weights = np.asarray(weights, dtype=X.dtype)
    return np.asarray(X @ np.ascontiguousarray(weights.T)) + np.asarray(offset, dtype=X.dtype)


def entry_sums(X, terms) -> np.ndarray:
    """``sum_j terms_k(j, x_ij)`` (n, K) over the nonzeros of ``X``; ``terms`` gives (K, nnz)."""
    coo = scipy.sparse.coo_matrix(X)
    values = terms(coo.col, coo.data.astype(np.float64))
    return np.stack([np.bincount(coo.row, v, minlength=X.shape[0]) for v in values], axis=1)


def host_rows(X) -> bool:
    """True for rows scored on the host: a SciPy sparse matrix or a NumPy array."""
    return scipy.sparse.issparse(X) or isinstance(X, np.ndarray)


def alpha_array(alpha, num_features: int, dtype=None, xp=jnp):
    """Smoothing as an array (in namespace ``xp``) broadcastable to (num_features,)."""
    if isinstance(alpha, tuple):
        if len(alpha) != num_features:
            raise ValueError(
                f"alpha has {len(alpha)} entries; expected one per feature ({num_features})."
            )
    return xp.asarray(alpha, dtype=dtype)


def class_feature_shapes(probs) -> dict:
    """Batch (classes) and event (features) shapes of an emission of per-class ``probs``."""
    return {"batch_shape": jnp.shape(probs)[:-1], "event_shape": jnp.shape(probs)[-1:]}


class LinearStory(Story):
    """Bernoulli and multinomial: ``log p(x | k)`` is ``linear_form(probs)`` plus a row term."""

    linear_form = None  # ``linear_form(probs) -> (weights (K, D), offset (K,))``

    def _row_term(self, X):
        return 0.0

    def _alpha(self, like):
        """``alpha`` in the namespace and dtype of ``like`` (..., D)."""
        return alpha_array(self.alpha, like.shape[-1], like.dtype, namespace(like))

    def _concentration(self, num_features):
        return jnp.broadcast_to(alpha_array(self.alpha, num_features) + 1.0, num_features)

    def discriminant(self, params, X):
        """The linear form less class 0's (K - 1 products; the same posteriors)."""
        probs = params["probs"]  # NumPy for host rows: one BLAS product, no copy to the device
        weights, offset = self.linear_form(np.asarray(probs) if host_rows(X) else probs)
        if X.shape[-1] != weights.shape[-1]:
            raise ValueError(
                f"X has {X.shape[-1]} features, but the parameters are for {weights.shape[-1]} "
                f"features."
            )
        weights, offset = weights[1:] - weights[:1], offset[1:] - offset[:1]
        if host_rows(X):
            out = np.zeros((X.shape[0], len(weights) + 1), np.result_type(X.dtype, weights.dtype))
            if scipy.sparse.issparse(X):
                out[:, 1:] = scipy_linear_scores(X, weights, offset)
            else:
                np.matmul(X, weights.astype(out.dtype, copy=False).T, out=out[:, 1:])
                out[:, 1:] += offset
            return out
        rest = linear_log_prob(X[:, None, :], weights, offset)
        return jnp.concatenate([jnp.zeros((X.shape[0], 1), rest.dtype), rest], axis=1)

    def log_density(self, params, X):
        """NumPy rows: the linear form plus the row's term, on the host (EM there needs no JAX)."""
        if not isinstance(X, np.ndarray):
            return super().log_density(params, X)
        weights, offset = self.linear_form(np.asarray(params["probs"]))
        return scipy_linear_scores(X, weights, offset) + self._row_term(X)

    def linear_boundary(self, params, k: int, l: int):  # noqa: E741
        """``(w, b)``: the log-odds of ``k`` and ``l`` (docs/reference/boundaries.md)."""
        weights, offset = self.linear_form(params["probs"])
        log_prior = jnp.log(params[CLASS_PRIOR])
        return weights[k] - weights[l], log_prior[k] - log_prior[l] + offset[k] - offset[l]
