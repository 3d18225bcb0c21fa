"""The Gaussian emissions as NumPyro distributions (imported on first use, with NumPyro); their
own log density scores any batch of sample and plate dimensions, not only rows by classes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from numpyro.distributions import constraints

from genprob.families.gaussian.distributions import class_constant, diagonal_log_normalizer

__all__ = ["WhitenedNormal", "DiagonalNormal"]


class WhitenedNormal(dist.Distribution):
    r"""Gaussian given by a whitening matrix: ``log p(x) = -1/2 ||(x - loc) W||^2 + const``,
    ``W^T Sigma W = I`` on the retained subspace (docs/gaussian.md).

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

    def _class_constant(self):
        return class_constant(self.rank, self.log_normalizer)

    def log_prob(self, value):
        if self.shared:
            # one (n, D) x (D, r) product for the rows, about the mean of the class means
            center = jnp.mean(self.loc.reshape(-1, self.loc.shape[-1]), axis=0)
            z = (value - center) @ self.whitening - (self.loc - center) @ self.whitening
        else:
            z = jnp.einsum("...kd,...kde->...ke", value - self.loc, self.whitening)
        return -0.5 * jnp.sum(z * z, axis=-1) + self._class_constant()

    def labeled_statistics(self, X, one_hot):
        """Class means and scatter matrices about them (K, D, D) of labeled rows (NumPy)."""
        means = _class_means(X, one_hot)
        scatter = np.stack(
            [(X - m).T @ ((X - m) * w[:, None]) for m, w in zip(means, one_hot.T, strict=True)]
        )
        return {"means": means, "scatter": scatter}

    def labeled_log_prob(self, stats):
        """``sum_i log p(x_i | y_i)`` of labeled rows from their scatter ``S``: O(K D^2 r)."""
        counts, scatter = stats["counts"], stats["scatter"]
        offset = stats["means"] - self.loc  # (K, D)
        if self.shared:
            spread = jnp.sum((jnp.sum(scatter, axis=0) @ self.whitening) * self.whitening)
            between = jnp.sum(counts * jnp.sum((offset @ self.whitening) ** 2, axis=-1))
        else:
            spread = jnp.sum((scatter @ self.whitening) * self.whitening)
            moved = jnp.einsum("kd,kdr->kr", offset, self.whitening)
            between = jnp.sum(counts * jnp.sum(moved * moved, axis=-1))
        constant = jnp.broadcast_to(self._class_constant(), counts.shape)
        return -0.5 * (spread + between) + counts @ constant

    def sample(self, key, sample_shape=()):
        # the coloring is (D, r) on a retained subspace of r dimensions
        shape = tuple(sample_shape) + self.batch_shape + jnp.shape(self.coloring)[-1:]
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.einsum("...de,...e->...d", self.coloring, noise)


class DiagonalNormal(dist.Distribution):
    r"""Independent normal features: ``sum_j (x_j - mu_j)^2 / var_j`` term by term, as
    scikit-learn's Gaussian naive Bayes.

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
    #: what :meth:`host_sample` reads (the ArviZ container's replicas are drawn by NumPy)
    host_parameters = ("loc", "variances")

    @staticmethod
    def host_sample(rng, loc, variances, shape):
        """A NumPy draw of ``shape`` (``numpy.random.Generator`` ``rng``; parameters broadcast)."""
        return rng.normal(loc, np.sqrt(np.maximum(variances, 0.0)), shape)

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

    def log_prob(self, value):
        quadratic = jnp.sum((value - self.loc) ** 2 / self.variances, axis=-1)
        return self._log_normalizer() - 0.5 * quadratic

    def labeled_statistics(self, X, one_hot):
        """Class means and squared deviations from them (K, D) of labeled rows (NumPy)."""
        means = _class_means(X, one_hot)
        squares = np.stack([w @ (X - m) ** 2 for m, w in zip(means, one_hot.T, strict=True)])
        return {"means": means, "squares": squares}

    def labeled_log_prob(self, stats):
        """``sum_i log p(x_i | y_i)`` over the labeled rows from their statistics, O(K D)."""
        counts = stats["counts"]
        deviation = stats["squares"] + counts[:, None] * (stats["means"] - self.loc) ** 2
        return counts @ self._log_normalizer() - 0.5 * jnp.sum(deviation / self.variances)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.sqrt(self.variances) * noise


def _class_means(X, one_hot):
    """Class means (K, D) (0 for a class without rows)."""
    return (one_hot.T @ X) / np.maximum(one_hot.sum(axis=0), 1.0)[:, None]
