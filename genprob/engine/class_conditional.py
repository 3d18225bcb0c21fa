"""The feature site of the NumPyro model: each row's features given its class, the class summed
out where the label is missing. Imported on first use, with NumPyro."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

__all__ = ["ClassConditional", "unlabeled_log_likelihood"]


class ClassConditional(dist.Distribution):
    """Features of each row given its class, the class summed out where it is unknown.

    Row i's density is ``p(x_i | labels[i])``, or ``sum_k pi_k p(x_i | k)`` where ``labeled[i]`` is
    false (``labeled`` None: every row; ``class_log_prior`` (K,) needed only then); ``emission``
    has batch shape ``(K,)`` and event shape ``(D,)``."""

    arg_constraints = {}
    pytree_data_fields = ("emission", "labels", "labeled", "class_log_prior")

    def __init__(self, emission, labels, labeled=None, class_log_prior=None, *, validate_args=None):
        self.emission = emission
        self.labels = labels
        self.labeled = labeled
        self.class_log_prior = class_log_prior
        super().__init__(
            batch_shape=jnp.shape(labels),
            event_shape=emission.event_shape,
            validate_args=validate_args,
        )

    @constraints.dependent_property(is_discrete=False, event_dim=1)
    def support(self):
        return self.emission.support

    def log_prob(self, value):
        by_class = self.emission.log_prob(jnp.expand_dims(value, -1 - len(self.event_shape)))
        chosen = jnp.take_along_axis(by_class, self.labels[..., None], axis=-1)[..., 0]
        if self.labeled is None:
            return chosen
        marginal = jax.nn.logsumexp(by_class + self.class_log_prior, axis=-1)
        return jnp.where(self.labeled, chosen, marginal)

    def sample(self, key, sample_shape=()):
        # every class's features, the row's own kept: K-fold work, but only ``sample`` is needed
        shape = tuple(sample_shape) + self.batch_shape
        draws = self.emission.sample(key, shape)  # shape + (K,) + event
        index = jnp.broadcast_to(self.labels, shape)
        index = index.reshape(shape + (1,) * (1 + len(self.event_shape)))
        return jnp.take_along_axis(draws, index, axis=len(shape))[..., 0, :]


def unlabeled_log_likelihood(emission, class_log_prior, blocks, num_unlabeled):
    """``sum_i log sum_k pi_k p(x_i | k)`` over the first ``num_unlabeled`` rows of ``blocks``
    (B, c, D); value and gradient per block together, so reverse mode keeps no per-row values."""
    leaves, treedef = jax.tree_util.tree_flatten(emission)
    inexact = [jnp.issubdtype(jnp.result_type(leaf), jnp.inexact) for leaf in leaves]
    pairs = list(zip(leaves, inexact, strict=True))
    size = blocks.shape[1]
    dtype = jnp.result_type(class_log_prior)

    def block_total(params, start, block):
        floats = iter(params[0])
        rebuilt = [next(floats) if keep else leaf for leaf, keep in pairs]
        by_class = jax.tree_util.tree_unflatten(treedef, rebuilt).log_prob(block[:, None, :])
        marginal = jax.nn.logsumexp(by_class + params[1], axis=-1)
        return jnp.sum(jnp.where(start + jnp.arange(size) < num_unlabeled, marginal, 0.0))

    def value_and_grad(params):
        zero = jax.tree_util.tree_map(jnp.zeros_like, params)

        def scored(start, block):
            return jax.value_and_grad(block_total)(params, start, block)

        def skipped(start, block):
            return jnp.zeros((), dtype), zero

        def step(carry, item):
            value, grad = jax.lax.cond(item[0] < num_unlabeled, scored, skipped, *item)
            return (carry[0] + value, jax.tree_util.tree_map(jnp.add, carry[1], grad)), None

        starts = jnp.arange(blocks.shape[0], dtype=jnp.int32) * size
        return jax.lax.scan(step, (jnp.zeros((), dtype), zero), (starts, blocks))[0]

    @jax.custom_vjp
    def total(params):
        return value_and_grad(params)[0]

    def backward(grad, cotangent):
        return (jax.tree_util.tree_map(lambda g: cotangent * g, grad),)

    total.defvjp(value_and_grad, backward)
    floats = [leaf for leaf, keep in pairs if keep]
    return total((floats, class_log_prior))
