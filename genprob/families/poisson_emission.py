"""Poisson features as a NumPyro distribution. Imported on first use, with NumPyro."""

from __future__ import annotations

import jax.numpy as jnp
import numpyro.distributions as dist
import scipy.special
from jax.scipy.special import xlogy

__all__ = ["PoissonFeatures"]


class PoissonFeatures(dist.Independent):
    """NumPyro's ``Poisson(rates).to_event(1)`` (rates (K, D)), with the labeled rows' density
    from their statistics."""

    def __init__(self, rates, *, validate_args=None):
        super().__init__(dist.Poisson(rates), 1, validate_args=validate_args)

    def log_prob(self, value):
        # defined here: the labeled statistics below stand for exactly this density
        return super().log_prob(value)

    def labeled_statistics(self, X, one_hot):
        """Counts per class and feature of labeled rows, and their summed ``log x_ij!`` (NumPy)."""
        return {
            "feature_sums": one_hot.T @ X,
            "log_factorials": scipy.special.gammaln(X + 1.0).sum(),
        }

    def labeled_log_prob(self, stats):
        """``sum_i log p(x_i | y_i)`` over the labeled rows, from their statistics: O(K D)."""
        rates = self.base_dist.rate
        linear = jnp.sum(xlogy(stats["feature_sums"], rates) - stats["counts"][:, None] * rates)
        return linear - stats["log_factorials"]
