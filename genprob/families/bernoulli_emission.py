"""Bernoulli features as a NumPyro distribution. Imported on first use, with NumPyro."""

from __future__ import annotations

import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

from genprob.families._discrete import class_feature_shapes, linear_log_prob
from genprob.families.bernoulli import bernoulli_linear_form

__all__ = ["BernoulliFeatures"]


class BernoulliFeatures(dist.Distribution):
    """Independent Bernoulli features of probabilities ``probs`` (K, D): batch shape (K,), event
    shape (D,); a linear form, so ``log_prob`` accepts a BCOO matrix (n, 1, D) too."""

    arg_constraints = {"probs": constraints.unit_interval}
    support = constraints.independent(constraints.boolean, 1)
    pytree_data_fields = ("probs",)
    #: what :meth:`host_sample` reads (the ArviZ container's replicas are drawn by NumPy)
    host_parameters = ("probs",)

    @staticmethod
    def host_sample(rng, probs, shape):
        """A NumPy draw of ``shape`` (``numpy.random.Generator`` ``rng``; ``probs`` broadcast)."""
        return rng.random(shape) < probs

    def __init__(self, probs, *, validate_args=None):
        self.probs = probs
        super().__init__(**class_feature_shapes(probs), validate_args=validate_args)

    def linear_form(self):
        """``(weights, offset)`` with ``log p(x | k) = x . weights[k] + offset[k]``."""
        return bernoulli_linear_form(self.probs)

    def log_prob(self, value):
        weights, offset = self.linear_form()
        return linear_log_prob(value, weights, offset)

    def labeled_statistics(self, X, one_hot):
        """Ones per class and feature of labeled rows (NumPy, once per data set)."""
        return {"feature_counts": one_hot.T @ X}

    def labeled_log_prob(self, stats):
        """``sum_i log p(x_i | y_i)`` over the labeled rows, from their statistics: O(K D)."""
        weights, offset = self.linear_form()
        return jnp.sum(stats["feature_counts"] * weights) + stats["counts"] @ offset

    def sample(self, key, sample_shape=()):
        draws = dist.Bernoulli(probs=self.probs).sample(key, sample_shape)
        return draws.astype(jnp.result_type(self.probs))
