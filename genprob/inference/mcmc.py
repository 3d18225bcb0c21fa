"""NUTS on the story's NumPyro model, with labeled, unlabeled (y = -1) or mixed rows."""

from __future__ import annotations

import math
import numbers
import os
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np

from genprob import core
from genprob.engine import execution
from genprob.engine._limits import check_count, check_posterior_size
from genprob.engine._warnings import warn_user
from genprob.engine.capabilities import capability, has_closed_form
from genprob.engine.em import fit_em, params_from_latent
from genprob.engine.masking import has_missing, marginalized
from genprob.inference.draws import flatten_draws
from genprob.inference.optimize import fit_optimizer, model_sites, unconstrain
from genprob.inference.posterior import checked_rows, conjugate_story
from genprob.story import CLASS_PRIOR, Story, as_sample_sites

__all__ = [
    "run_nuts",
    "fit_nuts",
    "params_from_samples",
    "sample_labels",
    "diagnose",
    "Problem",
    "PROBLEM_KINDS",
    "start_values",
    "best_start",
    "SamplingWarning",
    "PriorWarning",
    "prior_dominance",
    "RHAT_MAX",
    "ESS_MIN",
    "PRIORS",
    "SAMPLERS",
    "check_options",
]

#: Largest acceptable rank-normalized split R-hat (Vehtari et al. 2021).
RHAT_MAX = 1.01
#: Smallest acceptable bulk and tail effective sample size (all chains together).
ESS_MIN = 400
#: Accepted values of ``priors``: scales from the data (default) or the story's fixed ones.
PRIORS = ("data", "fixed", "conjugate")
#: NUTS implementations of ``sampler=``: NumPyro's (default) or BlackJAX's (``genprob[blackjax]``).
SAMPLERS = ("numpyro", "blackjax")
#: Accepted string values of ``init`` (a dict, or one dict per chain, is accepted too).
INITS = ("mle", "uniform")
#: Default sd of the starting jitter in unconstrained coordinates.
JITTER = 0.1
#: NUTS statistics recorded per draw.
_FIELDS = ("diverging", "accept_prob", "num_steps", "energy", "potential_energy")


class SamplingWarning(UserWarning):
    """NUTS draws that fail a convergence check (R-hat, ESS, chains in different modes)."""


class PriorWarning(UserWarning):
    """A parameter whose posterior the prior holds far from a sharp likelihood's maximum."""


#: Kinds of :class:`Problem` (``components``: a mixture's components the chains disagree on).
PROBLEM_KINDS = ("label_switching", "different_modes", "rhat", "ess_bulk", "ess_tail", "components")


@dataclass(frozen=True)
class Problem:
    """One failed check of :func:`diagnose`: its ``kind`` (:data:`PROBLEM_KINDS`) and the
    ``message`` shown to the user (``str(problem)``)."""

    kind: str
    message: str

    def __post_init__(self):
        if self.kind not in PROBLEM_KINDS:
            raise ValueError(f"kind must be one of {PROBLEM_KINDS}, got {self.kind!r}.")

    def __str__(self) -> str:
        return self.message


#: Posterior (and likelihood) sds between MLE and posterior mean past which the prior dominates.
PRIOR_DOMINANCE_SD = 4.0
#: Parameter entries beyond which :func:`prior_dominance` skips the likelihood's curvature.
CURVATURE_MAX_ENTRIES = 2000


def _prepare(story: Story, X, y, num_classes):
    # NaN: missing, summed out by the model
    X, codes, num_classes = checked_rows(X, y, num_classes, capability(story, "supports_missing"))
    (marginalized(story) if has_missing(X) else story).validate(X)
    # NumPy: staging a JAX copy compiles per row count
    return X, np.asarray(codes, np.int32), num_classes


def _chain_args(story, X, codes, summary):
    """The model's arguments, rows padded to their bucket (a new row count compiles nothing)."""
    padded_X, padded_codes = execution.padded(X, codes)
    rows = np.arange(padded_X.shape[0]) < X.shape[0]
    return story, padded_X, padded_codes, summary, rows


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
    chain_method: str = "parallel",
    extra_fields: tuple = _FIELDS,
    init="mle",
    jitter: float = JITTER,
    priors: str = "data",
    check: bool = True,
    fit: dict | None = None,
    sampler: str = "numpyro",
    while_compiling: Callable[[], object] | None = None,
    **nuts_kwargs,
) -> NutsRun:
    """Run NUTS on ``core.model`` (docs/reference/mcmc.md).

    Args:
        X: features (n, D), in the current JAX precision.
        y: class codes (n,), -1 for unlabeled rows; None means every row is unlabeled.
        num_classes: K; default: inferred from the labeled rows of ``y``.
        num_warmup, num_samples, num_chains, seed: per-chain warm-up and kept draws, chains,
            seed of the run.
        progress_bar: accepted for compatibility; the compiled chains show no progress bar.
        init_params: starting values used exactly, without jitter (for compatibility).
        chain_method: ``"parallel"`` (default), ``"sequential"`` or ``"vectorized"``.
        extra_fields: NUTS statistics recorded per draw (``get_extra_fields()``).
        init: ``"mle"`` (default, see :func:`start_values`), ``"uniform"``, a dict of
            parameter values, or one such dict per chain.
        jitter: sd of the Normal jitter added per chain in unconstrained coordinates.
        priors: one of :data:`PRIORS`.
        check: run :func:`diagnose` and warn (:class:`SamplingWarning`) on failures.
        fit: with ``init="mle"``, the fit already made instead of :func:`start_values`.
        sampler: one of :data:`SAMPLERS`.
        while_compiling: work that needs no draws, run while a first call's chain compiles.
        **nuts_kwargs: NUTS settings (:data:`KERNEL_SETTINGS`), as NumPyro's NUTS takes them.

    Returns:
        A :class:`NutsRun`, with ``genprob_story`` (the story with the prior used) and, when
        ``check``, ``genprob_diagnostics`` (:func:`diagnose`'s dict).

    Raises:
        ValueError, TypeError, ImportError: a bad option or NUTS setting (:func:`check_options`),
            before any work.
        genprob.engine._limits.SizeLimitError: chains, iterations or draws beyond the limits.
    """
    check_options(priors=priors, init=init, jitter=jitter, sampler=sampler)
    settings = _kernel_settings(nuts_kwargs, sampler)
    if chain_method not in CHAIN_METHODS:
        raise ValueError(f"chain_method must be one of {CHAIN_METHODS}, got {chain_method!r}.")
    unknown = sorted(set(extra_fields) - set(_FIELDS))
    if unknown:
        raise ValueError(f"extra_fields {unknown} are not recorded; known: {_FIELDS}.")
    num_samples = check_count(num_samples, "num_samples")
    num_chains = check_count(num_chains, "num_chains")
    num_warmup = check_count(num_warmup, "num_warmup", minimum=0)
    X, codes, num_classes = _prepare(story, X, y, num_classes)
    fitted_story = story
    if priors == "conjugate":
        story = conjugate_story(story)
    if priors != "fixed":
        story = story.scaled_to_data(X)
    sites = model_sites(_chain_args(story, X, codes, None), num_classes)
    check_posterior_size(
        num_chains=num_chains,
        num_samples=num_samples,
        num_warmup=num_warmup,
        parameter_entries=sum(math.prod(site.shape) for site in sites),
        num_rows=int(X.shape[0]),
        num_classes=num_classes,
        itemsize=np.dtype(X.dtype).itemsize,
        log_likelihood=False,
    )
    # labeled rows through their statistics (reverse-mode differentiation only)
    summary = None
    if not nuts_kwargs.get("forward_mode_differentiation"):
        summary = core.labeled_summary(story, X, codes, num_classes)
    args = _chain_args(story, X, codes, summary)
    static = dict(
        num_classes=num_classes,
        num_warmup=int(num_warmup),
        num_samples=int(num_samples),
        settings=settings,
        sampler=sampler,
    )
    # compiles while the starting points are found
    _compiled_chain(
        _abstract_inputs(args, sites, num_chains, chain_method),
        chain_method == "vectorized",
        **static,
    )
    if init_params is not None:
        starts, jitter = [init_params] * num_chains, 0.0
    elif init == "uniform":
        starts = [{}] * num_chains
    elif isinstance(init, list | tuple):
        if len(init) != int(num_chains):
            raise ValueError(f"init has {len(init)} starting points for {num_chains} chains.")
        starts = [_start_sites(story, start) for start in init]
        for start in starts:
            if missing := [site.name for site in sites if site.name not in start]:
                raise ValueError(f"a starting point lacks the parameters {missing}.")
    elif init == "mle":
        start = start_values(fitted_story, X, codes, num_classes) if fit is None else fit
        start = _start_sites(story, start)
        start, message = best_start(fitted_story, X, codes, num_classes, start, seed, story, sites)
        if message:
            warn_user(message, SamplingWarning)
        starts = [start] * num_chains
    else:
        starts = [_start_sites(story, init)] * num_chains
    free = _chain_starts(story, X, codes, num_classes, starts, jitter, seed, sites)
    # what needs no draws runs on this thread while the chain compiles in the background
    if check:
        from genprob.io import _arviz_compat

        _arviz_compat.arviz()  # the checks read the draws with ArviZ
    if while_compiling is not None:
        while_compiling()
    mcmc = _run_chains(
        args,
        free,
        _chain_keys(seed, num_chains),
        chain_method=chain_method,
        extra_fields=tuple(extra_fields),
        **static,
    )
    mcmc.genprob_story = story
    if check:
        samples = mcmc.get_samples(group_by_chain=True)
        extra = mcmc.get_extra_fields(group_by_chain=True)
        mcmc.genprob_diagnostics = diagnose(
            samples,
            extra.get("potential_energy"),
            warn=True,
            labels=label_coverage(codes, num_classes),
            started_at_fit=init_params is None and isinstance(init, str) and init == "mle",
        )
    return mcmc


def label_coverage(codes, num_classes: int) -> str:
    """:func:`diagnose`'s ``labels``: ``"all"``, ``"every class"`` or ``"partial"``."""
    if np.all(codes >= 0):
        return "all"
    return "every class" if np.unique(codes[codes >= 0]).size == num_classes else "partial"


def check_options(*, priors="data", init="mle", jitter=JITTER, sampler="numpyro") -> None:
    """Refuse an unknown ``priors``, ``init`` or ``sampler`` (ValueError), a negative ``jitter``
    and a ``sampler`` whose package is not installed (ImportError, naming the extra)."""
    if not isinstance(sampler, str) or sampler not in SAMPLERS:
        raise ValueError(
            f"sampler must be one of {', '.join(repr(s) for s in SAMPLERS)}, got {sampler!r} "
            f"(nutpie is compared in benchmarks/bench_nuts.py, not offered here)."
        )
    if sampler == "blackjax":
        try:
            import blackjax  # noqa: F401
        except ImportError as error:
            raise ImportError(
                "sampler='blackjax' needs the blackjax package: pip install 'genprob[blackjax]'."
            ) from error
    if not isinstance(priors, str) or priors not in PRIORS:
        raise ValueError(f"priors must be 'data', 'fixed' or 'conjugate', got {priors!r}.")
    if not (isinstance(init, dict | list | tuple) or (isinstance(init, str) and init in INITS)):
        raise ValueError(
            f"init must be 'mle', 'uniform', a dict of parameters or one dict per chain, got "
            f"{init!r}."
        )
    if not (_number(jitter) and 0 <= jitter < math.inf):
        raise ValueError(f"jitter must be a finite number >= 0, got {jitter!r}.")


def start_values(story: Story, X, y, num_classes: int) -> dict:
    """The story's own fit that chains start from: closed form, EM with unlabeled rows (``y``
    -1), or :func:`genprob.fit_optimizer` for a story without a closed form."""
    codes = np.asarray(y)
    if has_closed_form(story):
        if np.all(codes >= 0):
            R = core.one_hot_responsibilities(jnp.asarray(codes), num_classes, dtype=X.dtype)
            return core.fit_closed_form(story, X, R)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a start point needs no EM convergence notice
            return fit_em(story, X, jnp.asarray(codes), num_classes=num_classes).params
    dtype = "float32" if X.dtype == jnp.float32 else "float64"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_optimizer(story, X, codes, num_classes=num_classes, dtype=dtype)
    return result.params


#: EM restarts (random responsibilities) tried against the fit before NUTS starts at it.
START_RESTARTS = 4


def best_start(
    story: Story, X, codes, num_classes: int, start: dict, seed: int, prior_story, sites=None
):
    """``start``, or a better mode found by EM restarts (docs/reference/mcmc.md): ``(params,
    message or None)``."""
    codes = np.asarray(codes)
    if not has_closed_form(story) or np.all(codes >= 0):
        return start, None
    args = _chain_args(prior_story, X, codes, None)  # padded once for both evaluations
    sites = [site.name for site in sites or model_sites(args, num_classes)]
    if any(name not in start for name in sites):
        return start, None

    def log_posterior(params):
        # in NumPyro's unconstrained coordinates (Jacobian included), where the chains move
        params = as_sample_sites(params)
        values = {name: jnp.asarray(params[name], X.dtype) for name in sites}
        return float(_log_density(args, values, num_classes))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a candidate start needs no EM convergence notice
        try:
            result = fit_em(
                story,
                X,
                codes,
                num_classes=num_classes,
                n_init=1 + START_RESTARTS,
                init={k: v for k, v in start.items() if k in sites},
                seed=int(seed),
            )
        except ValueError:  # every restart degenerated: keep the fit
            return start, None
    values = np.asarray(result.init_log_likelihoods)
    # evaluated either way, so that every call takes the same compiled path
    old, new = log_posterior(start), log_posterior(result.params)
    if int(np.nanargmax(values)) == 0:
        return start, None
    if not (np.isfinite(new) and new > old + 1e-6 * max(1.0, abs(old))):
        return start, None
    message = (
        f"the fit is a local maximum of the likelihood: an EM restart found log-likelihood "
        f"{values.max():.6g} against {values[0]:.6g} from the fit (log posterior density "
        f"{new:.6g} against {old:.6g}), so the chains start at the restart's estimate. Refit "
        f"with n_init={1 + START_RESTARTS} (or more) to make it the fit."
    )
    return {**dict(start), **as_sample_sites(result.params)}, message


def _start_sites(story, params) -> dict:
    """``params`` with the prior's sites the story maps them to (``align_parameters``)."""
    params = as_sample_sites(params)
    return story.align_parameters(params, params)


def _chain_starts(story, X, codes, num_classes, starts, jitter, seed, sites):
    """Jittered unconstrained starting points ``(chains, ...)`` of the ``model_sites`` ``sites``."""
    args = _chain_args(story, X, codes, None)
    shapes = {site.name: site for site in sites}
    sites = list(shapes)
    # drawn by NumPy: JAX's samplers would be programs of their own to compile on a first call
    rng = np.random.default_rng([int(seed), 1])
    points = []
    for given in starts:
        values = {
            name: jnp.broadcast_to(jnp.asarray(given[name], X.dtype), shapes[name].shape)
            for name in sites
            if name in given
        }
        free = unconstrain(args, values, num_classes) if values else {}
        point = {}
        for name in sites:  # a site without a value is NaN here: it starts like init_to_uniform
            shape = shapes[name].unconstrained_shape
            leaf = np.asarray(free[name]) if name in free else np.full(shape, np.nan)
            noise = rng.standard_normal(leaf.shape)
            fallback = rng.uniform(-2.0, 2.0, leaf.shape)
            moved = np.where(np.isfinite(leaf), leaf + jitter * noise, fallback)
            point[name] = moved.astype(np.dtype(X.dtype))
        points.append(point)
    return {name: np.stack([point[name] for point in points]) for name in sites}


def _chain_keys(seed, num_chains):
    """One raw PRNG key per chain, drawn by NumPy (nothing to compile)."""
    key = jax.eval_shape(jax.random.PRNGKey, 0)
    return np.random.default_rng([int(seed), 0]).integers(
        0, np.iinfo(key.dtype).max, (num_chains, *key.shape), dtype=key.dtype, endpoint=True
    )


@partial(jax.jit, static_argnums=2)
def _log_density(args, values, num_classes):
    """Log posterior density at ``values`` in the chains' unconstrained coordinates."""
    from numpyro.infer.util import potential_energy

    kwargs = {"num_classes": num_classes}
    free = unconstrain(args, values, num_classes)
    return -potential_energy(core.model, args, kwargs, free)


#: Chain schedules: side by side in threads (default), one after the other, or vmapped.
CHAIN_METHODS = ("parallel", "sequential", "vectorized")


#: The NUTS settings that ``sampler="blackjax"`` maps onto BlackJAX's window adaptation.
BLACKJAX_SETTINGS = ("step_size", "target_accept_prob", "max_tree_depth", "dense_mass")


def _flag(value) -> bool:
    return isinstance(value, bool | np.bool_)


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not _flag(value)


def _depth(value) -> bool:
    return isinstance(value, numbers.Integral) and not _flag(value) and 1 <= value <= 30


def _blocks(value) -> bool:
    if not isinstance(value, list | tuple):
        return False
    return all(isinstance(b, list | tuple) and all(isinstance(s, str) for s in b) for b in value)


_FLAG = (_flag, "True or False")
#: Each NUTS setting's valid values (a test and its words), checked before any work.
_SETTING_VALUES = {
    "step_size": (lambda v: _number(v) and 0 < v < math.inf, "a finite number > 0"),
    "adapt_step_size": _FLAG,
    "adapt_mass_matrix": _FLAG,
    "dense_mass": (
        lambda v: _flag(v) or _blocks(v),
        "True, False, or NumPyro's list of tuples of site names (dense blocks)",
    ),
    "target_accept_prob": (
        lambda v: _number(v) and 0 < v < 1,
        "a number strictly between 0 and 1 (0.8 by default; 0.9 to 0.99 for smaller steps)",
    ),
    "max_tree_depth": (
        lambda v: _depth(v) or (isinstance(v, tuple) and len(v) == 2 and all(map(_depth, v))),
        "an int in [1, 30] (at most 2**depth - 1 leapfrog steps per draw), or NumPyro's pair "
        "(warm-up depth, sampling depth) of such ints",
    ),
    "find_heuristic_step_size": _FLAG,
    "regularize_mass_matrix": _FLAG,
    "forward_mode_differentiation": _FLAG,
}
#: NUTS settings accepted as ``**nuts_kwargs`` (passed to NumPyro's NUTS initialization).
KERNEL_SETTINGS = tuple(_SETTING_VALUES)


def _kernel_settings(nuts_kwargs: dict, sampler: str = "numpyro") -> tuple:
    """The NUTS settings as a hashable tuple, each name and value checked (before any work)."""
    unknown = sorted(set(nuts_kwargs) - set(KERNEL_SETTINGS))
    if unknown:
        raise TypeError(
            f"unknown NUTS setting {unknown[0]!r}; known: {', '.join(KERNEL_SETTINGS)}."
        )
    for name, value in nuts_kwargs.items():
        valid, words = _SETTING_VALUES[name]
        if sampler == "blackjax" and name == "max_tree_depth":
            valid, words = _depth, "an int in [1, 30] (at most 2**depth - 1 leapfrog steps)"
        if not valid(value):
            raise ValueError(f"{name} must be {words}, got {value!r}.")
    if sampler == "blackjax":
        unsupported = sorted(set(nuts_kwargs) - set(BLACKJAX_SETTINGS))
        dense = nuts_kwargs.get("dense_mass", False)
        if unsupported or not isinstance(dense, bool):
            raise TypeError(
                f"sampler='blackjax' takes the NUTS settings {', '.join(BLACKJAX_SETTINGS)} "
                f"(dense_mass as True or False), got "
                f"{unsupported[0] if unsupported else f'dense_mass={dense!r}'}."
            )

    def frozen(value):
        return tuple(frozen(v) for v in value) if isinstance(value, list | tuple) else value

    return tuple(sorted((k, frozen(v)) for k, v in nuts_kwargs.items()))


def _chain(args, free, key, *, num_classes, num_warmup, num_samples, settings, sampler):
    """One NUTS chain (warm-up adaptation, then draws) as one program; the draws constrained."""
    from numpyro.infer.util import constrain_fn, potential_energy

    kwargs = {"num_classes": num_classes}
    run = _blackjax_draws if sampler == "blackjax" else _numpyro_draws
    potential = partial(potential_energy, core.model, args, kwargs)
    draws, stats = run(args, free, key, num_warmup, num_samples, dict(settings), potential)
    return jax.vmap(lambda z: constrain_fn(core.model, args, kwargs, z))(draws), stats


def _numpyro_draws(args, free, key, num_warmup, num_samples, settings, potential):
    """NumPyro's NUTS kernel: unconstrained draws and statistics."""
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn_gen=lambda *_: potential, algo="NUTS")
    state = init_kernel(free, num_warmup, model_args=args, rng_key=key, **settings)

    def step(state, _):
        state = sample_kernel(state, model_args=args)
        return state, (state.z, {name: getattr(state, name) for name in _FIELDS})

    # one scan over warm-up and draws: the kernel compiles once, not twice
    _, (draws, stats) = jax.lax.scan(step, state, None, length=num_warmup + num_samples)
    return jax.tree_util.tree_map(lambda v: v[num_warmup:], (draws, stats))


def _blackjax_draws(args, free, key, num_warmup, num_samples, settings, potential):
    """BlackJAX's window adaptation and NUTS on the same potential."""
    import blackjax
    from blackjax.adaptation.base import get_filter_adapt_info_fn

    def logdensity(z):
        return -potential(z)

    tree = {"max_num_doublings": int(settings.get("max_tree_depth", 10))}
    step_size = settings.get("step_size", 1.0)
    warm_key, draw_key = jax.random.split(key)
    if num_warmup > 0:
        warmup = blackjax.window_adaptation(
            blackjax.nuts,
            logdensity,
            is_mass_matrix_diagonal=not settings.get("dense_mass", False),
            initial_step_size=step_size,
            target_acceptance_rate=settings.get("target_accept_prob", 0.8),
            # the warm-up's own draws are not kept
            adaptation_info_fn=get_filter_adapt_info_fn(),
            **tree,
        )
        (state, parameters), _ = warmup.run(warm_key, free, num_steps=num_warmup)
    else:  # no adaptation: the given (or unit) step size and an identity mass matrix
        size = sum(int(np.size(leaf)) for leaf in jax.tree_util.tree_leaves(free))
        dtype = jax.tree_util.tree_leaves(free)[0].dtype
        parameters = {
            "step_size": jnp.asarray(step_size, dtype),
            "inverse_mass_matrix": jnp.ones(size, dtype),
        }
        state = blackjax.nuts.init(free, logdensity)
    kernel = blackjax.nuts(logdensity, **{**parameters, **tree})

    def step(state, step_key):
        state, info = kernel.step(step_key, state)
        stats = {
            "diverging": info.is_divergent,
            "accept_prob": info.acceptance_rate,
            "num_steps": info.num_integration_steps,
            "energy": info.energy,
            "potential_energy": -state.logdensity,
        }
        return state, (state.position, stats)

    _, (draws, stats) = jax.lax.scan(step, state, jax.random.split(draw_key, num_samples))
    return draws, stats


#: Compiled chains (futures) by the inputs' structure and shapes and the static settings.
_COMPILED: dict = {}
_COMPILED_LOCK = threading.Lock()
#: One thread compiles while the caller finds the chains' starting points.
_COMPILER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="genprob-nuts-compile")


def _aval(leaf) -> tuple:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return tuple(leaf.shape), jnp.dtype(leaf.dtype), bool(leaf.weak_type)
    aval = jax.typeof(leaf)
    return tuple(aval.shape), jnp.dtype(aval.dtype), bool(aval.weak_type)


def _compiled_chain(inputs, vectorized, **static):
    """The future of the compiled chain for ``inputs``' types, shared by every later call."""
    leaves, treedef = jax.tree_util.tree_flatten(inputs)
    key = (treedef, tuple(map(_aval, leaves)), vectorized, tuple(sorted(static.items())))
    with _COMPILED_LOCK:
        future = _COMPILED.get(key)
        if future is None:
            abstract = jax.tree_util.tree_unflatten(
                treedef,
                [jax.ShapeDtypeStruct(s, d, weak_type=w) for s, d, w in map(_aval, leaves)],
            )
            run = partial(_chain, **static)
            run = jax.vmap(run, in_axes=(None, 0, 0)) if vectorized else run
            # traced here (NumPyro's handler stack is shared by threads); XLA compiles behind
            lowered = jax.jit(run).lower(*abstract)
            future = _COMPILED[key] = _COMPILER.submit(lowered.compile)
    return future


def _abstract_inputs(args, sites, num_chains, chain_method):
    """Stand-ins of the inputs ``_run_chains`` will pass (types only), to start compiling."""
    args = jax.tree_util.tree_map(jnp.asarray, args)
    lead = (num_chains,) if chain_method == "vectorized" else ()
    free = {
        site.name: jax.ShapeDtypeStruct(lead + site.unconstrained_shape, args[1].dtype)
        for site in sites
    }
    key = jax.eval_shape(jax.random.PRNGKey, 0)
    key = jax.ShapeDtypeStruct(lead + tuple(key.shape), key.dtype)
    return args, free, key


def _run_chains(args, free, keys, *, chain_method, extra_fields, **static):
    """Every chain of one run, by one compiled chain whatever the schedule."""
    num_chains = int(keys.shape[0])
    # as jit would see them (the precision in force): the compiled program's argument types
    args = jax.tree_util.tree_map(jnp.asarray, args)
    if chain_method == "vectorized":
        free, keys = jax.tree_util.tree_map(jnp.asarray, (free, keys))
        compiled = _compiled_chain((args, free, keys), True, **static).result()
        draws, stats = jax.block_until_ready(compiled(args, free, keys))
    else:
        # each chain's inputs cut on the host (NumPy): no slicing program to compile
        one = [
            jax.tree_util.tree_map(lambda leaf, i=i: jnp.asarray(np.asarray(leaf)[i]), (free, keys))
            for i in range(num_chains)
        ]
        compiled = _compiled_chain((args, *one[0]), False, **static).result()

        def run(i):
            return jax.block_until_ready(compiled(args, *one[i]))

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        workers = max(1, min(num_chains, int(cores or 1))) if chain_method == "parallel" else 1
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(run, range(num_chains)))
        else:
            results = [run(i) for i in range(num_chains)]
        draws, stats = jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *results)
    stats = {name: stats[name] for name in extra_fields}
    return NutsRun(draws, stats, num_warmup=static["num_warmup"])


class NutsRun:
    """The draws of :func:`run_nuts`, with the parts of NumPyro's ``MCMC`` interface that
    callers read (``get_samples``, ``get_extra_fields``, ``print_summary``)."""

    def __init__(self, samples: dict, extra: dict, *, num_warmup: int):
        self._samples, self._extra = samples, extra
        self.num_chains, self.num_samples = np.shape(samples[CLASS_PRIOR])[:2]
        self.num_warmup = num_warmup

    @staticmethod
    def _flat(values: dict, group_by_chain: bool) -> dict:
        if group_by_chain:
            return dict(values)
        return {k: jnp.reshape(v, (-1,) + jnp.shape(v)[2:]) for k, v in values.items()}

    def get_samples(self, group_by_chain: bool = False) -> dict:
        """Site -> draws, ``(chains * draws, ...)`` or ``(chains, draws, ...)``."""
        return self._flat(self._samples, group_by_chain)

    def get_extra_fields(self, group_by_chain: bool = False) -> dict:
        """NUTS statistics per draw (``diverging``, ``potential_energy`` ...)."""
        return self._flat(self._extra, group_by_chain)

    def print_summary(self, prob: float = 0.9, exclude_deterministic: bool = True) -> None:
        """NumPyro's summary table of the draws (mean, sd, interval, ESS, R-hat)."""
        from numpyro.diagnostics import print_summary

        print_summary(self.get_samples(group_by_chain=True), prob=prob)


def diagnose(
    samples: dict,
    potential_energy=None,
    *,
    warn: bool = False,
    labels: str = "partial",
    started_at_fit: bool = False,
) -> dict:
    """Convergence checks of NUTS draws grouped by chain (docs/reference/mcmc.md).

    Args:
        samples: site -> draws with leading axes ``(chains, draws)``.
        potential_energy: ``(chains, draws)`` negative log densities, or None.
        warn: emit a :class:`SamplingWarning` per failure.
        labels: ``"all"`` (every row labeled), ``"every class"`` (every class has labeled
            rows) or ``"partial"``.
        started_at_fit: the chains started at the fit: the advice does not repeat it.

    Returns:
        dict with ``max_rhat`` (NaN with one chain), ``min_ess_bulk``, ``min_ess_tail``,
        ``worst_rhat``, ``chain_log_density`` (per-chain means, or None), ``different_modes``,
        ``label_switching`` and ``problems`` (a list of :class:`Problem`).
    """
    from genprob.io import _arviz_compat as compat

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
    if labels == "all":  # every label known: the classes cannot trade places
        switched = different_modes = False
    start_advice = "" if started_at_fit else "Start the chains at the fit (init='mle'), and "
    label_advice = (
        "Label" if started_at_fit else "Start the chains at the fit (init='mle') or label"
    )
    problems = []
    if switched and not different_modes:
        problems.append(
            Problem(
                "label_switching",
                "the chains' class priors are permutations of each other: label switching (the "
                "chains found the same fit under different class labels). "
                f"{label_advice} some rows of every class.",
            )
        )
    if different_modes:
        problems.append(
            Problem(
                "different_modes",
                f"the chains sit in different modes (mean log density per chain: "
                f"{', '.join(f'{v:.1f}' for v in chain_means)}): likely label switching, a chain "
                f"settled on a permutation of the classes. {label_advice} more rows.",
            )
        )
    if np.isfinite(max_rhat) and max_rhat > RHAT_MAX:
        by_class_prior = labels == "partial" and worst_rhat_name == CLASS_PRIOR
        cause = (
            "likely label switching (chains in different modes)"
            if different_modes or switched or by_class_prior
            else "the chains have not mixed (too few warm-up iterations or draws)"
        )
        advice = start_advice + ("run" if start_advice else "Run")
        problems.append(
            Problem(
                "rhat",
                f"max R-hat {max_rhat:.3f} > {RHAT_MAX} (on {worst_rhat_name!r}): {cause}. "
                f"{advice} more warm-up and draws.",
            )
        )
    for kind, value in (("bulk", min_bulk), ("tail", min_tail)):
        if np.isfinite(value) and value < ESS_MIN:
            problems.append(
                Problem(
                    f"ess_{kind}",
                    f"min {kind} ESS {value:.0f} < {ESS_MIN}: too few draws for stable "
                    f"estimates. Increase num_samples (or num_chains).",
                )
            )
    for problem in problems if warn else ():  # one warning per problem: one line each
        warn_user(f"NUTS diagnostics: {problem}", SamplingWarning)
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
    """Posterior draws of the prior's sites by NUTS (:func:`run_nuts`'s options): site ->
    draws, leading axis ``num_chains * num_samples`` or, ``group_by_chain``, both axes."""
    return run_nuts(story, X, y, **kwargs).get_samples(group_by_chain=group_by_chain)


def params_from_samples(story: Story, samples: dict, num_features: int) -> dict:
    """The story's named parameters at every draw (any leading batch shape), ``class_prior``
    included: the prior run with its sites substituted."""
    class_prior = jnp.asarray(samples[CLASS_PRIOR])
    batch_shape, num_classes = class_prior.shape[:-1], class_prior.shape[-1]
    rows = jax.ShapeDtypeStruct((1, num_features), class_prior.dtype)
    sites = model_sites((story, rows, jax.ShapeDtypeStruct((1,), jnp.int32)), num_classes)
    flat, _ = flatten_draws({site.name: samples[site.name] for site in sites})
    drawn = {}

    def one(latent):
        params = params_from_latent(story, latent, num_classes, num_features)
        # a site the prior returns as drawn is the draws themselves: nothing to map
        drawn.update({k: samples[k] for k, v in params.items() if v is latent.get(k)})
        return {k: v for k, v in params.items() if k not in drawn}

    mapped = jax.vmap(one)(flat)
    mapped = {k: v.reshape(batch_shape + v.shape[1:]) for k, v in mapped.items()}
    return {CLASS_PRIOR: samples[CLASS_PRIOR], **drawn, **mapped}


def sample_labels(story: Story, samples: dict, X, y, key) -> jax.Array:
    """Posterior label draws ``batch_shape + (n,)`` for draws of :func:`fit_nuts`
    (docs/reference/mcmc.md); labeled rows (``y`` >= 0) keep their code."""
    X, codes, _ = checked_rows(X, y, jnp.shape(samples[CLASS_PRIOR])[-1])
    flat, batch_shape = flatten_draws(params_from_samples(story, samples, X.shape[1]))
    keys = jax.random.split(key, math.prod(batch_shape))

    def one(p, key):
        return jax.random.categorical(key, core.predict_log_proba(story, p, X), axis=-1)

    draws = jnp.where(codes >= 0, jnp.asarray(codes), jax.vmap(one)(flat, keys))
    return draws.astype(jnp.int32).reshape(batch_shape + (X.shape[0],))


def _permuted(chain_class_priors, tol: float = 0.05) -> bool:
    """Whether two chains' mean class priors differ but agree once sorted (label switching)."""
    first = chain_class_priors[0]
    for other in chain_class_priors[1:]:
        if np.max(np.abs(other - first)) > tol and np.allclose(
            np.sort(other), np.sort(first), atol=tol
        ):
            return True
    return False


@jax.jit
def _curvature(story, params, free, X, codes, rows):
    """Diagonal of the log-likelihood's Hessian in the entries of ``free`` (padding masked)."""
    flat, unravel = jax.flatten_util.ravel_pytree(free)

    def log_lik(vector):
        values = core.log_likelihood(story, {**params, **unravel(vector)}, X, codes, pointwise=True)
        return jnp.sum(jnp.where(rows, values, 0.0))

    return unravel(jnp.diag(jax.hessian(log_lik)(flat)))


def likelihood_curvature(story: Story, mle: dict, X, y, names=None) -> dict:
    """Diagonal of the log-likelihood's Hessian at ``mle`` in the entries of ``names`` (default:
    every parameter but the class prior), the others held fixed: name -> array of its shape.
    Empty past :data:`CURVATURE_MAX_ENTRIES` entries (the Hessian is dense)."""
    names = [k for k in mle if k != CLASS_PRIOR] if names is None else list(names)
    if sum(int(np.size(mle[k])) for k in names) > CURVATURE_MAX_ENTRIES:
        return {}
    params = {k: jnp.asarray(v, X.dtype) for k, v in mle.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        free = {k: params[k] for k in names}
        _, padded_X, codes, _, rows = _chain_args(story, X, jnp.asarray(y, jnp.int32), None)
        return _curvature(story, params, free, padded_X, codes, rows)


def prior_dominance(
    story: Story, mle: dict, draws: dict, X, y, *, names=None, warn=True, curvature=None
) -> list:
    """Parameter entries whose MLE lies far outside their posterior while the likelihood is sharp
    (docs/reference/mcmc.md).

    Args:
        mle: the maximum-likelihood fit; draws: posterior draws (any leading batch shape).
        X, y: features (n, D) and class codes (n,), -1 for unlabeled rows.
        names: ``(class names, feature names)`` for the entries' labels, or None.
        warn: emit one :class:`PriorWarning` naming the entries.
        curvature: :func:`likelihood_curvature` at ``mle`` if already computed, else None.

    Returns:
        ``(label, mle, posterior mean, posterior sd)`` per flagged entry, largest gap first.
    """
    num_classes = int(np.shape(mle[CLASS_PRIOR])[-1])
    batch = np.ndim(draws[CLASS_PRIOR]) - 1
    shared = [
        k
        for k in draws
        if k != CLASS_PRIOR and k in mle and np.shape(mle[k]) == np.shape(draws[k])[batch:]
    ]
    if not shared or sum(int(np.size(mle[k])) for k in shared) > CURVATURE_MAX_ENTRIES:
        return []
    axes = tuple(range(batch))
    mean = {k: np.asarray(draws[k], np.float64).mean(axis=axes) for k in shared}
    sd = {k: np.asarray(draws[k], np.float64).std(axis=axes) for k in shared}
    if curvature is None or not set(shared) <= set(curvature):
        curvature = likelihood_curvature(story, mle, X, y, shared)
    flagged = []
    for name in shared:
        value = np.asarray(mle[name], np.float64)
        gap = np.abs(value - mean[name])
        with np.errstate(divide="ignore", invalid="ignore"):  # a flat likelihood: sd infinite
            precision = np.maximum(-np.asarray(curvature[name], np.float64), 0.0)
            likelihood_sd = 1.0 / np.sqrt(precision)
            hit = (gap > PRIOR_DOMINANCE_SD * sd[name]) & (gap > PRIOR_DOMINANCE_SD * likelihood_sd)
        for index in zip(*np.nonzero(hit), strict=True):
            label = _entry_label(name, index, value.shape, num_classes, names)
            flagged.append(
                (label, float(value[index]), float(mean[name][index]), float(sd[name][index]))
            )
    flagged.sort(key=lambda row: -abs(row[1] - row[2]) / max(row[3], 1e-300))
    if warn and flagged:
        shown = "; ".join(
            f"{label}: MLE {m:.4g}, posterior mean {p:.4g} (sd {s:.2g})"
            for label, m, p, s in flagged[:5]
        )
        more = f" and {len(flagged) - 5} more" if len(flagged) > 5 else ""
        warn_user(
            f"the prior dominates {len(flagged)} parameter "
            f"entr{'y' if len(flagged) == 1 else 'ies'}"
            f" that the data pin down: {shown}{more}. The MLE lies beyond "
            f"{PRIOR_DOMINANCE_SD:g} posterior sds of the posterior mean: the prior is too "
            f"narrow or on the wrong scale for these data. Widen its scale, or rescale it to the "
            f"data (priors='data': a story of your own reads each feature's location and scale "
            f"with self.data_scales(num_features), docs/bayes.md).",
            PriorWarning,
        )
    return flagged


def _entry_label(name, index, shape, num_classes, names) -> str:
    classes, features = (None, None) if names is None else names
    parts = []
    for axis, i in enumerate(index):
        if axis == 0 and shape[0] == num_classes and classes is not None:
            parts.append(str(classes[i]))
        elif axis == len(shape) - 1 and features is not None and shape[-1] == len(features):
            parts.append(str(features[i]))
        else:
            parts.append(str(i))
    return f"{name}[{', '.join(parts)}]" if parts else name
