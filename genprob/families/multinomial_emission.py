"""Multinomial features as a NumPyro distribution. Imported on first use, with NumPyro."""

from __future__ import annotations

import jax.numpy as jnp
import numpyro.distributions as dist
import scipy.sparse
import scipy.special
from jax.scipy.special import gammaln
from numpyro.distributions import constraints

from genprob.families._discrete import class_feature_shapes, linear_log_prob
from genprob.families.multinomial import _map_stored, _scipy_row_term, multinomial_linear_form

__all__ = ["MultinomialFeatures"]


class MultinomialFeatures(dist.Distribution):
    """Word counts (probabilities ``probs`` (K, D)) given each row's own length (BCOO rows
    (n, 1, D) too); :meth:`sample` draws documents of length ``total_count`` (None: no sampling)."""

    arg_constraints = {"probs": constraints.simplex}
    support = constraints.independent(constraints.nonnegative_integer, 1)
    pytree_data_fields = ("probs",)
    pytree_aux_fields = ("total_count",)

    def __init__(self, probs, total_count=None, *, validate_args=None):
        self.probs = probs
        self.total_count = total_count
        super().__init__(**class_feature_shapes(probs), validate_args=validate_args)

    def linear_form(self):
        """``(weights, offset)``: the class-dependent part ``x . log probs[k]`` (offset 0)."""
        return multinomial_linear_form(self.probs)

    def log_prob(self, value):
        weights, offset = self.linear_form()
        if scipy.sparse.issparse(value):  # rows (n, D) scored on the host
            return linear_log_prob(value, weights, offset) + _scipy_row_term(value)
        ones = jnp.ones(weights.shape[-1], weights.dtype)
        length = value @ ones
        log_factorials = _map_stored(value, lambda v: gammaln(v + 1.0)) @ ones
        # length and log_factorials have shape (..., 1) or (..., K): they broadcast over classes.
        return linear_log_prob(value, weights, offset) + gammaln(length + 1.0) - log_factorials

    def labeled_statistics(self, X, one_hot):
        """Word counts per class of labeled rows and their summed multinomial coefficients."""
        coefficients = scipy.special.gammaln(X.sum(axis=-1) + 1.0).sum()
        coefficients -= scipy.special.gammaln(X + 1.0).sum()
        return {"feature_counts": one_hot.T @ X, "coefficients": coefficients}

    def labeled_log_prob(self, stats):
        """``sum_i log p(x_i | y_i)`` over the labeled rows, from their statistics: O(K D)."""
        weights, _ = self.linear_form()
        return jnp.sum(stats["feature_counts"] * weights) + stats["coefficients"]

    def sample(self, key, sample_shape=()):
        if self.total_count is None:
            raise ValueError(
                "sampling multinomial features needs a document length: build the story with "
                "MultinomialStory(total_count=n)."
            )
        total_count = int(self.total_count)  # concrete: sampling runs outside compiled code
        draws = dist.Multinomial(total_count=total_count, probs=self.probs).sample(
            key, sample_shape
        )
        return draws.astype(jnp.result_type(self.probs))
