"""The emission of a story with missing entries left out (see :mod:`genprob.engine.masking`).
Imported on first use, with NumPyro."""

from __future__ import annotations

import jax.numpy as jnp
import numpyro.distributions as dist

from genprob.engine.masking import fill_missing
from genprob.story import Story

__all__ = ["MaskedEmission"]


class MaskedEmission(dist.Distribution):
    """The emission of ``story`` with NaN entries of a value left out (batch (K,), event (D,))."""

    arg_constraints = {}
    pytree_data_fields = ("story", "params", "inner")

    def __init__(self, story: Story, params: dict, *, validate_args=None):
        self.story = story
        self.params = params
        self.inner = story.emission(params)
        super().__init__(
            batch_shape=self.inner.batch_shape,
            event_shape=self.inner.event_shape,
            validate_args=validate_args,
        )

    @property
    def support(self):
        return self.inner.support

    def log_prob(self, value):
        value = jnp.asarray(value)
        if value.ndim < 2 or value.shape[-2] != 1:
            raise ValueError(
                f"a masked emission scores rows against every class: value must have shape "
                f"(..., 1, D), got {value.shape}."
            )
        batch = value.shape[:-2]
        rows = value.reshape(-1, value.shape[-1])
        filled, observed = fill_missing(rows)
        scores = self.story.observed_log_prob(self.params, filled, observed)
        # complete rows keep the emission's own score (bitwise what they get without NaN)
        complete = self.inner.log_prob(filled[:, None, :])
        scores = jnp.where(observed.all(axis=-1, keepdims=True), complete, scores)
        return scores.reshape(batch + scores.shape[-1:])

    def sample(self, key, sample_shape=()):
        return self.inner.sample(key, sample_shape)
