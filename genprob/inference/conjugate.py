"""Conjugate posterior factors (Beta, Gamma, Dirichlet) that families return from
``Story.conjugate_factors``: NumPy, SciPy and NumPyro only, so that families can import it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.special

from genprob._lazy import LazyModule

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

dist = LazyModule("numpyro.distributions")


__all__ = ["ConjugateFactor", "dirichlet"]


# -- conjugate factors ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ConjugateFactor:
    """The posterior of one named parameter: independent Beta, Gamma or Dirichlet distributions
    whose batch and event shapes together are the parameter's shape, held as NumPy arrays.

    Attributes:
        kind: ``"beta"``, ``"gamma"`` or ``"dirichlet"`` (over the last axis).
        concentration: first shape parameter (array shaped like the parameter).
        second: ``concentration0`` (beta) or ``rate`` (gamma); None for a Dirichlet.
        n_categories: category count of each row of a padded table, else None.
        columns: the columns of ``X`` of the parameter's features (a mixed table's block).

    A family's subclass gives the posterior predictive of new rows (:meth:`log_predictive`).
    """

    kind: str
    concentration: np.ndarray
    second: np.ndarray | None = None
    n_categories: tuple | None = None
    columns: tuple | None = None

    def __post_init__(self):
        concentration = np.asarray(self.concentration)
        object.__setattr__(self, "concentration", concentration)
        if self.second is not None:
            second = np.broadcast_to(
                np.asarray(self.second, concentration.dtype), concentration.shape
            )
            object.__setattr__(self, "second", second)

    @property
    def _mask(self) -> np.ndarray:
        """(D, M) mask of a padded table's real cells."""
        if self.n_categories is None:
            return np.ones(self.concentration.shape[-1:], bool)
        n_categories = np.asarray(self.n_categories)
        return np.arange(n_categories.max()) < n_categories[:, None]

    def parameters(self) -> dict:
        """The distribution's parameters by their NumPyro names."""
        if self.kind == "beta":
            return {"concentration1": self.concentration, "concentration0": self.second}
        if self.kind == "gamma":
            return {"concentration": self.concentration, "rate": self.second}
        return {"concentration": self.concentration}

    def distribution(self) -> dist.Distribution:
        """The factor as a NumPyro distribution with event shape = the parameter's shape."""
        a = self.concentration
        if self.kind == "beta":
            return dist.Beta(a, self.second).to_event(a.ndim)
        if self.kind == "gamma":
            return dist.Gamma(a, self.second).to_event(a.ndim)
        if self.n_categories is not None:
            raise NotImplementedError("a padded Dirichlet factor comes from its family")
        return dist.Dirichlet(a).to_event(a.ndim - 1)

    def log_prob(self, value) -> float:
        """Posterior log density at the parameter value ``value``."""
        return float(self.distribution().log_prob(np.asarray(value, self.concentration.dtype)))

    def log_predictive(self, X) -> np.ndarray:
        """``log p(x | y = k, data)`` (n, K) of new rows ``X`` (dense or SciPy sparse, on the
        host), their features' posterior predictive under this factor."""
        X = X if self.columns is None else X[:, list(self.columns)]
        return self._log_predictive(X)

    def _log_predictive(self, X) -> np.ndarray:
        raise NotImplementedError(
            f"{type(self).__name__} has no posterior predictive: its family gives none."
        )

    def mean(self) -> np.ndarray:
        """Posterior mean."""
        a = self.concentration
        if self.kind == "beta":
            return a / (a + self.second)
        if self.kind == "gamma":
            return a / self.second
        a = np.where(self._mask, a, 0.0).astype(a.dtype)
        return a / a.sum(axis=-1, keepdims=True)

    def variance(self) -> np.ndarray:
        """Posterior variance (entrywise)."""
        a = self.concentration
        if self.kind == "beta":
            total = a + self.second
            return a * self.second / (total**2 * (total + 1.0))
        if self.kind == "gamma":
            return a / self.second**2
        mean = self.mean()
        total = np.where(self._mask, a, 0.0).astype(a.dtype).sum(axis=-1, keepdims=True)
        return mean * (1.0 - mean) / (total + 1.0)

    def mode(self) -> np.ndarray:
        """Posterior mode; NaN where it is not unique or lies where the density is unbounded
        (a concentration below 1, or a flat Beta(1, 1))."""
        a = self.concentration
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind == "beta":
                b = self.second
                ok = (a >= 1) & (b >= 1) & (a + b > 2)
                return np.where(ok, (a - 1.0) / (a + b - 2.0), np.nan).astype(a.dtype)
            if self.kind == "gamma":
                return np.where(a >= 1, (a - 1.0) / self.second, np.nan).astype(a.dtype)
            mask = self._mask
            excess = np.where(mask, a - 1.0, 0.0)
            total = excess.sum(axis=-1, keepdims=True)
            ok = np.all(np.where(mask, a >= 1, True), axis=-1, keepdims=True) & (total > 0)
            mode = np.where(ok, excess / total, np.nan)
            # a row with a single category is the constant 1 whatever the counts
            single = mask.sum(axis=-1, keepdims=True) == 1
            return np.where(single, mask, mode).astype(a.dtype)

    def sample(self, rng: np.random.Generator, sample_shape=()) -> np.ndarray:
        """Independent NumPy draws ``sample_shape + parameter shape`` (JAX's Gamma sampler
        would compile per shape); Beta and Dirichlet from log-Gamma variates (no underflow)."""
        sample_shape = tuple(sample_shape)
        a = np.asarray(self.concentration, dtype=np.float64)
        dtype = self.concentration.dtype
        if self.kind == "gamma":
            shape = sample_shape + a.shape
            rate = self.second.astype(np.float64)
            return (rng.standard_gamma(np.broadcast_to(a, shape)) / rate).astype(dtype)
        if self.kind == "beta":
            pair = np.stack([a, np.asarray(self.second, dtype=np.float64)], axis=-1)
            log_gamma = _log_gamma_variates(rng, np.broadcast_to(pair, sample_shape + pair.shape))
            difference = log_gamma[..., 0] - log_gamma[..., 1]
            return scipy.special.expit(difference).astype(dtype)
        mask = self._mask
        alpha = np.broadcast_to(np.where(mask, a, 1.0), sample_shape + a.shape)
        log_gamma = np.where(mask, _log_gamma_variates(rng, alpha), -np.inf)
        log_gamma = log_gamma - log_gamma.max(axis=-1, keepdims=True)
        weights = np.exp(log_gamma)
        return (weights / weights.sum(axis=-1, keepdims=True)).astype(dtype)


def _log_gamma_variates(rng: np.random.Generator, shape_parameter) -> np.ndarray:
    """``log G``, ``G ~ Gamma(a, 1)``; for ``a < 1`` as ``log Gamma(a + 1) + log(U) / a``."""
    a = np.asarray(shape_parameter, dtype=np.float64)
    small = a < 1.0
    log_g = np.log(rng.standard_gamma(np.where(small, a + 1.0, a)))
    boost = np.log(rng.uniform(size=a.shape)) / np.where(small, a, 1.0)
    return log_g + np.where(small, boost, 0.0)


def _numpy_rng(key) -> np.random.Generator:
    """A NumPy generator from a JAX PRNG key, an int seed or a Generator."""
    if isinstance(key, np.random.Generator):
        return key
    if isinstance(key, (int, np.integer)):
        return np.random.default_rng(int(key))
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return np.random.default_rng(np.asarray(data, dtype=np.uint32).ravel().tolist())


def dirichlet(concentration, n_categories=None) -> ConjugateFactor:
    """A Dirichlet factor (over the last axis; padded rows when ``n_categories`` is given)."""
    return ConjugateFactor("dirichlet", concentration, None, n_categories)
