"""Bernoulli class-conditionals: binary features (a word is present or not).

Story::

    y ~ Categorical(class_prior)
    probs[k, j] ~ Beta(alpha_j + 1, alpha_j + 1)
    x_j | y = k ~ Bernoulli(probs[k, j])        independently over j (naive Bayes)

Log density of one row, linear in ``x``::

    log p(x | k) = sum_j x_j log p_kj + (1 - x_j) log(1 - p_kj)
                 = x . (log p_k - log(1 - p_k)) + sum_j log(1 - p_kj)

Closed form, with ``N_k = sum_i R_ik`` and ``c_kj = sum_i R_ik x_ij``::

    probs[k, j] = (c_kj + alpha) / (N_k + 2 alpha)

Additive smoothing ``alpha`` is a Beta prior read two ways: the posterior *mode* (MAP) under
``Beta(alpha + 1, alpha + 1)`` — the prior of :meth:`BernoulliStory.prior`, whose log density
``alpha log p + alpha log(1 - p)`` is :meth:`BernoulliStory.log_penalty` — and the posterior *mean*
under ``Beta(alpha, alpha)``. ``alpha = 1`` is Laplace's rule of succession: +1 in the numerator,
+2 in the denominator; ``alpha = 0`` is maximum likelihood.

The module also holds small helpers shared by the discrete families: validation that works on
dense arrays, SciPy sparse matrices and ``jax.experimental.sparse.BCOO`` matrices, and the
linear scoring ``x . W_k + b_k`` that accepts a BCOO matrix (so a sparse bag of words is scored
by a sparse-dense product without densifying it).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import scipy.sparse
from jax.experimental import sparse as jsparse
from jax.scipy.special import xlog1py, xlogy

from genprob._arrays import namespace
from genprob._lazy import LazyModule, lazy_attribute
from genprob.conjugate import ConjugateFactor
from genprob.story import CLASS_PRIOR, Story

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
_emission = LazyModule("genprob.families.bernoulli_emission")


__all__ = ["BernoulliStory", "row_counts", "observed_sums"]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(__name__, {"BernoulliFeatures": "genprob.families.bernoulli_emission"})


# -- helpers shared by the discrete families -----------------------------------------------------
def is_sparse(X) -> bool:
    """True for SciPy sparse matrices and JAX BCOO matrices."""
    return isinstance(X, jsparse.BCOO) or scipy.sparse.issparse(X)


def stored_values(X) -> np.ndarray:
    """Host copy of the explicitly stored values: all entries of a dense array, the data of a
    sparse one (implicit zeros are never materialized)."""
    if isinstance(X, jsparse.BCOO):
        return np.asarray(X.data)
    if scipy.sparse.issparse(X):
        return np.asarray(X.data)
    return np.asarray(X)


def _position(X, flat_index: int) -> tuple[int, int]:
    """(row, column) of the ``flat_index``-th stored value of a 2-D matrix."""
    if isinstance(X, jsparse.BCOO):
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
    """Raise ``ValueError`` naming the first stored entry of ``X`` for which ``is_bad`` holds.

    Args:
        X: dense array, SciPy sparse matrix or BCOO matrix.
        is_bad: vectorized predicate on a NumPy array of values.
        expected: what the values should be, e.g. ``"binary features (0 or 1)"``.
    """
    values = stored_values(X)
    # fast path: a finite sum means finite values (the full mask is built only on failure)
    if not np.asarray(is_bad(values)).any() and np.isfinite(values.sum()):
        return
    bad = np.asarray(is_bad(values)) | ~np.isfinite(values)
    if bad.any():
        flat = np.flatnonzero(bad.ravel())
        row, col = _position(X, int(flat[0]))
        found = values.ravel()[flat[0]].item()
        raise ValueError(
            f"expected {expected}; found {found!r} at row {row}, column {col} "
            f"({flat.size} such entries)."
        )


def check_non_negative_values(X, expected: str) -> None:
    """:func:`check_values` for ``v < 0``, with two reductions when every value is fine."""
    values = stored_values(X)
    if values.size == 0 or (values.min() >= 0 and np.isfinite(values.max())):
        return
    check_values(X, lambda v: v < 0, expected)


def floor_log(p):
    """``log p`` with zero probabilities floored at the smallest positive normal number.

    Only ``alpha = 0`` produces zero probabilities. Flooring keeps ``0 * log 0 = 0`` in the matrix
    products (no NaN from ``0 * -inf``); an observed event of probability zero then costs about
    -708 (float64) instead of -inf.
    """
    xp = namespace(p)  # NumPy for host scoring
    return xp.log(xp.maximum(p, np.finfo(p.dtype).tiny))


def floor_log1m(p):
    """``log(1 - p)``, accurate for small ``p`` and floored like :func:`floor_log` at ``p = 1``."""
    xp = namespace(p)
    return xp.maximum(xp.log1p(-p), np.log(np.finfo(p.dtype).tiny))


def linear_log_prob(value, weights, offset):
    """``value . weights[k] + offset[k]`` for every class k, by a matrix product.

    Args:
        value: features (..., 1, D) (one row scored against every class), (..., K, D) (one row per
            class), or (D,); dense or a BCOO matrix (first form only); or a SciPy sparse matrix
            (n, D) of rows, each scored against every class.
        weights: (K, D).
        offset: (K,).

    Returns:
        (..., K) scores.
    """
    if scipy.sparse.issparse(value):  # (n, D) rows, scored on the host
        return scipy_linear_scores(value, weights, offset)
    if value.ndim >= 2 and value.shape[-2] == 1:
        return (value @ weights.T)[..., 0, :] + offset
    if isinstance(value, jsparse.BCOO):
        raise ValueError(
            f"a sparse value must have shape (n, 1, D) (one row against every class); got "
            f"{value.shape}."
        )
    if value.ndim == 1:
        return weights @ value + offset
    return jnp.sum(value * weights, axis=-1) + offset


def row_counts(counts):
    """Rows per class and feature, (K, D) or (K, 1): class counts (K,), or per-feature counts of
    observed entries (K, D) when some entries are missing."""
    return counts if np.ndim(counts) == 2 else counts[:, None]


def observed_sums(X, R, observed):
    """``(R^T observed, R^T X)``: rows and feature sums per class over observed entries (``X``
    filled with 0 where missing)."""
    return R.T @ observed.astype(R.dtype), R.T @ X


def weighted_sums(X, R):
    """``R^T X`` (K, D): per-class weighted feature sums. A SciPy sparse ``X`` is multiplied by
    SciPy on the host (never densified); only the dense (K, D) result is returned."""
    if scipy.sparse.issparse(X):
        return np.asarray(X.T @ np.asarray(R, dtype=X.dtype)).T
    return R.T @ X


def scipy_linear_scores(X, weights, offset) -> np.ndarray:
    """``X W^T + b`` (n, K) for a SciPy sparse ``X`` (n, D), by SciPy's sparse product."""
    weights = np.asarray(weights, dtype=X.dtype)
    return np.asarray(X @ np.ascontiguousarray(weights.T)) + np.asarray(offset, dtype=X.dtype)


def host_rows(X) -> bool:
    """True for rows scored on the host: a SciPy sparse matrix or a NumPy array."""
    return scipy.sparse.issparse(X) or isinstance(X, np.ndarray)


def host_if_host_rows(X, array):
    """``array`` as NumPy when ``X`` is scored on the host (:func:`host_rows`): one BLAS or
    SciPy product beats the copy to the device and its dispatch."""
    return np.asarray(array) if host_rows(X) else array


def linear_discriminant(X, weights, offset):
    """``x . W_k + b_k`` less class 0's score (a per-row term): column 0 is zero, so only K - 1
    products are taken. Class posteriors from it equal those of the full linear form.

    Args:
        X: features (n, D): dense, a BCOO matrix or a SciPy sparse matrix.
        weights: (K, D).
        offset: (K,).
    """
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


def alpha_array(alpha, num_features: int, dtype=None, xp=jnp):
    """Smoothing as an array broadcastable to (num_features,), checking a per-feature length;
    ``xp``: the namespace of the arrays it meets (NumPy in an M-step on the host)."""
    if isinstance(alpha, tuple):
        if len(alpha) != num_features:
            raise ValueError(
                f"alpha has {len(alpha)} entries; expected one per feature ({num_features})."
            )
    return xp.asarray(alpha, dtype=dtype)


def check_alpha(alpha):
    """Normalize a smoothing hyperparameter: a float >= 0 or a tuple of them (per feature)."""
    values = np.asarray(alpha, dtype=float)
    if values.ndim > 1:
        raise ValueError(f"alpha must be a number or a 1-D array, got shape {values.shape}.")
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}.")
    return float(values) if values.ndim == 0 else tuple(float(v) for v in values)


# -- the emission --------------------------------------------------------------------------------
def bernoulli_linear_form(probs):
    """``(weights, offset)`` of the Bernoulli log density, ``x . weights[k] + offset[k]``."""
    log_on = floor_log(probs)
    log_off = floor_log1m(probs)
    return log_on - log_off, log_off.sum(axis=-1)


# -- the story -----------------------------------------------------------------------------------
class BernoulliStory(Story):
    """Binary features, independent given the class (Bernoulli naive Bayes).

    Args:
        alpha: additive smoothing, a number or one per feature (a tuple); see the module
            docstring for its reading as a Beta prior.

    Parameters (``params`` keys): ``probs`` (K, D), the probability that feature j is 1 in
    class k.
    """

    name = "bernoulli"
    accepts_scipy_sparse = True
    array_api = True

    def __init__(self, alpha=1.0):
        self.alpha = check_alpha(alpha)

    def prior(self, num_classes, num_features):
        concentration = jnp.broadcast_to(alpha_array(self.alpha, num_features) + 1.0, num_features)
        probs = numpyro.sample(
            "probs",
            dist.Beta(concentration, concentration).expand([num_classes, num_features]).to_event(2),
        )
        return {"probs": probs}

    def emission(self, params):
        return _emission.BernoulliFeatures(params["probs"])

    def sufficient_statistics(self, X, R):
        # a sparse-dense product when X is a BCOO or SciPy sparse matrix
        return {"counts": R.sum(axis=0), "feature_counts": weighted_sums(X, R)}

    def discriminant(self, params, X):
        """The linear form less class 0's (K - 1 products; the same posteriors)."""
        return linear_discriminant(X, *bernoulli_linear_form(host_if_host_rows(X, params["probs"])))

    def maximize(self, stats):
        feature_counts = stats["feature_counts"]
        xp = namespace(feature_counts, stats["counts"])
        alpha = alpha_array(self.alpha, feature_counts.shape[-1], feature_counts.dtype, xp)
        probs = (feature_counts + alpha) / (row_counts(stats["counts"]) + 2.0 * alpha)
        return {"probs": probs}

    def log_penalty(self, params, stats):
        """``sum_kj alpha_j (log p_kj + log(1 - p_kj))``: the Beta(alpha+1, alpha+1) log density."""
        probs = params["probs"]
        alpha = alpha_array(self.alpha, probs.shape[-1], probs.dtype)
        return jnp.sum(xlogy(alpha, probs) + xlog1py(alpha, -probs))

    def conjugate_factors(self, stats, offset):
        """``Beta(c + alpha + offset, N - c + alpha + offset)`` per class and feature."""
        on = stats["feature_counts"]
        counts = row_counts(stats["counts"])
        alpha = np.asarray(self.alpha, on.dtype) + offset
        return {"probs": ConjugateFactor("beta", on + alpha, counts - on + alpha)}

    def validate(self, X):
        check_values(
            X,
            lambda v: (v != 0) & (v != 1),
            "binary features (0 or 1) for a Bernoulli story; binarize the data first "
            "(e.g. BernoulliNB(binarize=0.0))",
        )
        return X

    @property
    def supports_missing(self) -> bool:
        return True

    def observed_log_prob(self, params, X, observed):
        """``sum_j o_ij (x_ij log p_kj + (1 - x_ij) log(1 - p_kj))``: two matrix products."""
        probs = params["probs"]
        log_off = floor_log1m(probs)
        weights = floor_log(probs) - log_off
        return X @ weights.T + observed.astype(probs.dtype) @ log_off.T

    def observed_statistics(self, X, R, observed, params=None):
        counts, feature_counts = observed_sums(X, R, observed)
        return {"counts": counts, "feature_counts": feature_counts}

    def num_parameters(self, num_classes, num_features):
        return (num_classes - 1) + num_classes * num_features

    def linear_boundary(self, params, k: int, l: int):
        """Weights and bias of the log posterior odds of class ``k`` against class ``l``.

        ``w . x + b = log p(y = k | x) - log p(y = l | x)`` with
        ``w_j = logit p_kj - logit p_lj`` and
        ``b = log(pi_k / pi_l) + sum_j log((1 - p_kj) / (1 - p_lj))``.

        Returns:
            ``(w, b)``: (D,) and a scalar.
        """
        weights, offset = self.emission(params).linear_form()
        log_prior = jnp.log(params[CLASS_PRIOR])
        return weights[k] - weights[l], log_prior[k] - log_prior[l] + offset[k] - offset[l]
