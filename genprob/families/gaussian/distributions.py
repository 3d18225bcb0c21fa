"""Gaussian emissions scored fast: a whitening form (full covariances) and a diagonal form.

The derivations (retained-subspace density, the diagonal form's rounding bound) are in
docs/gaussian.md.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from jax.scipy.linalg import solve_triangular
from numpyro.distributions import constraints

from genprob._dtype import TOLERANCES

__all__ = ["DiagonalNormal", "WhitenedNormal", "full_gaussian"]

_LOG_2PI = math.log(2.0 * math.pi)


class WhitenedNormal(dist.Distribution):
    r"""Gaussian given by a whitening matrix: ``log p(x) = -1/2 ||(x - loc) W||^2 + const``.

    ``W`` (D, D) satisfies ``W^T Sigma W = I`` on the retained subspace (its other columns are
    zero), so ``W W^T`` is the (subspace) precision. With a full-rank ``Sigma`` and
    ``W = chol(Sigma)^{-T}`` this is the ordinary multivariate normal.

    A shared ``W`` (2-D) is applied once to the data and once to the means, so scoring n rows
    against K classes costs one (n, D) x (D, D) product instead of K.

    Args:
        loc: means (..., K, D).
        whitening: ``W``, (D, D) shared or (K, D, D) per class.
        coloring: ``A`` with ``A A^T = Sigma`` (restricted), same shape as ``whitening``; used
            for sampling ``x = loc + A eps``.
        log_normalizer: ``1/2 log det(W^T W)`` in the projected coordinates (``-1/2 log det Sigma``
            at full rank), scalar or (K,).
        rank: number of retained dimensions r, scalar or (K,).
    """

    arg_constraints = {"loc": constraints.real_vector}
    support = constraints.real_vector
    reparametrized_params = ["loc"]
    pytree_data_fields = ("loc", "whitening", "coloring", "log_normalizer", "rank")

    def __init__(self, loc, whitening, coloring, log_normalizer, rank, *, validate_args=None):
        self.loc = loc
        self.whitening = whitening
        self.coloring = coloring
        self.log_normalizer = log_normalizer
        self.rank = rank
        batch_shape = jnp.broadcast_shapes(
            jnp.shape(loc)[:-1],
            jnp.shape(whitening)[:-2],
            jnp.shape(log_normalizer),
            jnp.shape(rank),
        )
        super().__init__(
            batch_shape=batch_shape, event_shape=jnp.shape(loc)[-1:], validate_args=validate_args
        )

    @property
    def shared(self) -> bool:
        """True when one whitening matrix serves every class."""
        return jnp.ndim(self.whitening) == 2

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape + self.event_shape)

    @property
    def precision_matrix(self):
        """``W W^T``: the inverse covariance (pseudo-inverse on the retained subspace)."""
        return self.whitening @ jnp.swapaxes(self.whitening, -1, -2)

    @property
    def covariance_matrix(self):
        """``A A^T``: the covariance restricted to the retained subspace."""
        return self.coloring @ jnp.swapaxes(self.coloring, -1, -2)

    def log_prob(self, value):
        # Center on the mean of the class means before whitening: the difference of two large
        # projections would lose the digits that separate the classes.
        center = jnp.mean(self.loc.reshape(-1, self.loc.shape[-1]), axis=0)
        whitening = self.whitening
        if self.shared:
            z = (value - center) @ whitening - (self.loc - center) @ whitening
        elif jnp.ndim(value) == 1 or jnp.shape(value)[-2] == 1:
            # one row against every class (the scoring path): a single (n, D) x (D, K D)
            # product instead of K batched ones
            rows = value if jnp.ndim(value) == 1 else value[..., 0, :]
            whitened = jnp.tensordot(rows - center, whitening, axes=([-1], [-2]))
            z = whitened - jnp.einsum("...kd,...kde->...ke", self.loc - center, whitening)
        else:
            z = jnp.einsum("...kd,...kde->...ke", value - self.loc, whitening)
        return -0.5 * jnp.sum(z * z, axis=-1) - 0.5 * self.rank * _LOG_2PI + self.log_normalizer

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.einsum("...de,...e->...d", self.coloring, noise)


class DiagonalNormal(dist.Distribution):
    r"""Independent normal features, scored against every class as matrix products when safe.

    Scoring n rows against K classes elementwise costs (n, K, D) work; expanding the squares
    about the mean of the class means turns it into one (n, 2D) x (2D, 2K) product. Where a
    first-order rounding bound of that expansion exceeds the dtype's absolute tolerance
    (:data:`genprob._dtype.TOLERANCES`) the entry is recomputed elementwise, inside a
    ``jax.lax.cond`` that runs only when needed (derivation in docs/gaussian.md). The center is
    held fixed under differentiation, so gradients are those of the exact form.

    Args:
        loc: means (..., K, D).
        variances: variances, broadcastable to ``loc``.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "variances": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    reparametrized_params = ["loc", "variances"]
    pytree_data_fields = ("loc", "variances")

    def __init__(self, loc, variances, *, validate_args=None):
        self.loc = loc
        self.variances = variances
        shape = jnp.broadcast_shapes(jnp.shape(loc), jnp.shape(variances))
        super().__init__(
            batch_shape=shape[:-1], event_shape=shape[-1:], validate_args=validate_args
        )

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        return jnp.broadcast_to(self.variances, self.batch_shape + self.event_shape)

    def _log_normalizer(self):
        return -0.5 * jnp.sum(jnp.log(2.0 * jnp.pi * self.variance), axis=-1)

    def expanded_quadratic(self, rows):
        """The expanded quadratic of ``rows`` (..., D) against every class, and where it is unsafe.

        Returns:
            ``(quadratic, inexact)``, both (..., K): ``A - 2 B + C``, and True where half its
            rounding-error bound ``(3 D + 8) eps (A + C)`` exceeds the dtype's absolute tolerance
            (those entries :meth:`log_prob` computes elementwise).
        """
        num_features = self.event_shape[0]
        loc = self.mean.reshape(-1, num_features)
        center = jax.lax.stop_gradient(jnp.mean(loc, axis=0))
        precision = 1.0 / self.variance.reshape(loc.shape)
        offset = loc - center
        weighted = offset * precision
        constant = jnp.sum(offset * weighted, axis=-1)
        centered = rows - center
        # one (n, 2D) x (2D, 2K) product gives A - 2B and A
        features = jnp.concatenate([centered * centered, centered], axis=-1)
        coefficients = jnp.concatenate(
            [
                jnp.concatenate([precision, precision], axis=0),
                jnp.concatenate([-2.0 * weighted, jnp.zeros_like(weighted)], axis=0),
            ],
            axis=-1,
        )
        both = features @ coefficients.T
        num_classes = loc.shape[0]
        squares = both[..., num_classes:]
        eps = jnp.finfo(both.dtype).eps
        bound = (3 * num_features + 8) * eps * (squares + constant)
        inexact = 0.5 * bound > TOLERANCES[both.dtype.name]["atol"]
        return both[..., :num_classes] + constant, inexact

    def log_prob(self, value):
        one_row = jnp.ndim(value) == 1 or jnp.shape(value)[-2] == 1
        if not one_row or len(self.batch_shape) != 1:
            return self._log_normalizer() - 0.5 * _elementwise_quadratic(
                value, self.loc, self.variances
            )
        rows = value if jnp.ndim(value) == 1 else value[..., 0, :]
        fast, inexact = self.expanded_quadratic(rows)

        # Rematerialized, the elementwise pass leaves only (loc, variances) as residuals: the
        # branch not taken fills the other's residuals with zeros, which would cost (n, K, D).
        def exact_where_needed():
            exact = jax.checkpoint(_elementwise_quadratic)(
                rows[..., None, :], self.loc, self.variances
            )
            return jnp.where(inexact, exact, fast)

        quadratic = jax.lax.cond(jnp.any(inexact), exact_where_needed, lambda: fast)
        return self._log_normalizer() - 0.5 * quadratic

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.sqrt(self.variances) * noise


def _elementwise_quadratic(value, loc, variances):
    """``sum_j (x_j - mu_j)^2 / s_j`` term by term (scikit-learn's Gaussian NB arithmetic)."""
    return jnp.sum((value - loc) ** 2 / variances, axis=-1)


def full_gaussian(means, covariance, rank_tol) -> WhitenedNormal:
    """Emission of full covariances: Cholesky whitening, or the retained-subspace Gaussian."""
    num_features = covariance.shape[-1]
    identity = jnp.eye(num_features, dtype=covariance.dtype)
    if rank_tol is None:
        chol = jnp.linalg.cholesky(covariance)
        inverse_chol = solve_triangular(chol, jnp.broadcast_to(identity, chol.shape), lower=True)
        whitening = jnp.swapaxes(inverse_chol, -1, -2)
        log_normalizer = -jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        rank = jnp.full(log_normalizer.shape, float(num_features), covariance.dtype)
        return WhitenedNormal(means, whitening, chol, log_normalizer, rank)
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
    return WhitenedNormal(means, whitening, covariance @ whitening, log_normalizer, rank)
