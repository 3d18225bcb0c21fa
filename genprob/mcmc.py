"""NUTS on the story's NumPyro model, with labeled, unlabeled (y = -1) or mixed rows.

The model is :func:`genprob.core.model`, the same one whose log density is the marginal
log-likelihood plus the log prior: labels are observed where known and the class is summed out of
the feature site (:class:`~genprob.story.ClassConditional`) where ``y = -1``. No discrete latent
site is left, so NUTS runs without enumeration.

Posterior label draws for the unlabeled rows (the equivalent of NumPyro's ``infer_discrete``):
for each posterior draw θ_s, draw ``y_i ~ Categorical(p(k | x_i, θ_s))`` with the class posterior
from :func:`genprob.core.predict_log_proba` (the one ``joint_log_prob`` path); labeled rows keep
their label.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer import MCMC, NUTS, init_to_uniform, init_to_value

from genprob import core
from genprob.em import (
    _latent_sites,
    _trace_prior,
    as_features,
    encode_partial_labels,
    params_from_latent,
)
from genprob.masking import has_missing, marginalized
from genprob.story import CLASS_PRIOR, Story

__all__ = ["run_nuts", "fit_nuts", "params_from_samples", "sample_labels"]


def _prepare(story: Story, X, y, num_classes):
    X = as_features(X, allow_nan=story.supports_missing)  # NaN: missing, summed out by the model
    if y is None:
        y = np.full(X.shape[0], -1)
    codes, num_classes = encode_partial_labels(y, num_classes=num_classes)
    if codes.shape[0] != X.shape[0]:
        raise ValueError(f"y has {codes.shape[0]} rows but X has {X.shape[0]}.")
    (marginalized(story) if has_missing(X) else story).validate(X)
    return X, jnp.asarray(codes), num_classes


def run_nuts(
    story: Story,
    X,
    y=None,
    *,
    num_classes: int | None = None,
    num_warmup: int = 500,
    num_samples: int = 500,
    num_chains: int = 1,
    seed: int = 0,
    progress_bar: bool = False,
    init_params: dict | None = None,
    chain_method: str = "sequential",
    extra_fields: tuple = ("diverging", "accept_prob", "num_steps", "energy"),
    **nuts_kwargs,
) -> MCMC:
    """Run NUTS on ``core.model`` and return NumPyro's :class:`~numpyro.infer.MCMC` object.

    Args:
        story: the story.
        X: features (n, D), in the current JAX precision.
        y: class codes (n,), -1 for unlabeled rows; None means every row is unlabeled.
        num_classes: K; default: inferred from the labeled rows of ``y`` (pass it when some
            class has no labeled row, e.g. when every row is unlabeled).
        num_warmup: warm-up (adaptation) iterations per chain.
        num_samples: kept draws per chain.
        num_chains: number of chains.
        seed: seed of the run.
        progress_bar: show NumPyro's progress bar.
        init_params: optional starting values of the latent sites (e.g. an EM or MLE fit:
            ``class_prior`` and the story's parameters); default: NumPyro's ``init_to_uniform``.
        chain_method: ``"sequential"``, ``"vectorized"`` or ``"parallel"`` (one device per chain).
        extra_fields: NUTS diagnostics recorded per draw (``mcmc.get_extra_fields()``), e.g. for
            ArviZ's ``sample_stats``.
        **nuts_kwargs: passed to :class:`numpyro.infer.NUTS` (e.g. ``target_accept_prob``).

    Returns:
        The MCMC object after ``run`` (``get_samples``, ``get_extra_fields``, ``print_summary``).
    """
    X, codes, num_classes = _prepare(story, X, y, num_classes)
    if init_params is not None:
        sites = set(_latent_sites(story, num_classes, X.shape[1])) | {CLASS_PRIOR}
        values = {k: jnp.asarray(v, X.dtype) for k, v in init_params.items() if k in sites}
        init_strategy = init_to_value(values=values)
    else:
        init_strategy = init_to_uniform
    kernel = NUTS(core.model, init_strategy=init_strategy, **nuts_kwargs)
    mcmc = MCMC(
        kernel,
        num_warmup=int(num_warmup),
        num_samples=int(num_samples),
        num_chains=int(num_chains),
        chain_method=chain_method,
        progress_bar=progress_bar,
    )
    mcmc.run(
        jax.random.PRNGKey(int(seed)),
        story,
        X,
        codes,
        num_classes=num_classes,
        extra_fields=tuple(extra_fields),
    )
    return mcmc


def fit_nuts(story: Story, X, y=None, *, group_by_chain: bool = False, **kwargs) -> dict:
    """Posterior draws of the story's parameters by NUTS.

    Args:
        story: the story.
        X: features (n, D).
        y: class codes (n,), -1 for unlabeled rows; None means every row is unlabeled.
        group_by_chain: keep the chains apart (leading axes ``(num_chains, num_samples)``).
        **kwargs: the options of :func:`run_nuts` (``num_classes``, ``num_warmup``,
            ``num_samples``, ``num_chains``, ``seed``, ``init_params``...).

    Returns:
        Dict site name -> array of draws, leading axis the draw (``num_chains * num_samples``), or
        ``(num_chains, num_samples)`` with ``group_by_chain``. It holds ``class_prior`` and the
        prior's latent sites (for the built-in stories, the same names and shapes as the
        closed-form parameters; see :func:`params_from_samples` for any story).
    """
    return run_nuts(story, X, y, **kwargs).get_samples(group_by_chain=group_by_chain)


def params_from_samples(story: Story, samples: dict, num_features: int) -> dict:
    """The story's named parameters at every draw (the prior run with its sites substituted).

    Args:
        story: the story.
        samples: draws with any leading batch shape (e.g. (S,) or (chains, S)).
        num_features: D.

    Returns:
        Dict of arrays with the draws' leading batch shape, ``class_prior`` included.
    """
    class_prior = jnp.asarray(samples[CLASS_PRIOR])
    batch_shape = class_prior.shape[:-1]
    num_classes = class_prior.shape[-1]
    returned = _sites_returned_by_prior(story, num_classes, num_features)
    if returned is not None:  # the parameters are the draws themselves (built-in stories)
        return {name: samples[name] for name in (CLASS_PRIOR, *returned)}
    sites = _latent_sites(story, num_classes, num_features)
    size = math.prod(batch_shape)
    flat = {
        name: jnp.reshape(jnp.asarray(samples[name]), (size,) + jnp.shape(sites[name]["value"]))
        for name in sites
    }

    def one(latent, prior):
        params = params_from_latent(story, latent, num_classes, num_features)
        params[CLASS_PRIOR] = prior
        return params

    params = jax.vmap(one)(flat, class_prior.reshape(size, num_classes))
    return {k: v.reshape(batch_shape + v.shape[1:]) for k, v in params.items()}


def _sites_returned_by_prior(story: Story, num_classes: int, num_features: int):
    """The names of the prior's latent sites when ``story.prior`` returns exactly them (as the
    built-in stories do), else None.

    Checked by abstract tracing (``jax.eval_shape``): running the prior for real would draw from
    it, and compiling JAX's Gamma sampler for that takes seconds.
    """
    verdict = []

    def run():
        returned, sites = _trace_prior(story, num_classes, num_features)
        sites = {name: site["value"] for name, site in sites.items()}
        same = set(returned) == set(sites) and all(returned[k] is v for k, v in sites.items())
        verdict.append(tuple(sites) if same else None)
        return 0

    jax.eval_shape(run)
    return verdict[0]


def sample_labels(story: Story, samples: dict, X, y, key) -> jax.Array:
    """Posterior label draws: one label per row and per posterior draw.

    For draw s and an unlabeled row i, ``y_i ~ Categorical(p(k | x_i, θ_s))`` (the class posterior
    from :func:`genprob.core.predict_log_proba` at that draw); labeled rows keep their code.
    Together with the draws θ_s these are draws of the joint posterior of parameters and missing
    labels, as NumPyro's ``infer_discrete`` would give for an enumerated model.

    Args:
        story: the story.
        samples: parameter draws (from :func:`fit_nuts`), any leading batch shape.
        X: features (n, D).
        y: class codes (n,), -1 for unlabeled rows.
        key: JAX PRNG key.

    Returns:
        Integer array of shape ``batch_shape + (n,)``.
    """
    X = as_features(X)
    num_classes = jnp.shape(samples[CLASS_PRIOR])[-1]
    codes, _ = encode_partial_labels(y, num_classes=num_classes)
    if codes.shape[0] != X.shape[0]:
        raise ValueError(f"y has {codes.shape[0]} rows but X has {X.shape[0]}.")
    params = params_from_samples(story, samples, X.shape[1])
    batch_shape = params[CLASS_PRIOR].shape[:-1]
    size = math.prod(batch_shape)
    flat = {k: v.reshape((size,) + v.shape[len(batch_shape) :]) for k, v in params.items()}
    keys = jax.random.split(key, size)
    draws = _draw_labels(story, flat, X, jnp.asarray(codes), keys)
    return draws.reshape(batch_shape + (X.shape[0],))


@jax.jit
def _select_labels(codes, draws):
    return jnp.where(codes >= 0, codes, draws)


def _draw_labels(story, params, X, codes, keys):
    def one(p, key):
        log_posterior = core.predict_log_proba(story, p, X)
        return jax.random.categorical(key, log_posterior, axis=-1)

    draws = jax.vmap(one)(params, keys)
    return _select_labels(codes, draws).astype(jnp.int32)
