"""Column blocks of other emissions as one NumPyro distribution (imported with NumPyro)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

__all__ = ["MixedFeatures"]


class MixedFeatures(dist.Distribution):
    """Independent blocks of columns: one emission (batch shape (K,)) per tuple of ``columns``,
    which partition ``range(D)``."""

    arg_constraints = {}
    support = constraints.independent(constraints.real, 1)
    pytree_data_fields = ("emissions",)
    pytree_aux_fields = ("columns",)

    def __init__(self, emissions, columns, *, validate_args=None):
        self.emissions = tuple(emissions)
        self.columns = tuple(tuple(int(c) for c in cols) for cols in columns)
        num_features = sum(len(cols) for cols in self.columns)
        super().__init__(
            batch_shape=self.emissions[0].batch_shape,
            event_shape=(num_features,),
            validate_args=validate_args,
        )

    def log_prob(self, value):
        total = 0.0
        for emission, cols in zip(self.emissions, self.columns, strict=True):
            total = total + emission.log_prob(value[..., jnp.asarray(cols)])
        return total

    def sample(self, key, sample_shape=()):
        keys = jax.random.split(key, len(self.emissions))
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        draws = [
            emission.sample(block_key, sample_shape)
            for emission, block_key in zip(self.emissions, keys, strict=True)
        ]
        out = jnp.zeros(shape, jnp.result_type(*[d.dtype for d in draws], float))
        for draw, cols in zip(draws, self.columns, strict=True):
            out = out.at[..., jnp.asarray(cols)].set(draw.astype(out.dtype))
        return out
