"""The padded Dirichlet prior, its constraint and bijection, and categorical features as NumPyro
objects (imported on first use)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from jax.scipy.special import gammaln, xlogy
from numpyro.distributions import constraints
from numpyro.distributions.transforms import StickBreakingTransform, Transform, biject_to

from genprob.families._discrete import floor_log
from genprob.families.categorical import _check_n_categories, category_mask  # noqa

__all__ = [
    "CategoricalFeatures",
    "PaddedDirichlet",
    "PaddedSimplex",
    "PaddedStickBreakingTransform",
]


# -- the padded Dirichlet prior ------------------------------------------------------------------
class _OfCategories:
    """A constraint or transform set by ``n_categories`` alone (static in its pytree)."""

    def __init__(self, n_categories):
        self.n_categories = _check_n_categories(n_categories)

    def tree_flatten(self):
        return (), ((), {"n_categories": self.n_categories})

    def eq(self, other, static=False):
        return type(other) is type(self) and self.n_categories == other.n_categories


class PaddedSimplex(_OfCategories, constraints.Constraint):
    """Padded tables (..., D, M): row j is a probability vector on its first ``k_j`` cells, zeros
    after."""

    event_dim = 2

    def __call__(self, x):
        mask = jnp.asarray(category_mask(self.n_categories))
        total = jnp.sum(jnp.where(mask, x, 0.0), axis=-1)
        ok = jnp.all(jnp.where(mask, x >= 0, x == 0), axis=-1) & (jnp.abs(total - 1.0) < 1e-6)
        return jnp.all(ok, axis=-1)

    def feasible_like(self, prototype):
        mask = category_mask(self.n_categories, float)
        table = mask / mask.sum(axis=-1, keepdims=True)
        return jnp.broadcast_to(jnp.asarray(table, dtype=prototype.dtype), prototype.shape)

    def __hash__(self):
        return hash((PaddedSimplex, self.n_categories))

    def __repr__(self):
        return f"PaddedSimplex(n_categories={self.n_categories})"


class PaddedStickBreakingTransform(_OfCategories, Transform):
    """Bijection from ``R^(sum_j (k_j - 1))`` to :class:`PaddedSimplex` tables (D, M): NumPyro's
    stick-breaking per group of features of equal ``k_j`` (ascending ``k``)."""

    domain = constraints.real_vector

    @property
    def codomain(self):
        return PaddedSimplex(self.n_categories)

    def _groups(self):
        """(k, features, start, stop) for every distinct category count k."""
        ks = np.asarray(self.n_categories)
        start = 0
        groups = []
        for k in np.unique(ks):
            features = np.flatnonzero(ks == k)
            stop = start + features.size * (int(k) - 1)
            groups.append((int(k), features, start, stop))
            start = stop
        return groups

    def __call__(self, x):
        batch = x.shape[:-1]
        table = jnp.zeros(batch + (len(self.n_categories), max(self.n_categories)), x.dtype)
        for k, features, start, stop in self._groups():
            if k == 1:
                block = jnp.ones(batch + (features.size, 1), x.dtype)
            else:
                coords = x[..., start:stop].reshape(batch + (features.size, k - 1))
                block = StickBreakingTransform()(coords)
            table = table.at[..., features, :k].set(block)
        return table

    def _inverse(self, y):
        batch = y.shape[:-2]
        parts = []
        for k, features, _, _ in self._groups():
            if k > 1:
                coords = StickBreakingTransform()._inverse(y[..., features, :k])
                parts.append(coords.reshape(batch + (features.size * (k - 1),)))
        if not parts:
            return jnp.zeros(batch + (0,), y.dtype)
        return jnp.concatenate(parts, axis=-1)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        batch = x.shape[:-1]
        total = jnp.zeros(batch, x.dtype)
        for k, features, start, stop in self._groups():
            if k > 1:
                coords = x[..., start:stop].reshape(batch + (features.size, k - 1))
                block = y[..., features, :k]
                total = total + StickBreakingTransform().log_abs_det_jacobian(coords, block).sum(-1)
        return total

    def forward_shape(self, shape):
        return shape[:-1] + (len(self.n_categories), max(self.n_categories))

    def inverse_shape(self, shape):
        return shape[:-2] + (sum(k - 1 for k in self.n_categories),)


@biject_to.register(PaddedSimplex)
def _transform_to_padded_simplex(constraint):
    return PaddedStickBreakingTransform(constraint.n_categories)


class PaddedDirichlet(dist.Distribution):
    """Independent Dirichlets of sizes ``n_categories`` as one padded table: ``concentration``
    (..., D, M), of which row j's first ``k_j`` cells are used."""

    arg_constraints = {}
    pytree_data_fields = ("concentration",)
    pytree_aux_fields = ("n_categories",)

    def __init__(self, concentration, n_categories, *, validate_args=None):
        self.n_categories = _check_n_categories(n_categories)
        self.concentration = concentration
        shape = jnp.shape(concentration)
        if shape[-2:] != (len(self.n_categories), max(self.n_categories)):
            raise ValueError(
                f"concentration has event shape {shape[-2:]}; expected "
                f"{(len(self.n_categories), max(self.n_categories))}."
            )
        super().__init__(
            batch_shape=shape[:-2], event_shape=shape[-2:], validate_args=validate_args
        )

    @constraints.dependent_property(is_discrete=False, event_dim=2)
    def support(self):
        return PaddedSimplex(self.n_categories)

    def log_prob(self, value):
        mask = jnp.asarray(category_mask(self.n_categories))
        alpha = jnp.where(mask, self.concentration, 1.0)
        normalizer = gammaln(jnp.sum(jnp.where(mask, alpha, 0.0), -1)) - jnp.sum(
            jnp.where(mask, gammaln(alpha), 0.0), -1
        )
        kernel = jnp.sum(jnp.where(mask, xlogy(alpha - 1.0, value), 0.0), -1)
        return jnp.sum(normalizer + kernel, axis=-1)

    def sample(self, key, sample_shape=()):
        mask = jnp.asarray(category_mask(self.n_categories))
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        alpha = jnp.broadcast_to(jnp.where(mask, self.concentration, 1.0), shape)
        # log-gamma draws keep tiny concentrations from underflowing to an all-zero row.
        log_gamma = jax.random.loggamma(key, alpha, dtype=jnp.result_type(self.concentration))
        return jax.nn.softmax(jnp.where(mask, log_gamma, -jnp.inf), axis=-1)


class CategoricalFeatures(dist.Distribution):
    """Independent categorical features of a padded table ``probs`` (K, D, M); codes are
    validated first (:meth:`CategoricalStory.validate`: gathers clamp out-of-range ones)."""

    arg_constraints = {}
    support = constraints.independent(constraints.nonnegative_integer, 1)
    pytree_data_fields = ("probs",)

    def __init__(self, probs, *, validate_args=None):
        self.probs = probs
        super().__init__(
            batch_shape=jnp.shape(probs)[:-2],
            event_shape=jnp.shape(probs)[-2:-1],
            validate_args=validate_args,
        )

    def log_prob(self, value):
        log_probs = floor_log(self.probs)  # (K, D, M)
        num_classes, num_features, _ = log_probs.shape
        codes = jnp.asarray(value).astype(jnp.int32)
        feature = jnp.arange(num_features)
        if codes.ndim >= 2 and codes.shape[-2] == 1:
            # one row against every class: gather (D, M, K) at (j, x_j), sum over features
            by_feature = jnp.moveaxis(log_probs, 0, -1)[feature, codes[..., 0, :]]
            return by_feature.sum(axis=-2)
        return log_probs[jnp.arange(num_classes)[:, None], feature, codes].sum(axis=-1)

    def labeled_statistics(self, X, one_hot):
        """Rows per class, feature and code (K, D, M) of labeled rows (NumPy)."""
        codes = X.astype(np.int64)
        # (m, D, M) indicators: each labeled row is read once, outside the sampler
        indicators = codes[..., None] == np.arange(jnp.shape(self.probs)[-1])
        return {"category_counts": np.einsum("mk,mdc->kdc", one_hot, indicators)}

    def labeled_log_prob(self, stats):
        """``sum_i log p(x_i | y_i)`` over the labeled rows, from their statistics: O(K D M)."""
        return jnp.sum(stats["category_counts"] * floor_log(self.probs))

    def sample(self, key, sample_shape=()):
        draws = dist.Categorical(probs=self.probs).sample(key, sample_shape)
        return draws.astype(jnp.result_type(self.probs))
