"""Evaluating parameter draws (exact or NUTS) on data: pointwise log-likelihood and predictions
(docs/reference/draws.md)."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from genprob import core
from genprob.engine import execution
from genprob.engine._validation import check_features
from genprob.story import CLASS_PRIOR, Story

__all__ = ["flatten_draws", "pointwise_log_likelihood", "posterior_predict_proba", "DRAW_BATCH"]

#: Draws evaluated together when mapping over posterior draws (bounds memory at batch * n * K).
DRAW_BATCH = 256


def flatten_draws(draws: dict):
    """Draws with any leading batch shape as ``(flat draws, batch_shape)`` (one draw axis)."""
    class_prior = jnp.asarray(draws[CLASS_PRIOR])
    batch_shape = class_prior.shape[:-1]
    ndim = len(batch_shape)
    size = math.prod(batch_shape)
    flat = {k: jnp.reshape(jnp.asarray(v), (size,) + jnp.shape(v)[ndim:]) for k, v in draws.items()}
    return flat, batch_shape


@partial(jax.jit, static_argnums=(4, 5))
def _map_draws(story, flat, X, codes, batch_size, proba):
    def one(params):
        if proba:
            return core.predict_proba(story, params, X)
        return core.log_likelihood(story, params, X, codes, pointwise=True)

    return jax.lax.map(one, flat, batch_size=batch_size)


def _over_draws(story, draws, X, y, proba):
    """``batch_shape + (n, ...)`` NumPy values at every draw, ``DRAW_BATCH`` draws at a time."""
    X = check_features(
        X, keep_sparse=True, to_device=True, allow_nan=core.reads_nan_as_missing(story)
    )
    codes = jnp.full(X.shape[0], -1, jnp.int32) if y is None else jnp.asarray(y, jnp.int32)
    flat, batch_shape = flatten_draws(draws)
    batch = min(DRAW_BATCH, max(math.prod(batch_shape), 1))
    # rows padded to their bucket (a new row count compiles nothing); the padding's are cut off
    padded_X, padded_codes = execution.padded(X, codes)
    values = np.asarray(_map_draws(story, flat, padded_X, padded_codes, batch, proba))
    # cut on the host: a slice of a JAX array compiles per row count
    return values[:, : X.shape[0]].reshape(batch_shape + (X.shape[0],) + values.shape[2:])


def pointwise_log_likelihood(story: Story, draws: dict, X, y=None) -> np.ndarray:
    """Per-row log-likelihood at every draw, ``batch_shape + (n,)``: ``log p(x_i, y_i | θ_s)``
    on labeled rows, the marginal ``log Σ_k p(x_i, k | θ_s)`` on unlabeled ones (y = -1, or
    every row when y is None)."""
    return _over_draws(story, draws, X, y, proba=False)


def posterior_predict_proba(story: Story, draws: dict, X) -> np.ndarray:
    """Class probabilities ``p(y = k | x_i, θ_s)`` at every draw, ``batch_shape + (n, K)``
    (their mean over draws is the posterior predictive)."""
    return _over_draws(story, draws, X, None, proba=True)
