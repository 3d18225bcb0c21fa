"""NUTS on the story's NumPyro model, with labeled, unlabeled (y = -1) or mixed rows.

The model is :func:`genprob.core.model`, the same one whose log density is the marginal
log-likelihood plus the log prior: labels are observed where known and the class is summed out of
the feature site (:class:`~genprob.story.ClassConditional`) where ``y = -1``. No discrete latent
site is left, so NUTS runs without enumeration.

Posterior label draws for the unlabeled rows (the equivalent of NumPyro's ``infer_discrete``):
for each posterior draw θ_s, draw ``y_i ~ Categorical(p(k | x_i, θ_s))`` with the class posterior
from :func:`genprob.core.predict_log_proba` (the one ``joint_log_prob`` path); labeled rows keep
their label.

Starting point and checks. By default every chain starts at a small jitter (in NumPyro's
unconstrained coordinates) around the maximum-likelihood fit: the closed form or EM for stories
with a closed form, :func:`genprob.fit_optimizer` otherwise. Chains started at random points can
settle in different label permutations of a partly labeled mixture, which no single-chain summary
shows. With unlabeled rows the fit is first checked against EM restarts (:func:`best_start`): a
local maximum of the likelihood is replaced by a better mode, with a warning. After sampling,
:func:`diagnose` computes rank-normalized split R-hat, bulk and tail ESS
(Vehtari et al. 2021) and each chain's mean log density, and :class:`SamplingWarning` names what
fails and the likely cause.

Priors. ``priors="data"`` (the default) replaces the story's fixed prior scales by ones set from
each feature's location and spread (:meth:`genprob.story.Story.scaled_to_data`); ``"fixed"``
keeps the story's own prior.
"""

from __future__ import annotations

import math
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from genprob import core
from genprob._lazy import LazyModule
from genprob._limits import check_count, check_posterior_size
from genprob._validation import check_features
from genprob.em import (
    _latent_sites,
    _trace_prior,
    encode_partial_labels,
    params_from_latent,
)
from genprob.masking import has_missing, marginalized
from genprob.story import CLASS_PRIOR, Story

infer = LazyModule("numpyro.infer")
transforms = LazyModule("numpyro.distributions.transforms")

__all__ = [
    "run_nuts",
    "fit_nuts",
    "params_from_samples",
    "sample_labels",
    "diagnose",
    "start_values",
    "best_start",
    "SamplingWarning",
    "RHAT_MAX",
    "ESS_MIN",
    "PRIORS",
    "check_options",
]

#: Largest acceptable rank-normalized split R-hat (Vehtari et al. 2021).
RHAT_MAX = 1.01
#: Smallest acceptable bulk and tail effective sample size (all chains together).
ESS_MIN = 400
#: Accepted values of ``priors``: scales from the data (default) or the story's fixed ones.
PRIORS = ("data", "fixed")
#: Accepted string values of ``init`` (a dict, or one dict per chain, is accepted too).
INITS = ("mle", "uniform")
#: Default sd of the starting jitter in unconstrained coordinates.
JITTER = 0.1


class SamplingWarning(UserWarning):
    """NUTS draws that fail a convergence check (R-hat, ESS, chains in different modes)."""


def _prepare(story: Story, X, y, num_classes):
    # NaN: missing, summed out by the model
    X = check_features(X, keep_sparse=True, to_device=True, allow_nan=story.supports_missing)
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
    extra_fields: tuple = ("diverging", "accept_prob", "num_steps", "energy", "potential_energy"),
    init="mle",
    jitter: float = JITTER,
    priors: str = "data",
    check: bool = True,
    fit: dict | None = None,
    **nuts_kwargs,
) -> infer.MCMC:
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
        init_params: starting values of the latent sites used exactly, without jitter (kept for
            compatibility; ``init`` with a dict is the jittered equivalent).
        chain_method: ``"sequential"``, ``"vectorized"`` or ``"parallel"`` (one device per chain).
        extra_fields: NUTS diagnostics recorded per draw (``mcmc.get_extra_fields()``), e.g. for
            ArviZ's ``sample_stats``; ``potential_energy`` feeds the per-chain mode check.
        init: where the chains start: ``"mle"`` (default: jittered around the closed-form, EM
            or optimizer fit, see :func:`start_values`), ``"uniform"`` (NumPyro's
            ``init_to_uniform``, random points), a dict of parameter values (jittered), or a
            list of such dicts, one per chain (e.g. to test a chain started elsewhere).
        jitter: sd of the Normal jitter added per chain in unconstrained coordinates.
        priors: ``"data"`` (prior scales from each feature's location and spread,
            :meth:`Story.scaled_to_data`) or ``"fixed"`` (the story's own prior).
        check: run :func:`diagnose` and warn (:class:`SamplingWarning`) on failures.
        fit: with ``init="mle"``, the fit already made (e.g. an estimator's ``params_``) instead
            of :func:`start_values`; either way :func:`best_start` checks it against EM
            restarts when rows are unlabeled.
        **nuts_kwargs: passed to :class:`numpyro.infer.NUTS` (e.g. ``target_accept_prob``).

    Returns:
        The MCMC object after ``run`` (``get_samples``, ``get_extra_fields``, ``print_summary``).
        It also carries ``genprob_story`` (the story with the prior actually used) and, when
        ``check``, ``genprob_diagnostics`` (the dict from :func:`diagnose`).

    Raises:
        ValueError: unknown ``init`` or ``priors``, or a negative ``jitter``.
        TypeError: ``num_samples``, ``num_chains`` or ``num_warmup`` not an int.
        genprob._limits.SizeLimitError: more than ``MAX_CHAINS`` chains, more than
            ``MAX_ITERATIONS`` iterations per chain, or draws (or the scores of one step of the
            chains) beyond ``MAX_ARRAY_BYTES``, refused before any work.
    """
    check_options(priors=priors, init=init, jitter=jitter)
    num_samples = check_count(num_samples, "num_samples")
    num_chains = check_count(num_chains, "num_chains")
    num_warmup = check_count(num_warmup, "num_warmup", minimum=0)
    X, codes, num_classes = _prepare(story, X, y, num_classes)
    fitted_story = story
    if priors == "data":
        story = story.scaled_to_data(X)
    latent = _latent_sites(story, num_classes, X.shape[1])
    check_posterior_size(
        num_chains=num_chains,
        num_samples=num_samples,
        num_warmup=num_warmup,
        parameter_entries=num_classes + sum(int(np.size(s["value"])) for s in latent.values()),
        num_rows=int(X.shape[0]),
        num_classes=num_classes,
        itemsize=np.dtype(X.dtype).itemsize,
        log_likelihood=False,
    )
    sites = set(latent) | {CLASS_PRIOR}
    if init_params is not None:
        values = {k: jnp.asarray(v, X.dtype) for k, v in init_params.items() if k in sites}
        init_strategy = infer.init_to_value(values=values)
    elif init == "uniform":
        init_strategy = infer.init_to_uniform
    elif isinstance(init, list | tuple):
        init_strategy = infer.init_to_uniform  # overridden by per-chain starting points below
    else:
        if init == "mle":
            start = start_values(fitted_story, X, codes, num_classes) if fit is None else fit
            start, message = best_start(fitted_story, X, codes, num_classes, start, seed, story)
            if message:
                warnings.warn(message, SamplingWarning, stacklevel=2)
        else:
            start = init
        values = {k: jnp.asarray(v, X.dtype) for k, v in start.items() if k in sites}
        init_strategy = partial(_init_near, values=values, jitter=float(jitter))
    chain_starts = None
    if init_params is None and isinstance(init, list | tuple):
        chain_starts = _chain_starts(story, X, codes, num_classes, init, num_chains, jitter, seed)
    kernel = infer.NUTS(core.model, init_strategy=init_strategy, **nuts_kwargs)
    mcmc = infer.MCMC(
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
        init_params=chain_starts,
    )
    mcmc.genprob_story = story
    if check:
        samples = mcmc.get_samples(group_by_chain=True)
        extra = mcmc.get_extra_fields(group_by_chain=True)
        mcmc.genprob_diagnostics = diagnose(samples, extra.get("potential_energy"), warn=True)
    return mcmc


def check_options(*, priors="data", init="mle", jitter=JITTER) -> None:
    """Refuse unknown ``priors`` and ``init`` and a negative ``jitter`` (before any work).

    Raises:
        ValueError: naming the option and what it accepts.
    """
    if not isinstance(priors, str) or priors not in PRIORS:
        raise ValueError(f"priors must be 'data' or 'fixed', got {priors!r}.")
    if not (isinstance(init, dict | list | tuple) or (isinstance(init, str) and init in INITS)):
        raise ValueError(
            f"init must be 'mle', 'uniform', a dict of parameters or one dict per chain, got "
            f"{init!r}."
        )
    try:
        finite = bool(np.isfinite(float(jitter)) and float(jitter) >= 0)
    except (TypeError, ValueError):
        finite = False
    if not finite:
        raise ValueError(f"jitter must be a finite number >= 0, got {jitter!r}.")


def start_values(story: Story, X, y, num_classes: int) -> dict:
    """The maximum-likelihood fit that chains start from, keyed by parameter name.

    Closed-form stories: the closed form on fully labeled data, EM (:func:`genprob.fit_em`) when
    some rows are unlabeled; other stories: :func:`genprob.fit_optimizer`. The values are those
    of the story's own fit (smoothing included), whatever prior NUTS uses.

    Args:
        story: the story.
        X: features (n, D).
        y: class codes (n,), -1 for unlabeled rows.
        num_classes: K.
    """
    from genprob.em import fit_em

    codes = np.asarray(y)
    if story.has_closed_form:
        if np.all(codes >= 0):
            R = core.one_hot_responsibilities(jnp.asarray(codes), num_classes, dtype=X.dtype)
            return core.fit_closed_form(story, X, R)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a start point needs no EM convergence notice
            return fit_em(story, X, jnp.asarray(codes), num_classes=num_classes).params
    from genprob.optimize import fit_optimizer

    dtype = "float32" if X.dtype == jnp.float32 else "float64"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_optimizer(story, X, codes, num_classes=num_classes, dtype=dtype)
    return result.params


#: EM restarts (random responsibilities) tried against the fit before NUTS starts at it.
START_RESTARTS = 4


def best_start(story: Story, X, codes, num_classes: int, start: dict, seed: int, prior_story=None):
    """``start``, or a better mode found by EM restarts: ``(params, message or None)``.

    EM from the labeled-only fit can stop at a local maximum whose posterior mass is small (wine
    with 15% labels, seed 2: class 0's variance of feature 1 at 0.027 where the best mode has
    0.32); a chain started there stays for hundreds of draws. With unlabeled rows and a closed
    form, EM is rerun from ``start`` and from :data:`START_RESTARTS` random responsibilities on
    the likelihood NUTS samples (unweighted, every unlabeled row at weight 1); the best run
    replaces ``start`` when its log posterior density is higher (under ``prior_story``, the
    prior NUTS uses, in the unconstrained coordinates NUTS moves in), so a collapsed
    high-likelihood spike that the prior rules out never wins.
    """
    from numpyro.infer.util import potential_energy, unconstrain_fn

    from genprob.em import fit_em

    codes = np.asarray(codes)
    if not story.has_closed_form or np.all(codes >= 0):
        return start, None
    prior_story = story if prior_story is None else prior_story
    sites = [CLASS_PRIOR, *_latent_sites(prior_story, num_classes, X.shape[1])]
    if any(name not in start for name in sites):
        return start, None

    def log_posterior(params):
        # in NumPyro's unconstrained coordinates (Jacobian included), where the chains move
        values = {name: jnp.asarray(params[name], X.dtype) for name in sites}
        args, kwargs = (prior_story, X, jnp.asarray(codes)), {"num_classes": num_classes}
        free = unconstrain_fn(core.model, args, kwargs, values)
        return -float(potential_energy(core.model, args, kwargs, free))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a candidate start needs no EM convergence notice
        try:
            result = fit_em(
                story,
                X,
                jnp.asarray(codes),
                num_classes=num_classes,
                n_init=1 + START_RESTARTS,
                init={k: v for k, v in start.items() if k in sites},
                seed=int(seed),
            )
        except ValueError:  # every restart degenerated: keep the fit
            return start, None
    values = np.asarray(result.init_log_likelihoods)
    if int(np.nanargmax(values)) == 0:
        return start, None
    old, new = log_posterior(start), log_posterior(result.params)
    if not (np.isfinite(new) and new > old + 1e-6 * max(1.0, abs(old))):
        return start, None
    message = (
        f"the fit is a local maximum of the likelihood: an EM restart found log-likelihood "
        f"{values.max():.6g} against {values[0]:.6g} from the fit (log posterior density "
        f"{new:.6g} against {old:.6g}), so the chains start at the restart's estimate. Refit "
        f"with n_init={1 + START_RESTARTS} (or more) to make it the fit."
    )
    return {**dict(start), **result.params}, message


def _chain_starts(story, X, codes, num_classes, starts, num_chains, jitter, seed):
    """Unconstrained starting points ``(num_chains, ...)`` from one parameter dict per chain."""
    from numpyro.infer.util import unconstrain_fn

    if len(starts) != int(num_chains):
        raise ValueError(f"init has {len(starts)} starting points for {num_chains} chains.")
    sites = [CLASS_PRIOR, *_latent_sites(story, num_classes, X.shape[1])]
    args, kwargs = (story, X, codes), {"num_classes": num_classes}
    key = jax.random.PRNGKey(int(seed) + 1)
    points = []
    for start in starts:
        missing = [name for name in sites if name not in start]
        if missing:
            raise ValueError(f"a starting point lacks the parameters {missing}.")
        values = {name: jnp.asarray(start[name], X.dtype) for name in sites}
        free = unconstrain_fn(core.model, args, kwargs, values)
        key, *keys = jax.random.split(key, len(sites) + 1)
        points.append(
            {
                name: free[name] + jitter * jax.random.normal(k, jnp.shape(free[name]), X.dtype)
                for name, k in zip(sites, keys, strict=True)
            }
        )
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *points)


def _init_near(site=None, values=None, jitter=JITTER):
    """NumPyro init strategy: ``values`` moved by a Normal(0, jitter) step in unconstrained
    coordinates; a site without a value, or whose value maps to a non-finite point (a
    probability of exactly 0, say), starts like ``init_to_uniform``."""
    if site is None:
        return partial(_init_near, values=values, jitter=jitter)
    if site["type"] != "sample" or site["is_observed"] or site["name"] not in values:
        return infer.init_to_uniform(site)
    transform = transforms.biject_to(site["fn"].support)
    value = jnp.broadcast_to(values[site["name"]], site["fn"].shape())
    free = transform.inv(value)
    rng_key = site["kwargs"].get("rng_key")
    noise_key, uniform_key = jax.random.split(rng_key)
    noise = jax.random.normal(noise_key, jnp.shape(free), free.dtype)
    fallback = jax.random.uniform(uniform_key, jnp.shape(free), free.dtype, -2.0, 2.0)
    free = jnp.where(jnp.isfinite(free), free + jitter * noise, fallback)
    return transform(free)


def diagnose(samples: dict, potential_energy=None, *, warn: bool = False) -> dict:
    """Convergence checks of NUTS draws grouped by chain.

    Rank-normalized split R-hat and bulk/tail ESS per scalar entry (ArviZ, through
    :mod:`genprob._arviz_compat`), and the mean log density of each chain: chains whose means
    differ by more than 3 within-chain sd (and more than 1 nat) sit in different modes, as a
    label-swapped chain does.

    Args:
        samples: site -> draws with leading axes ``(chains, draws)``.
        potential_energy: ``(chains, draws)`` negative log densities, or None.
        warn: emit a :class:`SamplingWarning` naming each failure, its likely cause and the fix.

    Returns:
        dict with ``max_rhat`` (NaN with one chain), ``min_ess_bulk``, ``min_ess_tail``,
        ``worst_rhat`` (entry label), ``chain_log_density`` (per-chain means, or None),
        ``different_modes``, ``label_switching`` (chains' class priors are permutations of
        one another) and ``problems`` (messages, empty when every check passes).
    """
    from genprob import _arviz_compat as compat

    chains = int(np.shape(samples[CLASS_PRIOR])[0])
    variables = {}
    for name, value in samples.items():
        value = np.asarray(value, dtype=np.float64)
        flat = value.reshape(value.shape[:2] + (-1,))
        keep = np.ptp(flat, axis=(0, 1)) > 0  # constant entries have no R-hat or ESS
        if np.any(keep):
            variables[name] = flat[:, :, keep]
    data = compat.dataset(variables, {}, {})
    rhat = compat.rhat(data) if chains > 1 else None
    bulk, tail = compat.ess(data, "bulk"), compat.ess(data, "tail")

    def extreme(stats, pick):
        best_name, best = None, np.nan
        for name in variables:
            values = np.asarray(stats[name])
            if values.size and np.any(np.isfinite(values)):
                value = pick(values[np.isfinite(values)])
                if np.isnan(best) or pick([best, value]) == value:
                    best_name, best = name, float(value)
        return best_name, best

    worst_rhat_name, max_rhat = extreme(rhat, np.max) if rhat is not None else (None, np.nan)
    _, min_bulk = extreme(bulk, np.min)
    _, min_tail = extreme(tail, np.min)
    chain_means, different_modes = None, False
    if potential_energy is not None:
        log_density = -np.asarray(potential_energy, dtype=np.float64)
        chain_means = log_density.mean(axis=1)
        within = float(np.sqrt(np.mean(log_density.var(axis=1, ddof=1)))) if chains > 1 else 0.0
        gap = float(np.ptp(chain_means))
        different_modes = chains > 1 and gap > max(3.0 * within, 1.0)
    switched = chains > 1 and _permuted(np.asarray(samples[CLASS_PRIOR]).mean(axis=1))
    problems = []
    if switched and not different_modes:
        problems.append(
            "the chains' class priors are permutations of each other: label switching (the "
            "chains found the same fit under different class labels). Start the chains at the "
            "fit (init='mle', the default) or label some rows of every class."
        )
    if different_modes:
        problems.append(
            f"the chains sit in different modes (mean log density per chain: "
            f"{', '.join(f'{v:.1f}' for v in chain_means)}): likely label switching, a chain "
            f"settled on a permutation of the classes. Start the chains at the fit "
            f"(init='mle', the default) or label more rows."
        )
    if np.isfinite(max_rhat) and max_rhat > RHAT_MAX:
        cause = (
            "likely label switching (chains in different modes)"
            if different_modes or switched or worst_rhat_name == CLASS_PRIOR
            else "the chains have not mixed (too few warm-up iterations or draws)"
        )
        problems.append(
            f"max R-hat {max_rhat:.3f} > {RHAT_MAX} (on {worst_rhat_name!r}): {cause}. "
            f"Start the chains at the fit (init='mle'), and run more warm-up and draws."
        )
    for kind, value in (("bulk", min_bulk), ("tail", min_tail)):
        if np.isfinite(value) and value < ESS_MIN:
            problems.append(
                f"min {kind} ESS {value:.0f} < {ESS_MIN}: too few draws for stable estimates. "
                f"Increase num_samples (or num_chains)."
            )
    if warn and problems:
        warnings.warn("NUTS diagnostics: " + " ".join(problems), SamplingWarning, stacklevel=3)
    return {
        "max_rhat": max_rhat,
        "min_ess_bulk": min_bulk,
        "min_ess_tail": min_tail,
        "worst_rhat": worst_rhat_name,
        "chain_log_density": chain_means,
        "different_modes": bool(different_modes),
        "label_switching": bool(switched),
        "problems": problems,
    }


def fit_nuts(story: Story, X, y=None, *, group_by_chain: bool = False, **kwargs) -> dict:
    """Posterior draws of the story's parameters by NUTS.

    Args:
        story: the story.
        X: features (n, D).
        y: class codes (n,), -1 for unlabeled rows; None means every row is unlabeled.
        group_by_chain: keep the chains apart (leading axes ``(num_chains, num_samples)``).
        **kwargs: the options of :func:`run_nuts` (``num_classes``, ``num_warmup``,
            ``num_samples``, ``num_chains``, ``seed``, ``init``, ``priors``...).

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
    X = check_features(X, keep_sparse=True, to_device=True)
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


def _permuted(chain_class_priors, tol: float = 0.05) -> bool:
    """Whether some chain's mean class prior differs from the first chain's by more than
    ``tol`` in an entry while their sorted values agree to ``tol``: the signature of chains that
    found one fit under different labelings."""
    first = chain_class_priors[0]
    for other in chain_class_priors[1:]:
        if np.max(np.abs(other - first)) > tol and np.allclose(
            np.sort(other), np.sort(first), atol=tol
        ):
            return True
    return False
