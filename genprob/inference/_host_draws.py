"""Draws on the host with NumPy for the ArviZ container's ``prior`` and ``posterior_predictive``
(docs/reference/arviz_io.md); None where a distribution has no NumPy sampler here."""

from __future__ import annotations

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist

from genprob.story import CLASS_PRIOR, Story

__all__ = ["host_prior_sites", "host_replicate"]


def _gamma(rng, concentration, shape):
    return rng.standard_gamma(np.broadcast_to(concentration, shape))


def _dirichlet(rng, concentration, shape):
    draws = _gamma(rng, concentration, shape)
    return draws / draws.sum(axis=-1, keepdims=True)


def _floating(*arrays):
    """The parameters' floating dtype (float32 parameters give float32 draws, as JAX would)."""
    return np.result_type(np.float32, *arrays)


def _as(draws, dtype):
    """Draws in ``dtype``; counts as JAX's default integer."""
    draws = np.asarray(draws)
    if draws.dtype.kind in "iu":
        return draws.astype(jax.dtypes.canonicalize_dtype(np.int64))
    return draws.astype(dtype)


#: distribution type -> (parameter attributes, NumPy draw of ``shape`` from those parameters)
_SAMPLERS = {
    dist.Normal: (("loc", "scale"), lambda rng, loc, scale, shape: rng.normal(loc, scale, shape)),
    dist.LogNormal: (
        ("loc", "scale"),
        lambda rng, loc, scale, shape: np.exp(rng.normal(loc, scale, shape)),
    ),
    dist.HalfNormal: (("scale",), lambda rng, scale, shape: np.abs(rng.normal(0.0, scale, shape))),
    dist.HalfCauchy: (
        ("scale",),
        lambda rng, scale, shape: np.abs(scale * rng.standard_cauchy(shape)),
    ),
    dist.Cauchy: (
        ("loc", "scale"),
        lambda rng, loc, scale, shape: loc + scale * rng.standard_cauchy(shape),
    ),
    dist.StudentT: (
        ("df", "loc", "scale"),
        lambda rng, df, loc, scale, shape: loc + scale * rng.standard_t(df, shape),
    ),
    dist.Exponential: (("rate",), lambda rng, rate, shape: rng.exponential(1.0 / rate, shape)),
    dist.Uniform: (("low", "high"), lambda rng, low, high, shape: rng.uniform(low, high, shape)),
    dist.Gamma: (
        ("concentration", "rate"),
        lambda rng, a, rate, shape: _gamma(rng, a, shape) / rate,
    ),
    # NumPyro's InverseGamma ``rate`` is the scale of 1 / Gamma(concentration, rate)
    dist.InverseGamma: (
        ("concentration", "rate"),
        lambda rng, a, rate, shape: rate / _gamma(rng, a, shape),
    ),
    dist.Beta: (
        ("concentration1", "concentration0"),
        lambda rng, a, b, shape: rng.beta(a, b, shape),
    ),
    dist.Dirichlet: (("concentration",), lambda rng, a, shape: _dirichlet(rng, a, shape)),
    dist.Poisson: (("rate",), lambda rng, rate, shape: rng.poisson(rate, shape)),
    dist.BernoulliProbs: (("probs",), lambda rng, p, shape: rng.random(shape) < p),
}


def _sampler(base):
    """``(parameter names, NumPy draw)``: the table's, the emission's ``host_sample``, or None."""
    kind = type(base)
    if kind in _SAMPLERS:
        return _SAMPLERS[kind]
    if hasattr(kind, "host_sample") and hasattr(kind, "host_parameters"):
        return tuple(kind.host_parameters), kind.host_sample
    return None


def _base(fn):
    """The distribution under ``Independent`` / ``expand`` wrappers (same draws, other shapes)."""
    while isinstance(fn, dist.Independent | dist.ExpandedDistribution):
        fn = fn.base_dist
    return fn


def _draw(fn, rng, shape):
    """A NumPy draw of ``shape`` from ``fn``'s parameters (broadcast to ``shape``), or None."""
    base = _base(fn)
    entry = _sampler(base)
    if entry is None:
        return None
    names, sample = entry
    values = [np.asarray(getattr(base, name)) for name in names]
    return _as(sample(rng, *values, shape), _floating(*values))


def _trace(story: Story, num_classes: int, num_features: int, value: float) -> dict:
    """The prior's latent sites, every site's value fixed at ``value`` (no random draws)."""

    def fixed(site):
        return np.full(site["fn"].shape(), value)

    with numpyro.handlers.trace() as trace, numpyro.handlers.substitute(substitute_fn=fixed):
        story.prior(num_classes, num_features)
    return {
        name: site
        for name, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"]
    }


def host_prior_sites(story: Story, num_classes: int, num_features: int, num_draws: int, rng):
    """``num_draws`` NumPy draws of the class prior and the prior's sites; None when a site has
    no NumPy sampler here or reads another site's value (a hierarchical prior)."""
    try:
        first = _trace(story, num_classes, num_features, 0.5)
        second = _trace(story, num_classes, num_features, 0.25)
    except (TypeError, ValueError):  # a prior that cannot run on fixed site values
        return None
    samples = {}
    for name, site in first.items():
        fn = site["fn"]
        if name not in second or _sampler(_base(fn)) is None:
            return None
        this, other = (list(map(np.asarray, jax.tree.leaves(f))) for f in (fn, second[name]["fn"]))
        if len(this) != len(other) or any(
            a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(this, other, strict=True)
        ):
            return None  # the site's distribution reads an earlier site's value
        samples[name] = _draw(fn, rng, (num_draws, *fn.shape()))
    concentration = np.full(num_classes, float(story.class_concentration))
    samples[CLASS_PRIOR] = _dirichlet(rng, concentration, (num_draws, num_classes))
    return samples


def host_replicate(story: Story, flat: dict, n: int, rng):
    """Replicated ``(X, y)`` of ``n`` rows at each draw of ``flat``, by NumPy (each row's
    features from its own class's emission only); None without a NumPy sampler here."""
    first = {k: v[0] for k, v in flat.items()}
    entry = _sampler(_base(story.emission(first)))
    if entry is None:
        return None
    base = _base(jax.vmap(story.emission)(flat))  # parameters (draws, K, ...)
    class_prior = np.asarray(flat[CLASS_PRIOR], np.float64)
    num_draws, num_classes = class_prior.shape
    bounds = np.cumsum(class_prior, axis=-1)[:, None, :-1]
    y = (rng.random((num_draws, n))[..., None] >= bounds).sum(axis=-1).astype(np.int32)
    names, sample = entry
    rows = np.arange(num_draws)[:, None]
    values = []
    for name in names:
        value = np.asarray(getattr(base, name))
        if value.ndim < 2 or value.shape[:2] != (num_draws, num_classes):
            return None  # a parameter shared by the classes: not the (K, D) layout read here
        values.append(value[rows, y])  # each row's own class: (draws, n, D)
    shape = np.broadcast_shapes(*(v.shape for v in values))
    return _as(sample(rng, *values, shape), _floating(*values)), y
