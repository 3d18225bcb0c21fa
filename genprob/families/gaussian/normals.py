"""The Gaussian emissions as NumPyro distributions: the whitening form (full covariances) and the
diagonal form. Imported on first use, with NumPyro; the arithmetic is in
:mod:`genprob.families.gaussian.distributions`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

from genprob._dtype import TOLERANCES
from genprob.families.gaussian.distributions import (
    _elementwise_quadratic,
    _less_extreme,
    _rounding,
    class_constant,
    diagonal_log_normalizer,
    linear_terms,
    row_scale,
    shared_linear_scores,
    whitening_gain,
)

__all__ = ["WhitenedNormal", "DiagonalNormal"]


class WhitenedNormal(dist.Distribution):
    r"""Gaussian given by a whitening matrix: ``log p(x) = -1/2 ||(x - loc) W||^2 + const``.

    ``W`` (D, D), or (D, r) on a retained subspace of r dimensions, satisfies ``W^T Sigma W = I``
    on the retained subspace (a square ``W``'s other columns are zero), so ``W W^T`` is the
    (subspace) precision. With a full-rank ``Sigma`` and ``W = chol(Sigma)^{-T}`` this is the
    ordinary multivariate normal.

    A shared ``W`` (2-D) is applied once to the data and once to the means, so scoring n rows
    against K classes costs one (n, D) x (D, r) product instead of K.

    Args:
        loc: means (..., K, D).
        whitening: ``W``, (D, D) or (D, r) shared, or (K, D, D) per class.
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

    def _class_constant(self):
        return class_constant(self.rank, self.log_normalizer)

    def _centered(self, value):
        """``(c, s, (x - c) / s)``: the mean of the class means, the rows' scales
        (:func:`row_scale`) and the scaled rows about ``c``."""
        center = jnp.mean(self.loc.reshape(-1, self.loc.shape[-1]), axis=0)
        gain = whitening_gain(self.whitening)
        scale = row_scale(value, center, gain)
        return center, scale, value / scale[..., None] - center / scale[..., None]

    def _whitened(self, value):
        """Rows and class means whitened about the mean of the class means ``c``, rows scaled.

        Returns ``(s, xw, mw)``: the rows' scales (:func:`row_scale`; 1 for ordinary rows),
        ``xw = (x - c) W / s`` ((..., D) shared, (..., K, D) per class: one (n, D) x (D, K D)
        product instead of K batched ones) and ``mw = (mu_k - c) W`` (K, D). Centering keeps the
        digits that separate the classes, which the difference of two large projections loses.
        """
        center, scale, rows = self._centered(value)
        whitening = self.whitening
        if self.shared:
            return scale, rows @ whitening, (self.loc - center) @ whitening
        whitened = jnp.tensordot(rows, whitening, axes=([-1], [-2]))
        return scale, whitened, jnp.einsum("...kd,...kde->...ke", self.loc - center, whitening)

    def scaled_quadratic(self, rows):
        """``(s, q)`` with ``||(x - mu_k) W_k||^2 = s^2 q`` for rows (n, D) against every class:
        ``q`` (n, K) stays finite for any finite row."""
        scale, xw, mw = self._whitened(rows)
        if self.shared:
            z = xw[..., None, :] - mw / scale[..., None, None]
            return scale, jnp.sum(z * z, axis=-1)
        z = xw - mw / scale[..., None, None]
        fast = jnp.sum(z * z, axis=-1)
        # Whitening about the common center c subtracts two projections, (x - c) W_k and
        # (mu_k - c) W_k, which cancel when a narrow class lies far from c. Each entry errs by
        # at most e_k = (D + 2) eps max_e ||W_k[:, e]|| (||x - c|| + ||mu_k - c||) (Cauchy-Schwarz),
        # so q_k by at most 2 e_k sqrt(D q_k) + D e_k^2. Where half of that exceeds the dtype's
        # tolerance, x - mu_k is whitened directly (exact near mu_k; K batched products instead
        # of one). Besides precision: XLA rounded such a difference differently where it
        # computed it twice, and probabilities summed to 1 + 9e-8 (docs/gaussian.md).
        num_features = rows.shape[-1]
        center, _, shifted = self._centered(rows)
        column = jnp.max(jnp.sqrt(jnp.sum(self.whitening * self.whitening, axis=-2)), axis=-1)
        row_norm = jnp.sqrt(jnp.sum(shifted * shifted, axis=-1))
        mean_norm = jnp.sqrt(jnp.sum(jnp.square(self.loc - center), axis=-1))  # (K,)
        eps = jnp.finfo(fast.dtype).eps
        error = (
            (num_features + 2) * eps * column * (row_norm[..., None] + mean_norm / scale[..., None])
        )
        bound = 2 * error * jnp.sqrt(num_features * fast) + num_features * error * error
        inexact = 0.5 * bound > TOLERANCES[fast.dtype.name]["atol"] / scale[..., None] ** 2

        def direct(rows, scale, loc, whitening):
            # class by class: K plain (n, D) x (D, D) products, no (n, K, D) temporary
            column = scale[..., None]
            squares = []
            for k in range(loc.shape[-2]):
                z = (rows / column - loc[..., k, :] / column) @ whitening[..., k, :, :]
                squares.append(jnp.sum(z * z, axis=-1))
            return jnp.stack(squares, axis=-1)

        def exact_where_needed():
            exact = jax.checkpoint(direct)(rows, scale, self.loc, self.whitening)
            return jnp.where(inexact, exact, fast)

        return scale, jax.lax.cond(jnp.any(inexact), exact_where_needed, lambda: fast)

    def quadratic_scores(self, rows):
        """``log p(x | k) + s^2 min_l q_l / 2`` (n, K): finite, 0 at the nearest class before
        the constants, -inf at most where another class is infinitely closer."""
        scale, quadratic = self.scaled_quadratic(rows)
        lowest = jnp.min(quadratic, axis=-1, keepdims=True)
        excess = _less_extreme(
            quadratic, jnp.min, scale[..., None], _rounding(rows.shape[-1], lowest)
        )
        return -0.5 * (excess * scale[..., None]) * scale[..., None] + self._class_constant()

    def linear_terms(self) -> dict:
        """:func:`linear_terms` of this emission (shared ``W`` only)."""
        return linear_terms(self.loc, self.whitening, self.log_normalizer, self.rank)

    def linear_scores(self, rows):
        """``log p(x | k) + ||(x - c) W||^2 / 2 + max_l s (x - c) W . m_l`` (n, K) of a shared
        ``W``: linear in the rows, hence finite for any finite row (:func:`shared_linear_scores`
        of :meth:`linear_terms`)."""
        return shared_linear_scores(rows, **self.linear_terms())

    def log_prob(self, value):
        # squared in the scaled domain, multiplied back: -inf only where the density underflows
        if self.shared:
            scale, xw, mw = self._whitened(value)
            z = xw - mw / scale[..., None]
            quadratic = (jnp.sum(z * z, axis=-1) * scale) * scale
        elif jnp.ndim(value) == 1 or jnp.shape(value)[-2] == 1:
            # one row against every class (the scoring path)
            scale, quadratic = self.scaled_quadratic(
                value if jnp.ndim(value) == 1 else value[..., 0, :]
            )
            quadratic = (quadratic * scale[..., None]) * scale[..., None]
        else:
            z = jnp.einsum("...kd,...kde->...ke", value - self.loc, self.whitening)
            quadratic = jnp.sum(z * z, axis=-1)
        return -0.5 * quadratic + self._class_constant()

    def sample(self, key, sample_shape=()):
        # the coloring is (D, r) on a retained subspace of r dimensions
        shape = tuple(sample_shape) + self.batch_shape + jnp.shape(self.coloring)[-1:]
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
        return diagonal_log_normalizer(self.variance)

    def _expansion(self):
        """Center ``c`` (mean of the class means, held fixed under differentiation), precisions
        (K, D), ``P_k (mu_k - c)`` (K, D) and ``(mu_k - c)^T P_k (mu_k - c)`` (K,)."""
        num_features = self.event_shape[0]
        loc = self.mean.reshape(-1, num_features)
        center = jax.lax.stop_gradient(jnp.mean(loc, axis=0))
        precision = 1.0 / self.variance.reshape(loc.shape)
        offset = loc - center
        weighted = offset * precision
        return center, precision, weighted, jnp.sum(offset * weighted, axis=-1)

    def _row_scale(self, rows, center):
        return row_scale(rows, center, jnp.sqrt(jnp.max(1.0 / self.variance)))

    def expanded_quadratic(self, rows, scale=None):
        """The expanded quadratic of ``rows`` (..., D) against every class, and where it is unsafe.

        Args:
            rows: (..., D).
            scale: per-row powers of two (:func:`row_scale`); the quadratic of ``rows / scale``
                is returned. None: 1.

        Returns:
            ``(quadratic, inexact)``, both (..., K): ``A - 2 B + C``, and True where half its
            rounding-error bound ``(3 D + 8) eps (A + C)`` exceeds the dtype's absolute tolerance
            (those entries :meth:`log_prob` computes elementwise).
        """
        num_features = self.event_shape[0]
        center, precision, weighted, constant = self._expansion()
        if scale is None:
            scale = jnp.ones(rows.shape[:-1], rows.dtype)
        scale = scale[..., None]
        centered = rows / scale - center / scale
        # one (n, 2D) x (2D, 2K) product gives A - 2B and A
        features = jnp.concatenate([centered * centered, centered / scale], axis=-1)
        coefficients = jnp.concatenate(
            [
                jnp.concatenate([precision, precision], axis=0),
                jnp.concatenate([-2.0 * weighted, jnp.zeros_like(weighted)], axis=0),
            ],
            axis=-1,
        )
        both = features @ coefficients.T
        num_classes = precision.shape[0]
        squares = both[..., num_classes:]
        constant = constant / scale / scale
        eps = jnp.finfo(both.dtype).eps
        bound = (3 * num_features + 8) * eps * (squares + constant)
        inexact = 0.5 * bound > TOLERANCES[both.dtype.name]["atol"] / scale / scale
        return both[..., :num_classes] + constant, inexact

    def scaled_quadratic(self, rows):
        """``(s, q)`` with ``sum_j (x_j - mu_kj)^2 / s_kj^2 = s^2 q`` for rows (n, D) against
        every class: ``q`` (n, K) stays finite for any finite row."""
        scale = self._row_scale(rows, self._expansion()[0])
        fast, inexact = self.expanded_quadratic(rows, scale)

        # Rematerialized, the elementwise pass leaves only (loc, variances) as residuals: the
        # branch not taken fills the other's residuals with zeros, which would cost (n, K, D).
        def elementwise(rows, scale, loc, variances):
            column = scale[..., None, None]
            return _elementwise_quadratic(rows[..., None, :] / column, loc / column, variances)

        def exact_where_needed():
            exact = jax.checkpoint(elementwise)(rows, scale, self.loc, self.variances)
            return jnp.where(inexact, exact, fast)

        return scale, jax.lax.cond(jnp.any(inexact), exact_where_needed, lambda: fast)

    def quadratic_scores(self, rows):
        """``log p(x | k) + s^2 min_l q_l / 2`` (n, K): finite, 0 at the nearest class before
        the normalizers, -inf at most where another class is infinitely closer."""
        scale, quadratic = self.scaled_quadratic(rows)
        lowest = jnp.min(quadratic, axis=-1, keepdims=True)
        excess = _less_extreme(
            quadratic, jnp.min, scale[..., None], _rounding(rows.shape[-1], lowest)
        )
        return self._log_normalizer() - 0.5 * (excess * scale[..., None]) * scale[..., None]

    def linear_scores(self, rows):
        """``log p(x | k) + (x - c)^T P (x - c) / 2 + max_l s (x - c)^T P (mu_l - c)`` (n, K)
        when every class has the same variances (precision ``P``): linear in the rows, finite
        for any finite row."""
        center, _, weighted, constant = self._expansion()
        scale = self._row_scale(rows, center)[..., None]
        centered = rows / scale - center / scale
        dots = centered @ weighted.T
        magnitude = jnp.linalg.norm(centered, axis=-1, keepdims=True) * jnp.max(
            jnp.linalg.norm(weighted, axis=-1)
        )
        excess = _less_extreme(dots, jnp.max, scale, _rounding(rows.shape[-1], magnitude))
        return excess * scale - 0.5 * constant + self._log_normalizer()

    def log_prob(self, value):
        one_row = jnp.ndim(value) == 1 or jnp.shape(value)[-2] == 1
        if not one_row or len(self.batch_shape) != 1:
            return self._log_normalizer() - 0.5 * _elementwise_quadratic(
                value, self.loc, self.variances
            )
        scale, quadratic = self.scaled_quadratic(
            value if jnp.ndim(value) == 1 else value[..., 0, :]
        )
        quadratic = (quadratic * scale[..., None]) * scale[..., None]
        return self._log_normalizer() - 0.5 * quadratic

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.sqrt(self.variances) * noise
